"""Check the published sources' relative claims (data/claims.yaml) against observations.

An observation is one (cell, metric, device) with a summary (reprokit.analysis.stats). They come
from a run's cell results (`observations_from_cells`) or from the published numbers themselves
(`observations_from_published`, exact points: checking a prose claim against its own source's
tables). A claim is a set of pairs (A better than B); each pair gets one status, decided in this order:

  NO_CLAIM              (table orderings) the source's own two numbers differ by no more than the
                        source's tolerance: the table never claimed a difference; listed, not checked
  NOT_TESTABLE_HERE     a side was published on another device class than the one it was (or could
                        be) measured on here (GPU vs CPU, another GPU count); the publication hardware
                        comes from the published numbers of the side's cell, else the claim's text
  NOT_RUN               a side has no observation in this run (the reason names it)
  NOT_TESTABLE_STANDIN  a side was measured through a stand-in for the mechanism under test
  NOT_TESTABLE_SAMPLES  a compile-time side has fewer samples than the policy asks
                        (data/verdict_policy.yaml: compile_min_samples, with the cache state recorded)
  HOLDS                 the intervals are separated in the claimed direction and the median speed-up
                        is at least 1 + min_effect (policy); for ratio claims, the speed-up interval
                        lies inside the claimed range
  REVERSED              the same in the opposite direction
  DIFFERS               (ratio claims) not reversed, but the speed-up interval lies entirely outside
                        the claimed range
  INCONCLUSIVE          otherwise (intervals overlap, or the effect is smaller than min_effect)

A claim reports how many of its pairs got each status (`counts`), and one status: NO_CLAIM when no
pair claims anything, else the first of PRECEDENCE among its pairs, so a claim HOLDS only when every
pair that claims something holds.
Intervals: each measured side is the figure of the source's own definition where the cell records
one (reprokit.analysis.published_metric: mean over the published iterations, tokens / total seconds,
...; its interval a bootstrap over the iterations), else the median of the per-iteration samples
(reprokit.analysis.stats); each side keeps its `statistic`, interval method and coverage; a single
measured sample x becomes x * (1 +- point_margin); published values are exact points. The speed-up
interval of A over B is, when both sides are measured, the percentile interval of the ratio from a
hierarchical bootstrap (reprokit/analysis/bootstrap.py: processes, then iterations within them, resampled
on both sides; Kalibera & Jones 2013), stated as "A better than B by x % ± y %" with its levels, method
and coverage (`speedup_interval`); a pair with a side measured in one process is not decided (its
interval covers that process only). Against a published side (an exact point) or a single as-published
figure it is the outer bound [A_lo / B_hi, A_hi / B_lo] for rates (times and memory: B over A).
"""

from __future__ import annotations

from dataclasses import dataclass

from reprokit import kitdata
from reprokit.analysis import devices, flops, roofline, standins, stats, steady_state, verdicts
from reprokit.analysis import tolerance as tolerances
from reprokit.catalog import suites
from reprokit.reader.model import Machine, Run

HOLDS, REVERSED, DIFFERS, INCONCLUSIVE, NOT_RUN = "HOLDS", "REVERSED", "DIFFERS", "INCONCLUSIVE", "NOT_RUN"
NOT_TESTABLE_HERE, NOT_TESTABLE_STANDIN = "NOT_TESTABLE_HERE", "NOT_TESTABLE_STANDIN"
NOT_TESTABLE_SAMPLES, NO_CLAIM = "NOT_TESTABLE_SAMPLES", "NO_CLAIM"
PRECEDENCE = (REVERSED, DIFFERS, INCONCLUSIVE, NOT_TESTABLE_HERE, NOT_TESTABLE_STANDIN,
              NOT_TESTABLE_SAMPLES, NOT_RUN, HOLDS, NO_CLAIM)
