"""Timed sampling loops for workloads.

Runs inside old stacks: Python 3.5 syntax (2.7-compatible), standard library only.
A sample is one iteration of a workload step (one batch), timed on its own, so every
published figure can be traced to raw per-iteration seconds.
"""
import time

clock = getattr(time, "perf_counter", time.time)


class Budget(object):
    """How many iterations to time: at least min_samples, then until time_budget_s is spent,
    never more than max_samples. `published_count` (protocol "published") replaces all of that
    with the original benchmark's fixed iteration count."""

    def __init__(self, min_samples=5, max_samples=1000, time_budget_s=20.0, warmup=0,
                 published_count=None):
        self.min_samples = int(min_samples)
        self.max_samples = int(max_samples)
        self.time_budget_s = float(time_budget_s)
        self.warmup = int(warmup)
        self.published_count = published_count

    @classmethod
    def from_dict(cls, d, published_count=None):
        d = d or {}
        return cls(d.get("min_samples", 5), d.get("max_samples", 1000),
                   d.get("time_budget_s", 20.0), d.get("warmup", 0), published_count)


def _once(step, sync, after):
    t0 = clock()
    out = step()
    if sync is not None:
        sync()
    dt = clock() - t0
    if after is not None:
        after(out)
    return dt


def sample(step, budget, sync=None, should_stop=None, after=None):
    """Time `step()` repeatedly. `sync` (optional) runs inside the timer after each step;
    `after(step_result)` (optional) runs after the timer stops, e.g. to read a loss to the host
    outside the timed region as an original benchmark did.

    `should_stop(raw_seconds)` lets a caller stop early once enough samples are taken (for
    example when a confidence interval is narrow enough); it is only asked after min_samples.
    Returns {"raw_seconds", "warmup_seconds", "stop_reason"}.
    """
    warm = [_once(step, sync, after) for _ in range(budget.warmup)]
    raw = []
    start = clock()
    if budget.published_count is not None:
        for _ in range(int(budget.published_count)):
            raw.append(_once(step, sync, after))
        return {"raw_seconds": raw, "warmup_seconds": warm, "stop_reason": "published_count"}
    while True:
        raw.append(_once(step, sync, after))
        n = len(raw)
        if n >= budget.max_samples:
            reason = "max_samples"
            break
        if n >= budget.min_samples:
            if should_stop is not None and should_stop(raw):
                reason = "precision_reached"
                break
            if clock() - start >= budget.time_budget_s:
                reason = "time_budget"
                break
    return {"raw_seconds": raw, "warmup_seconds": warm, "stop_reason": reason}


def derive(raw_seconds, kind, items):
    """Turn raw seconds into metric values.

    kind: "ms_per_item" (ms per example), "items_per_s" (words/s, seq/s), "s" or "ms".
    Returns (values, derivation text).
    """
    if kind == "ms_per_item":
        return [1000.0 * s / items for s in raw_seconds], "1000 * seconds / %s" % items
    if kind == "items_per_s":
        return [items / s for s in raw_seconds], "%s / seconds" % items
    if kind == "s":
        return list(raw_seconds), "seconds"
    if kind == "ms":
        return [1000.0 * s for s in raw_seconds], "1000 * seconds"
    raise ValueError("unknown metric kind %r" % kind)
