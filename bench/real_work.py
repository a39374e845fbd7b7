"""A check that the timed steps did the work (MLPerf's TEST01 idea), for bench/harness.py.

A workload passes `real_work=Check(...)` to `ctx.measure`:

* `state()`: a digest (one float) of the model's weights, taken after the warm-up and after the
  timed steps. Over timed training steps it must change: a step that skips its backward pass, its
  update or the model altogether leaves it as it was. `state()` may instead return a dict of
  digests by part of the model ({"embedding": .., "rnn": .., "head": ..}): each part must move, so a
  step that trains only the head is caught. `still={part: defect id}` names the parts a published
  defect keeps from training (d003-jit-broken: the published JIT stack never trains its LSTM): such a
  part that stays still passes, recorded as the defect seen by running; one that moves fails (the
  cell no longer has the published defect).
* `output(result)`: a digest of what the last timed step returned, and `reference()`: the same
  computation done once more, untimed, after the timing. They must agree within `rel_tol` (+ `abs_tol`):
  a step whose result is wrong, not finite, or not the computation the metric names disagrees (a
  result cached from the same input would agree: the training check is the one that sees skipped work).

Each check is recorded with the metric (`real_work`: phase, checks with their digests, ok, reason);
a failed one fails the cell with the reason. A digest that is not finite fails too.

Python 3.5 syntax (2.7 where the old stacks need it); standard library only.
"""
import math


class RealWorkFailed(RuntimeError):
    """The timed steps did not do the work their metric claims."""


def _finite(x):
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    return not (math.isnan(float(x)) or math.isinf(float(x)))  # math.isfinite is not in 2.7


def _json(x):
    return float(x) if _finite(x) else None


class Check(object):
    Failed = RealWorkFailed

    def __init__(self, phase, state=None, output=None, reference=None, rel_tol=1e-3, abs_tol=1e-6,
                 still=None):
        if phase not in ("train", "forward"):
            raise ValueError("real-work phase must be train or forward, not %r" % (phase,))
        if state is None and output is None:
            raise ValueError("a real-work check needs state() or output() and reference()")
        if (output is None) != (reference is None):
            raise ValueError("output() and reference() go together")
        self.phase, self.state, self.output, self.reference = phase, state, output, reference
        self.rel_tol, self.abs_tol = rel_tol, abs_tol
        self.still = dict(still or {})

    def _state(self):
        got = self.state()
        if isinstance(got, dict):
            return dict((str(k), float(v)) for k, v in got.items())
        return float(got)

    def before(self):
        return self._state() if self.state is not None else None

    def _moved(self, before, after, reasons):
        """One check per part of the weights (one part when state() returns a float)."""
        if not isinstance(after, dict):
            before, after, single = {"weights": before}, {"weights": after}, True
        else:
            before, single = before if isinstance(before, dict) else {}, False
        unknown = sorted(set(self.still) - set(after))
        if unknown:
            raise ValueError("still= names parts the state has not: %s" % ", ".join(unknown))
        checks = []
        for part in sorted(after):
            b, a = before.get(part), after[part]
            moved = _finite(b) and _finite(a) and a != b
            defect = self.still.get(part)
            what = ("weights digest before and after the timed steps" if single else
                    "digest of the %s weights before and after the timed steps" % part)
            check = {"what": what, "part": part, "before": _json(b), "after": _json(a)}
            if defect is None:
                check["ok"] = moved
                name = "weights" if single else part + " weights"
                if not moved and _finite(b) and not _finite(a):
                    reasons.append("the %s became non-finite over the timed %s steps (digest %r before, "
                                   "%r after): the training diverged, so the steps timed were not the "
                                   "published work" % (name, self.phase, b, a))
                elif not moved:
                    reasons.append("the %s did not change over the timed %s steps (digest %r before, "
                                   "%r after): no update was applied" % (name, self.phase, b, a))
            else:
                still = _finite(b) and _finite(a) and a == b
                check.update(ok=still, expected_still=defect)
                if still:
                    check["seen"] = ("did not change, as published defect %s says: the defect seen by "
                                     "running" % defect)
                else:
                    reasons.append("the %s weights changed over the timed %s steps although published "
                                   "defect %s keeps them still: this cell is not the published "
                                   "configuration" % (part, self.phase, defect))
            checks.append(check)
        return checks

    def check(self, before, last_result):
        checks, reasons = [], []
        if self.state is not None:
            checks.extend(self._moved(before, self._state(), reasons))
        if self.output is not None:
            got = float(self.output(last_result)) if last_result is not None else None
            ref = float(self.reference())
            ok = (_finite(got) and _finite(ref)
                  and abs(got - ref) <= self.abs_tol + self.rel_tol * abs(ref))
            checks.append({"what": "digest of the last timed step's output against the same step run "
                                   "untimed after the timing", "timed": _json(got), "reference": _json(ref),
                           "rel_tol": self.rel_tol, "ok": ok})
            if not ok:
                reasons.append("the last timed step's output digest %r differs from the untimed "
                               "reference %r (tolerance %g relative)" % (got, ref, self.rel_tol))
        return {"phase": self.phase, "checks": checks, "ok": not reasons,
                "reason": "; ".join(reasons) if reasons else None}