DECIDED = (HOLDS, REVERSED, DIFFERS)
UNTESTABLE = (NOT_TESTABLE_HERE, NOT_TESTABLE_STANDIN, NOT_TESTABLE_SAMPLES)
MEANINGS = {
    HOLDS: "every pair that claims something is decided in the claimed direction",
    REVERSED: "some pair is decided in the opposite direction",
    DIFFERS: "the direction holds but the speed-up lies outside the claimed range",
    INCONCLUSIVE: "some pair's intervals overlap, or its effect is below the minimum effect size",
    NOT_TESTABLE_HERE: "some pair was published on another device class than this run's",
    NOT_TESTABLE_STANDIN: "some pair was measured through a stand-in for the mechanism under test",
    NOT_TESTABLE_SAMPLES: "some compile-time pair has too few samples per side",
    NOT_RUN: "some pair has no measurement in this run",
    NO_CLAIM: "the source's own numbers differ by no more than its tolerance: no difference was claimed",
}


def load_claims() -> dict:
    """The whole claims.yaml document (validated)."""
    return kitdata.load("claims")


# -- observations ----------------------------------------------------------------------------------
def observations_from_cells(run: Run) -> list[dict]:
    """One observation per metric of every measured cell result of a run (ok, or measured by the
    processes it finished: CellResult.measured)."""
    out = []
    rule = verdicts.load_policy().get("roofline_class")  # a policy may have none: class unknown
    for c in run.cell_results():
        if not c.measured:
            continue
        dev = devices.measured_device(c, run.machine)
        mech = [x["short"] for x in standins.mechanisms(c)]
        conf = stats.cell_confidence(run, c.cell_id)  # a sequential cell's: wider than 95 %
        for name, m in c.metrics.items():
            if not m.get("samples"):
                continue
            summ = verdicts.measured_summary(m, conf)[0]
            out.append(
                {
                    "cell_id": c.cell_id,
                    "metric": name,
                    "unit": m["unit"],
                    "device": dev["kind"],
                    "hw": dev["entry"],
                    "label": dev["label"],
                    "count": dev["count"],
                    "standins": mech,
                    "exact": False,
                    # the figure of the source's own definition where the cell records one (a claim
                    # compares what the source compared), else the median
                    "summary": summ,
                    "confidence": conf,
                    # what bounds the cell on its device (which ratios may carry across)
                    "roofline": (roofline.cell_class(c, name, m["unit"], summ["median"], dev, rule)
                                 if summ.get("median") else None),
                    "groups": _groups(m),
                    "states": m.get("states") or ([m["state"]] if m.get("state") else []),
                    "origin": "measured",
                    "units": devices.units(c),
                }
            )
    return out


def _groups(metric: dict) -> list[list[float]] | None:
    """What the ratio bootstrap resamples for a measured side: each process's steady samples when the
    side is the median of the per-iteration samples; each process's figure (one value per process) when
    it is the figure of the source's own definition from 2 or more processes; None otherwise (a single
    as-published figure: the outer bound of the two intervals is used)."""
    summ = verdicts.measured_summary(metric)[0]
    if summ.get("statistic") in ("as_published", "partial"):
        values = summ.get("process_values") or []
        return [[v] for v in values] if len(values) >= 2 else None
    ss = summ.get("steady_state")
    if ss is None:
        return steady_state.split_processes(metric.get("samples") or [], metric.get("processes"))
    kept = steady_state.of_metric(metric)
    return steady_state.split_processes(kept["samples"], kept["processes"])


def observations_from_published(numbers: list[dict]) -> list[dict]:
    """The published numbers as exact observations (transform.scale applied)."""
    out = []
    for n in numbers:
        value, unit, _ = verdicts.published_value(n)
        dev = devices.publication_device(n)
        summary = stats.summarize([value])
        out.append(
            {
                "cell_id": n["cell"],
                "metric": n["metric"],
                "unit": unit,
                "device": dev["kind"],
                "hw": dev["entry"],
                "label": dev["label"],
                "count": dev["count"],
                "device_info": dev,
                "standins": [],
                "exact": True,
                "summary": summary,
                "origin": f"published {n['id']}",
            }
        )
    return out


# -- sides -----------------------------------------------------------------------------------------
def _side(spec, claim: dict) -> dict:
    s = {"cell": spec} if isinstance(spec, str) else dict(spec)
    s.setdefault("metric", claim.get("metric"))
    if "device" not in s and "gpu" not in s and claim.get("device"):
        s["device"] = claim["device"]
    return s


def _side_label(s: dict) -> str:
    where = s.get("gpu") or s.get("device")
    return s.get("label") or (f"{s['cell']} [{where}]" if where else s["cell"])


def _find(s: dict, observations: list[dict]) -> tuple[dict | None, str | None]:
    cands = [o for o in observations if o["cell_id"] == s["cell"] and o["metric"] == s["metric"]]
    if s.get("device"):
        cands = [o for o in cands if o["device"] == s["device"]]
    if s.get("gpu"):
        hit = flops.find_gpu(s["gpu"])
        if hit is None:
            return None, f"GPU '{s['gpu']}' is not in peaks.yaml"
        cands = [o for o in cands if o["hw"] == hit["entry"]]
    if not cands:
        on = f" on {s.get('gpu') or s.get('device')}" if (s.get("gpu") or s.get("device")) else ""
        return None, f"no observation of {s['cell']} '{s['metric']}'{on}"
    return cands[0], None


def _interval(o: dict, point_margin: float) -> tuple[float, float]:
    summ = o["summary"]
    if o["exact"]:
        return summ["median"], summ["median"]
    if summ.get("ci_low") is None:
        x = summ["median"]
        return x * (1 - point_margin), x * (1 + point_margin)
    return summ["ci_low"], summ["ci_high"]


def _values(o: dict, unit: str, point_margin: float) -> tuple[float, float]:
    lo, hi = _interval(o, point_margin)
    return verdicts.convert(lo, o["unit"], unit), verdicts.convert(hi, o["unit"], unit)


def _describe(o: dict, lo: float, hi: float, unit: str) -> dict:
    return {
        "median": verdicts.convert(o["summary"]["median"], o["unit"], unit),
        "low": lo,
        "high": hi,
        "unit": unit,
        "n": o["summary"]["n"],
        "statistic": o["summary"].get("statistic", "median") if not o["exact"] else "published",
        "on": o["label"],
        "origin": o["origin"],
    }


# -- pairs -----------------------------------------------------------------------------------------
@dataclass
class _Ctx:
    """What every pair of one claim is checked against."""

    observations: list[dict]
    published: list[dict]  # observations_from_published of the claim's source
    point_margin: float
    tolerance: float  # the source's: a table gap within it is no claim
    policy: dict
    machine: Machine | None  # the run's (which GPUs its host has)


def _speedup(direction: str, b: tuple[float, float], w: tuple[float, float]) -> tuple[float, float]:
    """Speed-up interval of `better` over `worse` (> 1 means the claimed direction)."""
    if direction == "higher":
        return b[0] / w[1], b[1] / w[0]
    return w[0] / b[1], w[1] / b[0]


def _publication_side(s: dict, claim: dict, ctx: _Ctx) -> tuple[dict | None, dict]:
    """(published observation of a side or None, the device the side was published on): from the side's
    own published number when there is one, else from the side's `gpu` or the claim's `hardware` text
    (a CPU side looks its CPU up in cpus.yaml); a device of kind "unknown" when the data says nothing."""
    pub, _ = _find(s, ctx.published)
    if pub is not None:
        return pub, pub["device_info"]
    text = str(s.get("gpu") or claim.get("hardware") or "").strip()
    if not text:
        return None, {"kind": "unknown", "label": "hardware not stated", "count": None, "entry": None}
    if s.get("device") == "cpu" or text.lower().startswith("none"):
        label = text if text.lower().startswith("none") else f"none ({text})"
        return None, devices.publication_device({"environment": {"gpu": label}})
    return None, devices.publication_device({"environment": {"gpu": text.split(";")[0].strip()}})


def _published_gap(claim: dict, pb: dict | None, pw: dict | None) -> float | None:
    """Published speed-up of better over worse (None without both numbers or a common unit)."""
    if pb is None or pw is None:
        return None
    try:
        b = verdicts.convert(pb["summary"]["median"], pb["unit"], pb["unit"])
        w = verdicts.convert(pw["summary"]["median"], pw["unit"], pb["unit"])
    except ValueError:
        return None
    direction = verdicts.better_direction(pb["unit"])
    if direction is None or min(b, w) <= 0:
        return None
    return _speedup(direction, (b, b), (w, w))[0]


def _not_both_measured(ob: dict | None, ow: dict | None, devs: tuple[dict, dict], whys: tuple,
                       ctx: _Ctx) -> tuple[str, str] | None:
    """(status, reason) when a side was published on another device class than this run's, is not
    measured in this run, or was measured through a stand-in for the mechanism; else None."""
    for side_obs, dev in zip((ob, ow), devs):
        if side_obs is None:
            why = devices.host_mismatch(dev, ctx.machine) if dev["kind"] == "gpu" else None
        else:
            why = devices.class_mismatch(dev, {"kind": side_obs["device"], "label": side_obs["label"],
                                               "count": side_obs["count"]})
        if why:
            return NOT_TESTABLE_HERE, why
    if ob is None or ow is None:
        return NOT_RUN, "; ".join(w for w in whys if w)
    mech = ob["standins"] + ow["standins"]
    if mech:
        return NOT_TESTABLE_STANDIN, "measured through a stand-in: " + "; ".join(mech)
    return None


def _compile_samples_short(ob: dict, ow: dict, pol: dict) -> str | None:
    """Why a compile-time pair cannot be decided on these samples (too few, or mixed cache states)."""
    if ob["metric"] not in pol["compile_metrics"] and ow["metric"] not in pol["compile_metrics"]:
        return None
    need = int(pol["compile_min_samples"])
    have = min((o["summary"]["n"] for o in (ob, ow) if not o["exact"]), default=need)  # published: exact
    if have < need:
        return (f"{have} compile-time sample(s) on a side; a compile-time pair needs {need} "
                "per side with the compile cache state controlled")
    mixed = [o for o in (ob, ow) if len(set(o.get("states") or [])) > 1]
    if mixed:
        return (f"the compile cache state differs between the samples of {mixed[0]['cell_id']} "
                f"({', '.join(str(x) for x in mixed[0]['states'])}): each side needs one state")
    return None


def _decide(txt: str, s_lo: float, s_hi: float, s_med: float, claimed: tuple[float, float] | None,
            pol: dict) -> tuple[str, str]:
    """(status, reason) of a speed-up interval [s_lo, s_hi] with median s_med: against the claimed
    range, or, where the source claims none, against 1 and the minimum effect."""
    if claimed is None:
        effect = 1 + float(pol["min_effect"])
        if s_lo > 1 and s_med >= effect:
            return HOLDS, txt + f" (> 1, separated, and at least {effect:.3g})"
        if s_hi < 1 and s_med <= 1 / effect:
            return REVERSED, txt + f" (< 1, separated, and at most {1 / effect:.3g}: the opposite order)"
        if s_lo > 1 or s_hi < 1:
            return INCONCLUSIVE, (txt + " (separated, but the effect is below the minimum "
                                  f"{pol['min_effect']:.0%})")
        return INCONCLUSIVE, txt + " (contains 1: intervals overlap)"
    r_lo, r_hi = claimed
    rng = f"claimed [{r_lo:.3g}, {r_hi:.3g}]"
    if s_lo >= r_lo and s_hi <= r_hi:
        return HOLDS, f"{txt}, inside the {rng}"
    if r_lo >= 1 and s_hi < 1:
        return REVERSED, f"{txt}: the opposite direction ({rng})"
    if s_hi < r_lo or s_lo > r_hi:
        return DIFFERS, f"{txt}, entirely outside the {rng}"
    return INCONCLUSIVE, f"{txt} overlaps an edge of the {rng}"


def _pair(claim: dict, better: dict, worse: dict, ctx: _Ctx, claimed: tuple[float, float] | None) -> dict:
    res: dict = {"better": _side_label(better), "worse": _side_label(worse),
                 "better_cell": better["cell"], "worse_cell": worse["cell"]}
    pb, dev_b = _publication_side(better, claim, ctx)
    pw, dev_w = _publication_side(worse, claim, ctx)
    gap = _published_gap(claim, pb, pw)
    res["published_speedup"] = gap
    res["published_on"] = sorted({d.get("label") or "hardware not stated" for d in (dev_b, dev_w)})
    if claimed is None and gap is not None and abs(gap - 1) <= ctx.tolerance + 1e-9:  # 1.562 / 1.42 is 10 %
        res.update(status=NO_CLAIM, reason=f"the source's own numbers differ by {abs(gap - 1):.1%} "
                   f"(speed-up {gap:.3g}), within its ± {ctx.tolerance:.0%} tolerance: no difference claimed")
        return res
    ob, why_b = _find(better, ctx.observations)
    ow, why_w = _find(worse, ctx.observations)
    untestable = _not_both_measured(ob, ow, (dev_b, dev_w), (why_b, why_w), ctx)
    if untestable:
        res.update(status=untestable[0], reason=untestable[1])
        return res
    unit = ob["unit"]
    direction = verdicts.better_direction(unit)
    try:
        b_lo, b_hi = _values(ob, unit, ctx.point_margin)
        w_lo, w_hi = _values(ow, unit, ctx.point_margin)
    except ValueError as e:
        res.update(status=INCONCLUSIVE, reason=f"the two sides cannot be compared: {e}")
        return res
    res.update(better_value=_describe(ob, b_lo, b_hi, unit), worse_value=_describe(ow, w_lo, w_hi, unit))
    _roofline_classes(res, ob, ow, ctx.policy.get("roofline_class"))
    pol = ctx.policy["claims"]
    short = _compile_samples_short(ob, ow, pol)
    if short:
        res.update(status=NOT_TESTABLE_SAMPLES, reason=short)
        return res
    if direction is None:
        res.update(status=INCONCLUSIVE, reason=f"unit '{unit}' has no known better direction")
        return res
    if min(b_lo, w_lo) <= 0:
        res.update(status=INCONCLUSIVE, reason="a non-positive value cannot be compared")
        return res
    s_lo, s_hi = _speedup(direction, (b_lo, b_hi), (w_lo, w_hi))
    b_med = verdicts.convert(ob["summary"]["median"], ob["unit"], unit)
    w_med = verdicts.convert(ow["summary"]["median"], ow["unit"], unit)
    s_med = _speedup(direction, (b_med, b_med), (w_med, w_med))[0]
    boot = _ratio_bootstrap(ob, ow, direction, unit)
    if boot is not None:  # the ratio's own interval, every level resampled
        s_lo, s_hi = boot["low"], boot["high"]
    res["speedup"] = [s_lo, s_hi]
    res["speedup_median"] = s_med
    res["speedup_interval"] = _interval_kind(boot)
    res["effect_text"] = _effect_text(res["better"], res["worse"], s_med, s_lo, s_hi)
    txt = (f"speed-up of {res['better']} over {res['worse']} {s_med:.3g} in [{s_lo:.3g}, {s_hi:.3g}] "
           f"({res['speedup_interval']['label']}): {res['effect_text']}")
    one = [o["cell_id"] for o in (ob, ow) if not o["exact"] and (o["summary"].get("processes") or 1) < 2]
    if one and not (s_lo <= 1 <= s_hi):
        res.update(status=INCONCLUSIVE, reason=txt + f"; not decided: {one[0]} ran in one process, whose "
                   "interval covers that process only (a verdict needs 2 or more processes per cell)")
        return res
    res["status"], res["reason"] = _decide(txt, s_lo, s_hi, s_med, claimed, pol)
    res["reason"] += _units_note(ob, ow)
    return res


def _units_note(ob: dict, ow: dict) -> str:
    """A ratio of two cells measured on the same physical unit cancels the between-unit term (said once
    in docs/verdicts.md, nothing added here); on two different units (two Slurm nodes, two GPUs) it
    does not, and the reason says so with the term's size."""
    if ob["exact"] or ow["exact"] or ob.get("units") == ow.get("units"):
        return ""
    shown = [", ".join(u for u in o.get("units") or () if not u.startswith("GPU-")) or "its GPUs"
             for o in (ob, ow)]
    kinds = {o["device"] for o in (ob, ow)}
    term = tolerances.between_unit("cpu" if kinds == {"cpu"} else "gpu")
    return (f"; the two sides ran on different units ({shown[0]} / {shown[1]}): the ratio does not "
            f"cancel the between-unit term (± {100 * term.value:.3g} % between units of one model"
            f"{'' if term.verified else ', unverified'})")


def _roofline_classes(res: dict, ob: dict, ow: dict, rule: dict | None) -> None:
    """Each measured side's roofline class, and whether the pair's ratio is expected to carry to
    another device (reprokit/analysis/roofline.py); a published side has none."""
    if ob["exact"] or ow["exact"]:
        return
    cb, cw = (o.get("roofline") or {"class": roofline.UNKNOWN, "why": "not computed"} for o in (ob, ow))
    res["better_class"], res["worse_class"] = cb, cw
    res["carries"], res["carries_why"] = roofline.ratio_carries(cb["class"], cw["class"], rule)


def pair_untestable(claim: dict, observations: list[dict], published: list[dict], machine: Machine | None,
                    tolerance: float) -> list[tuple[dict, dict, str | None, str | None]]:
    """(better side, worse side, status, why) of each pair of `claim` as far as `_pair` decides it
    before any value: NO_CLAIM, NOT_TESTABLE_HERE or NOT_RUN with the reason, or (None, None) when the
    values would decide it. `observations` need only the sides' cell, metric and device (a plan's
    prospective observations: reprokit/analysis/decidability.py)."""
    own = [n for n in published if n["provenance"]["source"] == claim["source"]]
    ctx = _Ctx(observations, observations_from_published(own), 0.0, tolerance, verdicts.load_policy(),
               machine)
    claimed = _claimed_range(claim, tolerance)
    out = []
    for better, worse in _pairs_of(claim):
        pb, dev_b = _publication_side(better, claim, ctx)
        pw, dev_w = _publication_side(worse, claim, ctx)
        gap = _published_gap(claim, pb, pw)
        if claimed is None and gap is not None and abs(gap - 1) <= ctx.tolerance + 1e-9:
            out.append((better, worse, NO_CLAIM, f"the source's own numbers differ by {abs(gap - 1):.1%}"))
            continue
        ob, why_b = _find(better, observations)
        ow, why_w = _find(worse, observations)
        untestable = _not_both_measured(ob, ow, (dev_b, dev_w), (why_b, why_w), ctx)
        out.append((better, worse, *(untestable or (None, None))))
    return out


def _ratio_bootstrap(ob: dict, ow: dict, direction: str, unit: str) -> dict | None:
    """The hierarchical bootstrap interval of the speed-up (reprokit/analysis/bootstrap.py) when both
    sides are measured and resamplable in a common unit; None otherwise (a published side, a single
    as-published figure)."""
    from reprokit.analysis import bootstrap

    gb, gw = ob.get("groups"), ow.get("groups")
    if ob["exact"] or ow["exact"] or not gb or not gw:
        return None
    if sum(len(g) for g in gb) < 2 or sum(len(g) for g in gw) < 2:
        return None
    try:
        fb = verdicts.convert(1.0, ob["unit"], unit)
        fw = verdicts.convert(1.0, ow["unit"], unit)
    except ValueError:
        return None
    b = [[x * fb for x in g] for g in gb]
    w = [[x * fw for x in g] for g in gw]
    conf = min(o.get("confidence") or stats.DEFAULT_CONFIDENCE for o in (ob, ow))  # the wider of the two
    return bootstrap.ratio_interval(*((b, w) if direction == "higher" else (w, b)), confidence=conf)


def _interval_kind(boot: dict | None) -> dict:
    """How a speed-up interval was made: its levels, method and coverage, and a label."""
    if boot is None:
        return {"method": "outer_bound", "levels": None, "coverage": None,
                "label": "outer bound of the two sides' intervals"}
    levels = boot["levels"]
    where = ("processes and iterations resampled" if len(levels) == 2
             else "iterations resampled: a side ran in one process, so it covers that process only")
    return {"method": boot["method"], "levels": levels, "coverage": boot["confidence"],
            "label": f"{100 * boot['confidence']:.4g} % hierarchical bootstrap, {where}"}


def _effect_text(better: str, worse: str, s_med: float, s_lo: float, s_hi: float) -> str:
    """'A faster than B by x % ± y %' (the half-width of the speed-up interval, in points of x)."""
    x = 100 * (s_med - 1)
    y = 100 * (s_hi - s_lo) / 2
    if x >= 0:
        return f"{better} better than {worse} by {x:.3g} % ± {y:.2g} %"
    return f"{better} worse than {worse} by {-x:.3g} % ± {y:.2g} %"


def _pairs_of(claim: dict) -> list[tuple[dict, dict]]:
    kind = claim["kind"]
    if kind == "order":
        sides = [_side(s, claim) for s in claim["order"]]
        return list(zip(sides, sides[1:]))
    if kind == "fastest":
        target = _side(claim["target"], claim)
        return [(target, _side(o, claim)) for o in claim["others"]]
    if "pairs" in claim:
        return [(_side(p["better"], claim), _side(p["worse"], claim)) for p in claim["pairs"]]
    return [(_side(claim["better"], claim), _side(claim["worse"], claim))]


def sides(claim: dict) -> list[dict]:
    """Every side the claim compares ({"cell", "metric", "device"...}), each once, in claim order."""
    out: list[dict] = []
    for pair in _pairs_of(claim):
        out += [s for s in pair if s not in out]
    return out


def _claimed_range(claim: dict, default_tol: float) -> tuple[float, float] | None:
    if claim["kind"] != "ratio":
        return None
    if "range" in claim:
        lo, hi = claim["range"]
        return float(lo), float(hi)
    tol = float(claim.get("tolerance", default_tol))
    return claim["ratio"] * (1 - tol), claim["ratio"] * (1 + tol)


def _words(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {s.lower().replace('_', ' ')}" for s, n in counts.items())


def check_claim(
    claim: dict,
    observations: list[dict],
    default_tolerance: float = 0.10,
    point_margin: float = 0.10,
    published: list[dict] | None = None,
    machine: Machine | None = None,
    source_tolerance: float | None = None,
) -> dict:
    """Status of one claim against the observations (see the module docstring).

    `published` are the published numbers of the claim's source (default: loaded from the data), used
    for each side's publication hardware and for the no-claim rule; `machine` is the run's (which
    GPUs the host has). Returns {"id", "source", "kind", "origin", "text", "reference", "hardware",
    "interpretation", "defects", "metric", "claimed_range", "status", "reason", "counts", "pairs":
    [{"better", "worse", "status", "reason", "speedup", "speedup_median", "published_speedup",
    "better_value", "worse_value"}], "checked_on"}.
    """
    if published is None:
        published = suites.load_published(claim["source"])
    own = [n for n in published if n["provenance"]["source"] == claim["source"]]
    pub_obs = observations_from_published(own)
    tol = default_tolerance if source_tolerance is None else source_tolerance
    ctx = _Ctx(observations, pub_obs, point_margin, tol, verdicts.load_policy(), machine)
    claimed = _claimed_range(claim, default_tolerance)
    pairs = [_pair(claim, b, w, ctx, claimed) for b, w in _pairs_of(claim)]
    statuses = [p["status"] for p in pairs]
    status = next(s for s in PRECEDENCE if s in statuses)
    counts = {s: statuses.count(s) for s in PRECEDENCE if s in statuses}
    if len(pairs) == 1:
        reason = pairs[0]["reason"]
    else:
        first = next(p for p in pairs if p["status"] == status)
        reason = f"{len(pairs)} comparisons: {_words(counts)}; e.g. {first['reason']}"
    checked_on = sorted({v["on"] for p in pairs for v in (p.get("better_value"), p.get("worse_value")) if v})
    return {
        "id": claim["id"],
        "source": claim["source"],
        "kind": claim["kind"],
        "origin": claim["origin"],
        "text": claim["text"],
        "reference": claim["reference"],
        "hardware": claim.get("hardware"),
        "interpretation": claim.get("interpretation"),
        "defects": claim.get("defects", []),
        "metric": claim.get("metric"),
        "claimed_range": list(claimed) if claimed else None,
        "status": status,
        "reason": reason,
        "counts": counts,
        "pairs": pairs,
        "checked_on": checked_on,
    }


def check_claims(
    observations: list[dict],
    sources: list[str] | None = None,
    claims: dict | None = None,
    published: list[dict] | None = None,
    machine: Machine | None = None,
) -> list[dict]:
    """check_claim for every claim (of the given sources only, when given)."""
    doc = claims or load_claims()
    tol, margin = doc.get("default_tolerance", 0.10), doc.get("point_margin", 0.10)
    all_sources = suites.load_sources()
    out = []
    for c in doc["claims"]:
        if sources is not None and c["source"] not in sources:
            continue
        pub = published if published is not None else suites.load_published(c["source"])
        src_tol = all_sources.get(c["source"], {}).get("tolerance", tol)
        out.append(check_claim(c, observations, tol, margin, pub, machine, src_tol))
    return out


def ratio_text(pair: dict) -> str:
    """A measured pair's speed-up as '1.14x [1.07, 1.24]' (median and interval)."""
    lo, hi = pair["speedup"]
    return f"{pair['speedup_median']:.3g}x [{lo:.3g}, {hi:.3g}]"


def ratio_rows(results: list[dict]) -> list[dict]:
    """One row per claim pair with a measured speed-up: the ratio here with its
    interval, the published ratio and the device it was published on, the claimed range, the pair's
    status, each side's roofline class and whether the ratio is expected to carry to another device."""
    rows = []
    for c in results:
        rng = c.get("claimed_range")
        for p in c["pairs"]:
            if "speedup" not in p:
                continue
            classes = [p.get(k) or {} for k in ("better_class", "worse_class")]
            rows.append({
                "claim": c["id"], "source": c["source"], "status": p["status"], "claim_status": c["status"],
                "better": p["better"], "worse": p["worse"],
                "here": ratio_text(p),
                "interval": p["speedup_interval"]["label"],
                "published": (f"{p['published_speedup']:.3g}x" if p.get("published_speedup") is not None
                              else "not published as two numbers"),
                "published_on": ", ".join(p.get("published_on") or []) or "hardware not stated",
                "claimed": f"[{rng[0]:.3g}, {rng[1]:.3g}]" if rng else "direction only",
                "classes": [f"{k.get('class', 'unknown')} ({k.get('why', 'not computed')})" for k in classes],
                "carries": p.get("carries") or "no expectation",
                "carries_why": p.get("carries_why") or "",
            })
    return rows
