"""One verdict per published number: can this run test it, and if so, does it hold?

Pure functions: a published number (reprokit.catalog.suites.load_published), the cell result that measured
it (or None), the run record (host fingerprint) in; a verdict dict out. The checks run in this order,
and the first that applies decides:

  IMPLAUSIBLE           the published number alone is faster than physically possible on its own
                        device (reprokit.analysis.roofline: FLOP and bytes lower bounds against the
                        device's fp32 peak and memory bandwidth). It gets no other verdict and is
                        counted under no other; the measurement, if any, is shown as context.
  NOT_TESTABLE_HERE     the run's device is of another class than the publication's (CPU vs GPU,
                        another GPU count), or the host lacks the GPUs the number needs. Efficiency on
                        another class is shown as context, never as a verdict.
  NOT_RUN               no measurement of the number's cell and metric (the reason says why).
  NOT_TESTABLE_STANDIN  the cell measured through a stand-in for the mechanism the number is about
                        (reprokit.analysis.standins: cuDNN LSTM -> a CPU LSTM, Theano's compiled scan ->
                        its Python loop, Keras-MXNet -> MXNet Gluon).
  same device model (and GPU count): the measured median's interval against published x (1 +- the
  number's tolerance: its rounding + the between-unit term + what the source states, each sourced;
  reprokit/analysis/tolerance.py):
    REPRODUCED          the interval lies inside the band
    DEVIATES_FASTER / DEVIATES_SLOWER   the interval lies entirely on the faster / slower side
                        (a time below / a rate above the band is faster)
    DEVIATES_HIGHER / DEVIATES_LOWER    the same for metrics that are not speeds (memory)
    INCONCLUSIVE        the interval overlaps an edge of the band
    (`comparison` "same_hardware", or "same_hardware_other_stack" when another framework release or
    API ran; the reason names them)
  same device class, another model: efficiencies (achieved FLOP/s / theoretical peak of each device,
  of the precision that ran: fp32 CUDA-core or TF32 tensor, reprokit.analysis.devices.peak_for) within
  the policy's efficiency tolerance (data/verdict_policy.yaml), when the policy allows a verdict: the
  precision matches the publication's (fp32) and the two peaks are within `max_peak_ratio` of each
  other. Otherwise the efficiencies are shown as context under NOT_COMPARABLE, labelled
  EFFICIENCY_CONTEXT (or PRECISION_UNKNOWN when the precision that ran is not known):
    EFFICIENCY_SIMILAR  the measured efficiency interval lies inside published efficiency +- tolerance
    EFFICIENCY_HIGHER   this run reached a larger fraction of its device's peak than the publication
                        reached of its device's (entirely above the band)
    EFFICIENCY_LOWER    a smaller fraction (entirely below the band)
    INCONCLUSIVE        the interval overlaps an edge of the band
  NOT_COMPARABLE        the same class, but no FLOP model for the metric, no peak for a device, or
                        units that cannot be converted; or efficiency that the policy keeps as context
                        (labels above).

ABOVE_PEAK (a label, never a verdict): the measurement's achieved rate, counted with the roofline's
lower bound of the work, exceeds the highest peak its device has: the timing cannot be right (most
likely an unsynchronised loop on a GPU). Such a measurement gets NOT_COMPARABLE in its class (labelled
ABOVE_PEAK), whatever the device model.

Independently of the verdict, `tier` is the roofline tier of the published number (PLAUSIBLE,
SUSPICIOUS, IMPLAUSIBLE, or None without a FLOP model); SUSPICIOUS is added to `labels`.

Unit conversion for the whole report lives in `reprokit.catalog.units.convert`; a published number is put
into the measured metric's unit by `published_value` (transform.scale first, then `convert`).
"""

from __future__ import annotations

import re

from reprokit import kitdata
from reprokit.analysis import defects, devices, flops, published_metric, roofline, run_level, standins, stats
from reprokit.analysis import tolerance as tolerances
from reprokit.catalog import units
from reprokit.probes import jit_cache
from reprokit.reader.model import CellEntry, Machine, Run
from reprokit.reader.result import CellResult

REPRODUCED = "REPRODUCED"
DEVIATES_FASTER = "DEVIATES_FASTER"
DEVIATES_SLOWER = "DEVIATES_SLOWER"
DEVIATES_HIGHER = "DEVIATES_HIGHER"
DEVIATES_LOWER = "DEVIATES_LOWER"
INCONCLUSIVE = "INCONCLUSIVE"
EFFICIENCY_SIMILAR = "EFFICIENCY_SIMILAR"
EFFICIENCY_HIGHER = "EFFICIENCY_HIGHER"
EFFICIENCY_LOWER = "EFFICIENCY_LOWER"
NOT_COMPARABLE = "NOT_COMPARABLE"
NOT_RUN = "NOT_RUN"
NOT_TESTABLE_HERE = "NOT_TESTABLE_HERE"
NOT_TESTABLE_STANDIN = "NOT_TESTABLE_STANDIN"
IMPLAUSIBLE = "IMPLAUSIBLE"
SUSPICIOUS = "SUSPICIOUS"
# Labels beside a verdict, with what they mean (the report prints them).
EFFICIENCY_CONTEXT = "EFFICIENCY_CONTEXT"
PRECISION_UNKNOWN = "PRECISION_UNKNOWN"
ABOVE_PEAK = "ABOVE_PEAK"
EXPLAINED, UNEXPLAINED = defects.EXPLAINED, defects.UNEXPLAINED  # labels of reprokit/analysis/defects.py
LABEL_MEANINGS = {
    EFFICIENCY_CONTEXT: "efficiency shown as context, not a verdict: the precision that ran is not the "
    "publication's, or the two devices' peaks are further apart than the policy's max_peak_ratio "
    "(data/verdict_policy.yaml)",
    PRECISION_UNKNOWN: "the cell did not record the precision it ran in (TF32 or fp32): no efficiency",
    ABOVE_PEAK: "the measurement's achieved FLOP/s exceeds its device's peak: the timing cannot be right "
    "(unsynchronised?); never a verdict",
    EXPLAINED: "an IMPLAUSIBLE published number that a defect of its source, reproduced here, can account "
    "for: its inflation here, scaled by the two devices' bounds, reaches what the number needs "
    "(reprokit/analysis/defects.py, with the arithmetic)",
    UNEXPLAINED: "an IMPLAUSIBLE published number that its source's reproducible defect cannot account for "
    "alone: another cause must add the rest",
}
VERDICTS = (
    REPRODUCED,
    DEVIATES_FASTER,
    DEVIATES_SLOWER,
    DEVIATES_HIGHER,
    DEVIATES_LOWER,
    INCONCLUSIVE,
    EFFICIENCY_SIMILAR,
    EFFICIENCY_HIGHER,
    EFFICIENCY_LOWER,
    NOT_COMPARABLE,
    NOT_RUN,
    NOT_TESTABLE_HERE,
    NOT_TESTABLE_STANDIN,
    IMPLAUSIBLE,
)
# What each verdict means, in words (the report prints these once).
MEANINGS = {
    REPRODUCED: "same device model: the measured interval lies inside published ± tolerance",
    DEVIATES_FASTER: "same device model: measured entirely faster than published ± tolerance",
    DEVIATES_SLOWER: "same device model: measured entirely slower than published ± tolerance",
    DEVIATES_HIGHER: "same device model: measured entirely above published ± tolerance",
    DEVIATES_LOWER: "same device model: measured entirely below published ± tolerance",
    INCONCLUSIVE: "the measured interval overlaps an edge of the band, or too few samples for an interval",
    EFFICIENCY_SIMILAR: "same device class, other model: the same fraction of each device's peak "
    "(± tolerance)",
    EFFICIENCY_HIGHER: "same device class, other model: this run reached a larger fraction of its device's "
    "peak than the publication reached of its device's",
    EFFICIENCY_LOWER: "same device class, other model: this run reached a smaller fraction of its "
    "device's peak",
    NOT_COMPARABLE: "same device class, but no FLOP model, peak or common unit, or an efficiency the "
    "policy keeps as context (peaks too far apart, another or unknown precision) or a measurement above "
    "its device's peak",
    NOT_RUN: "no measurement in this run",
    NOT_TESTABLE_HERE: "published on another device class (GPU vs CPU, another GPU count): no verdict here",
    NOT_TESTABLE_STANDIN: "measured through a stand-in for the mechanism the number is about: no verdict",
    IMPLAUSIBLE: "the published number is faster than physically possible on its own device",
}


def load_policy() -> dict:
    """data/verdict_policy.yaml (validated): efficiency tolerance, claim thresholds, with reasons."""
    return kitdata.load("verdict_policy")


# -- units: one table for the whole code base (reprokit/catalog/units.py) ---------------------------------
convert = units.convert
better_direction = units.better_direction
is_speed = units.is_speed


def published_value(number: dict, to_unit: str | None = None) -> tuple[float, str, str]:
    """(value, unit, how) of a published number in `to_unit` (default: its own unit).

    transform.scale is applied first: a value published as 50 x the metric (elapsed time of 50
    batches) is divided by 50; then the unit is converted with `convert`.
    """
    scale = float(number.get("transform", {}).get("scale", 1))
    value, unit = float(number["value"]) / scale, number["unit"]
    how = [f"{number['value']:g} {unit}"]
    if scale != 1:
        how.append(f"/ {scale:g} (transform.scale)")
    if to_unit and to_unit != unit:
        value = convert(value, unit, to_unit)
        how.append(f"-> {value:.6g} {to_unit}")
        unit = to_unit
    return value, unit, " ".join(how)


# -- stack ---------------------------------------------------------------------------------------
def _version_equal(a: str | None, b: str | None) -> bool:
    """'1.2.1' == '1.2.1+cpu'; '8.0' matches '8.0.44' (compare the common numeric prefix)."""
    if not a or not b:
        return False
    pa, pb = re.findall(r"\d+", a.split("+")[0]), re.findall(r"\d+", b.split("+")[0])
    n = min(len(pa), len(pb))
    return n > 0 and pa[:n] == pb[:n]


def stack_match(number: dict, cell: CellResult) -> dict:
    """Whether the cell ran the published stack: same framework version and no substitutes."""
    env = number["environment"]
    impl = cell.implementation
    subs = impl.substitutes
    pub = f"{env.get('framework', '?')} {env.get('framework_version', '?')}"
    meas = f"{impl.doc.get('framework', '?')} {impl.doc.get('framework_version', '?')}"
    same = not subs and _version_equal(env.get("framework_version"), impl.framework_version)
    return {
        "same": same,
        "published": pub,
        "measured": meas,
        "substitutes": [f"{s.get('used')} instead of {s.get('original')}" for s in subs],
    }


# -- band rule -------------------------------------------------------------------------------------
def band_position(lo: float, hi: float, band_lo: float, band_hi: float) -> str:
    """'inside', 'above', 'below' or 'overlap' of the interval [lo, hi] against [band_lo, band_hi]."""
    if lo >= band_lo and hi <= band_hi:
        return "inside"
    if lo > band_hi:
        return "above"
    if hi < band_lo:
        return "below"
    return "overlap"


def _pct(x: float) -> str:
    return f"{100 * x:,.0f}%" if abs(x) >= 1 else f"{100 * x:.3g}%"


def _rate(tflops: float) -> str:
    return f"{tflops:.3g} TFLOP/s" if tflops >= 1 else f"{1000 * tflops:.3g} GFLOP/s"


# -- the verdict -----------------------------------------------------------------------------------
def _not_run_reason(number: dict, cell: CellResult | None, entry: CellEntry | None) -> str | None:
    metric = number["metric"]
    if cell is None:
        if number["cell"] is None:
            return "no cell of the kit reproduces this number"
        if entry is None:
            return f"cell {number['cell']} is not part of this run"
        return f"cell {number['cell']} {entry.status}: {entry.reason or 'no result file'}"
    if not cell.measured:
        return f"cell {cell.cell_id} {cell.status}: {cell.reason or 'no reason given'}"
    m = cell.metric(metric)
    if not m or not m.get("samples"):
        return f"cell {cell.cell_id} produced no '{metric}' samples"
    return None


def measured_summary(metric: dict, confidence: float = stats.DEFAULT_CONFIDENCE) -> tuple[dict, dict]:
    """(summary, basis) of what a published number is compared with: the figure computed as the source
    defined it (reprokit.analysis.published_metric, its interval from the per-iteration samples) when
    the metric records one, else the median of the per-iteration samples. `basis` says which:
    {"statistic": "as_published" | "partial" | "median", "label", "definition", "text"}."""
    same = published_metric.summary(metric, confidence)
    if same is None:
        return stats.summarize_metric(metric, confidence=confidence), {
            "statistic": "median", "definition": None, "text": None,
            "label": "median of the per-iteration samples (this result records no figure of the "
                     "source's own definition)"}
    return same, {"statistic": "as_published" if same["complete"] else "partial",
                  "definition": same["definition"], "text": same["text"], "label": same["label"]}


def _what(summ: dict) -> str:
    """What a summary's central value is, for a reason text."""
    if summ.get("statistic") == "as_published":
        kind = "figure as published" if summ["complete"] else "partial estimate of the published figure"
        return f"the {kind} ({summ['definition']})"
    return "the median"


def _base(number: dict, tol: tolerances.Tolerance) -> dict:
    env = number["environment"]
    return {
        "number_id": number["id"],
        "source": number["provenance"]["source"],
        "cell_id": number["cell"],
        "metric": number["metric"],
        "metric_as_published": number.get("metric_as_published", number["metric"]),
        "published": {
            "value": number["value"],
            "unit": number["unit"],
            "scale": number.get("transform", {}).get("scale", 1),
            "gpu": env.get("gpu"),
            "environment": env,
        },
        "tolerance": tol.value,
        "tolerance_terms": tol.docs(),
        "tolerance_text": tol.text(),
        "defects": list(number.get("defects") or []),
        "roofline": None,
        "tier": None,
        "measured": None,
        "band": None,
        "ratio": None,
        "efficiency": None,
        "efficiency_is_context": False,
        "cause": None,  # a NOT_COMPARABLE verdict: the kind of its reason, for a count of numbers
        "hardware": None,
        "stack": None,
        "standins": [],
        "comparison": None,
        "basis": None,
    }


def _finish(v: dict, verdict: str, reason: str, labels: list[str] | None = None) -> dict:
    v["verdict"], v["reason"] = verdict, reason
    v["labels"] = [verdict] + ([SUSPICIOUS] if v["tier"] == SUSPICIOUS and verdict != IMPLAUSIBLE else [])
    v["labels"] += [x for x in labels or [] if x not in v["labels"]]
    return v


def too_few_samples(metric: str, summ: dict) -> str | None:
    """Why a measurement has too few samples for any verdict (None when it has enough): a single sample
    has no interval; a compile time needs the policy's compile_min_samples (one per process)."""
    pol = load_policy()["claims"]
    need = int(pol["compile_min_samples"]) if metric in pol["compile_metrics"] else 2
    if summ["n"] >= need:
        return None
    what = "a compile time is measured once per process" if metric in pol["compile_metrics"] else \
        "a single sample has no interval"
    return (f"{summ['n']} sample{'s' if summ['n'] != 1 else ''} of {metric}: {what}; a verdict needs {need} "
            f"(run with --repeat {need})")


def no_steady_state(summ: dict) -> str | None:
    """Why a measurement gets no verdict because a process of it never reached a steady state
    (reprokit/analysis/steady_state.py; Barrett et al. 2017: such a benchmark gets no number); None
    otherwise. A figure of the source's own definition (as_published) is computed over the whole loop as
    the source did, so it is not refused; its row shows the detection's note."""
    ss = summ.get("steady_state")  # a figure as the source defined it counts its loop as it ran
    if not ss or not ss.get("no_steady_state"):
        return None
    why = next(p["reason"] for p in ss["per_process"] if p["class"] == "no_steady_state")
    k = len(ss["classes"])
    return (f"{ss['no_steady_state']} of {k} process{'es' if k > 1 else ''} reached no steady state "
            f"({why}): no verdict on a measurement that never settled")


def cold_compile(metric: str, cell: CellResult) -> str | None:
    """Why a GPU cell's compile time gets no verdict: its CUDA JIT cache shows the driver compiled PTX
    while it ran, or cannot show it (reprokit/probes/jit_cache.py), so the time may hold the PTX JIT. None
    for other metrics, CPU cells and a cache that shows no JIT (warm, or empty at both ends)."""
    if metric not in load_policy()["claims"]["compile_metrics"]:
        return None
    state = jit_cache.state(cell.doc)
    if state in jit_cache.NO_JIT:
        return None
    why = {"compiled": "grew while the cell ran, so the time includes the driver's PTX JIT of its kernels",
           "cold": "was empty when the cell began and its change was not recorded, so the time may "
                   "include the driver's PTX JIT of its kernels"}.get(state, "was not recorded")
    return (f"{metric} of a GPU cell whose CUDA JIT cache {why} (jit_cache {state}); compile "
            "times get a verdict only where the cache shows no JIT")


def one_process(summ: dict) -> str | None:
    """Why an interval decides no verdict: it comes from one process, so it covers that process only (a
    re-run's median moves by more than it: reprokit/data/rerun_coverage.json); None when it comes from
    K >= 2 processes (stats: `ci_covers` "rerun")."""
    if summ.get("ci_covers") != "process" and (summ.get("processes") or 1) > 1:
        return None
    return ("one process: its interval covers that process only, not a re-run (medians of two runs "
            "back to back moved by more than such intervals are wide); a verdict needs 2 or more "
            "processes per cell (the default design, or --repeat K)")


def _undecided(v: dict, rule: str, summ: dict, text: str) -> dict | None:
    """INCONCLUSIVE when the band rule decided something on a one-process interval, else None."""
    why = one_process(summ)
    if why is None or rule == INCONCLUSIVE:
        return None
    v["undecided_rule"] = rule
    return _finish(v, INCONCLUSIVE, f"{text}; not decided: {why} (on this process alone the band rule "
                   f"would say {rule})")


def _same_hardware_verdict(v: dict, p: float, summ: dict, unit: str, tolerance: tolerances.Tolerance,
                           note: str) -> dict:
    lo, hi = stats.interval(summ)
    tol = tolerance.value
    band = (p * (1 - tol), p * (1 + tol))
    v["band"] = list(band)
    pos = band_position(lo, hi, *band)
    single = summ["ci_low"] is None
    label = summ.get("ci_label") or f"{summ['ci_confidence']:.0%} CI"
    basis = (
        "the single measured value"
        if single
        else f"the {label} of {_what(summ)} [{lo:.4g}, {hi:.4g}] {unit} (n={summ['n']})"
    )
    band_txt = f"published {p:.4g} {unit} {tolerance.text()} = [{band[0]:.4g}, {band[1]:.4g}]"
    if pos == "inside":
        return (_undecided(v, REPRODUCED, summ, f"{note}: {basis} lies inside {band_txt}")
                or _finish(v, REPRODUCED, f"{note}: {basis} lies inside {band_txt}"))
    if pos == "overlap":
        return _finish(v, INCONCLUSIVE, f"{note}: {basis} overlaps an edge of {band_txt}")
    better = better_direction(unit)
    if is_speed(unit):
        faster = (pos == "below") == (better == "lower")
        verdict_ = DEVIATES_FASTER if faster else DEVIATES_SLOWER
    else:
        verdict_ = DEVIATES_HIGHER if pos == "above" else DEVIATES_LOWER
    word = verdict_.split("_")[1].lower()
    text = (f"{note}: {basis} lies entirely {pos} {band_txt} ({word}, "
            f"{'figure' if summ.get('statistic') == 'as_published' else 'median'}/published = "
            f"{summ['median'] / p:.3g})")
    return _undecided(v, verdict_, summ, text) or _finish(v, verdict_, text)


def efficiency(number: dict, cell: CellResult, summ: dict, unit: str, pub: dict, meas: dict) -> dict:
    """Efficiency (achieved FLOP/s / theoretical peak) of the published number and of the measured
    median and interval. The measured side divides by its device's peak of the precision the cell ran
    in (reprokit.analysis.devices.cell_precision, peak_for: fp32 CUDA-core or TF32 tensor), the
    published side by its device's fp32 peak (devices.PUBLISHED_PRECISION). Raises flops.NotApplicable
    (no FLOP model, no peak, precision unknown)."""
    precision, precision_why = devices.cell_precision(cell)
    peak_m, peak_kind = devices.peak_for(meas, precision)
    if peak_m is None:
        if precision == "unknown":
            raise flops.NotApplicable(f"{peak_kind} ({precision_why})",
                                      "whose cell did not record its precision")
        raise flops.NotApplicable(meas.get("reason") or peak_kind, "with no peak for the measuring device")
    peak_p, _ = devices.peak_for(pub, devices.PUBLISHED_PRECISION)
    if peak_p is None:
        raise flops.NotApplicable(pub.get("reason") or f"no peak for {pub['label']}",
                                  "with no peak for the publication's device")
    metric = number["metric"]
    p_value, p_unit, _ = published_value(number)
    a_pub = flops.achieved(p_value, p_unit, metric, number["cell"], flops.number_params(number))
    params = cell.params
    lo, hi = stats.interval(summ)
    a_med = flops.achieved(summ["median"], unit, metric, cell.cell_id, params)
    a_lo = flops.achieved(lo, unit, metric, cell.cell_id, params)
    a_hi = flops.achieved(hi, unit, metric, cell.cell_id, params)
    e_vals = sorted([a_lo["tflops"] / peak_m, a_hi["tflops"] / peak_m])
    probe = meas.get("probe_tflops")
    return {
        "measured": {
            "median": a_med["tflops"] / peak_m,
            "ci_low": e_vals[0],
            "ci_high": e_vals[1],
            "tflops_median": a_med["tflops"],
            "peak_tflops": peak_m,
            "peak_kind": peak_kind,
            "precision": precision,
            "precision_why": precision_why,
            "peak_source": meas.get("peak_source"),
            "probe_tflops": probe,
            "of_probe": a_med["tflops"] / probe if probe else None,
            "arithmetic": a_med["arithmetic"],
        },
        "published": {
            "value": a_pub["tflops"] / peak_p,
            "tflops": a_pub["tflops"],
            "peak_tflops": peak_p,
            "precision": devices.PUBLISHED_PRECISION,
            "peak_source": pub.get("peak_source"),
            "arithmetic": a_pub["arithmetic"],
        },
        "model": a_med["model"],
        "phase": a_med["phase"],
    }


def above_peak(cell: CellResult, summ: dict, unit: str, metric: str, meas: dict) -> dict | None:
    """The measurement's achieved rate when it exceeds its device's peak, else None (also when no FLOP
    model or peak applies). The work is the roofline's lower bound (reprokit.analysis.roofline), so an
    over-counting FLOP convention cannot raise the flag; the peak is the one of the precision that ran,
    or the device's highest when the precision is unknown."""
    precision, _ = devices.cell_precision(cell)
    peak, kind = devices.peak_for(meas, precision)
    if peak is None:
        peak, kind = devices.highest_peak(meas), "highest peak (precision unknown)"
    if not peak or summ.get("median") is None:
        return None
    try:
        w = roofline.work_per_item(cell.cell_id, metric, cell.params)
        ips = flops.items_per_second(summ["median"], unit, metric, w["_est"])
    except flops.NotApplicable:
        return None
    rate = w["flops_per_item"] * ips / 1e12
    if rate <= peak:
        return None
    return {"tflops": rate, "peak_tflops": peak, "peak_kind": kind, "fraction": rate / peak,
            "arithmetic": f"{flops.fmt_flops(w['flops_per_item'])} per {w['item']} (lower bound) x "
                          f"{ips:,.4g} {w['item_plural']}/s = {_rate(rate)}, {_pct(rate / peak)} of "
                          f"{meas['label']}'s {_rate(peak)} {kind}"}


def _efficiency_text(e: dict, pub: dict, meas: dict) -> str:
    m, p = e["measured"], e["published"]
    probe = f"; {_pct(m['of_probe'])} of its measured GEMM rate" if m.get("of_probe") else ""
    return (
        f"measured {_pct(m['median'])} of {meas['label']}'s {_rate(m['peak_tflops'])} {m['peak_kind']} "
        f"(interval {_pct(m['ci_low'])}-{_pct(m['ci_high'])}{probe}) vs published {_pct(p['value'])} of "
        f"{pub['label']}'s {_rate(p['peak_tflops'])}"
    )


def band_verdict(e: dict, tol: float) -> tuple[str, tuple[float, float]]:
    """(what the efficiency band rule gives, band): SIMILAR, HIGHER, LOWER or INCONCLUSIVE for the
    measured efficiency interval against published efficiency +- tol."""
    band = (e["published"]["value"] * (1 - tol), e["published"]["value"] * (1 + tol))
    pos = band_position(e["measured"]["ci_low"], e["measured"]["ci_high"], *band)
    return {"inside": EFFICIENCY_SIMILAR, "above": EFFICIENCY_HIGHER, "below": EFFICIENCY_LOWER,
            "overlap": INCONCLUSIVE}[pos], band


def peak_ratio(e: dict) -> float:
    """How far apart the two peaks an efficiency comparison divides by are (>= 1)."""
    a, b = e["measured"]["peak_tflops"], e["published"]["peak_tflops"]
    return max(a, b) / min(a, b)


def _efficiency_verdict(v: dict, number: dict, cell: CellResult, summ: dict, unit: str, pub: dict,
                        meas: dict) -> dict:
    pol = load_policy()["efficiency"]
    tol, max_ratio = float(pol["tolerance"]), float(pol["max_peak_ratio"])
    note = f"same device class, other model (published on {pub['label']}, measured on {meas['label']})"
    try:
        e = efficiency(number, cell, summ, unit, pub, meas)
    except flops.NotApplicable as err:
        unknown = devices.cell_precision(cell)[0] == "unknown"
        v["cause"] = err.cause
        return _finish(v, NOT_COMPARABLE, f"{note}; no efficiency comparison: {err}",
                       [PRECISION_UNKNOWN] if unknown else None)
    v["efficiency"] = e
    rule, band = band_verdict(e, tol)
    v["band"] = list(band)
    ratio = peak_ratio(e)
    v["policy"] = {"precision": e["measured"]["precision"],
                   "published_precision": devices.PUBLISHED_PRECISION, "peak_ratio": ratio,
                   "max_peak_ratio": max_ratio, "band_rule": rule}
    text = f"{note}: {_efficiency_text(e, pub, meas)} +- {_pct(tol)}; measured: {_what(summ)}"
    if e["measured"]["precision"] != devices.PUBLISHED_PRECISION:
        v["efficiency_is_context"] = True
        v["cause"] = (f"measured in {e['measured']['precision']}, published in "
                      f"{devices.PUBLISHED_PRECISION}: context")
        return _finish(v, NOT_COMPARABLE, f"{text}; context, not a verdict: this cell ran in "
                       f"{e['measured']['precision']} ({e['measured']['precision_why']}), the publication in "
                       f"{devices.PUBLISHED_PRECISION}", [EFFICIENCY_CONTEXT])
    if ratio > max_ratio:
        v["efficiency_is_context"] = True
        v["cause"] = (f"kept as context: the two devices' peaks are more than {max_ratio:g}x apart "
                      "(verdict_policy.yaml)")
        return _finish(v, NOT_COMPARABLE, f"{text}; context, not a verdict: the two peaks are {ratio:.3g}x "
                       f"apart, more than the policy's {max_ratio:g}x (verdict_policy.yaml: fractions of "
                       f"peak do not carry that far; the band rule alone would say {rule})",
                       [EFFICIENCY_CONTEXT])
    if meas.get("peak_is_lower_bound") and rule != EFFICIENCY_LOWER:
        # the run's peak is only a lower bound, so its efficiency an upper bound: only LOWER is sound
        return _finish(v, INCONCLUSIVE, f"{text}; but this CPU's peak is known only as a lower bound (its "
                       "measured GEMM rate beat cores x reported clock x FLOP/cycle, so its real clock is "
                       "unknown), which makes its efficiency an upper bound: only a lower efficiency could "
                       "be concluded")
    return _undecided(v, rule, summ, text) or _finish(v, rule, text)


def _implausible(v: dict, number: dict, cell: CellResult | None, summ: dict | None, pub: dict,
                 meas: dict | None,
                 unit: str | None) -> dict:
    """IMPLAUSIBLE from the published number alone; with a measurement, its hardware against the
    publication's (for the row's kind of re-measurement) and its own check against its device's peak:
    a measurement above it is labelled ABOVE_PEAK too (001's unsynchronised H100 rows: 6.0x and 7.8x
    the H100's bound)."""
    text = v["roofline"]["arithmetic"]
    v["explanations"] = defects.explain(number, v["roofline"], cell if unit is not None else None, meas)
    said = [f"{e['label']}{' by ' + e['defect'] if e['defect'] else ''}: {e['arithmetic']}"
            for e in v["explanations"]]
    found = [e["label"] for e in v["explanations"] if e["label"] != defects.NOT_DECIDED]
    if said:
        text += "; " + "; ".join(said)
    if unit is None or meas is None:
        return _finish(v, IMPLAUSIBLE, text, found[:1])
    mismatch = devices.class_mismatch(pub, meas)
    v["hardware"]["same_class"] = mismatch is None
    v["hardware"]["same_model"] = mismatch is None and devices.same_model(pub, meas)
    fast = above_peak(cell, summ, unit, number["metric"], meas)
    if not fast:
        return _finish(v, IMPLAUSIBLE, text, found[:1])
    v["above_peak"] = fast
    return _finish(v, IMPLAUSIBLE, f"{text}; the measurement here is faster than its own device can compute "
                   f"too: {fast['arithmetic']}", [ABOVE_PEAK] + found[:1])


def verdict(
    number: dict,
    cell: CellResult | None,
    run: Run | None = None,
    source: dict | None = None,
    entry: CellEntry | None = None,
) -> dict:
    """The verdict of one published number (`_verdict`); a SUSPICIOUS one (above the suspicious share of
    its device's bound) also gets its EXPLAINED / UNEXPLAINED label and arithmetic, as an IMPLAUSIBLE
    one does."""
    v = _verdict(number, cell, run, source, entry)
    if v.get("tier") == SUSPICIOUS and v.get("explanations") is None and v.get("roofline"):
        ran = cell is not None and cell.measured
        meas = devices.measured_device(cell, _machine(run)) if ran else None
        v["explanations"] = defects.explain(number, v["roofline"], cell if ran else None, meas)
        found = [e["label"] for e in v["explanations"] if e["label"] != defects.NOT_DECIDED]
        v["labels"] += [x for x in found[:1] if x not in v["labels"]]
    return v


def _machine(run: Run | None) -> Machine | None:
    return run.machine if run is not None else None


def _verdict(
    number: dict,
    cell: CellResult | None,
    run: Run | None = None,
    source: dict | None = None,
    entry: CellEntry | None = None,
) -> dict:
    """The verdict on one published number (see the module docstring for the order of the checks).

    `cell` is the cell result that measured number["cell"] (None when absent), `run` the run (its
    machine: host fingerprint, CPU probe; its design: a sequential cell's confidence), `source` the
    number's entry of sources.yaml (None: none; its tolerance is then derived from the number and its
    device alone), `entry` the run's entry for the cell (gives the reason when no result file exists).
    """
    pub = devices.publication_device(number)
    tol = tolerances.for_number(number, source or {}, pub["kind"] if pub.get("kind") == "cpu" else "gpu")
    v = _base(number, tol)
    v["roofline"] = roofline.bound(number, pub)
    v["tier"] = v["roofline"]["tier"] if v["roofline"] else None
    v["hardware"] = {"published": pub, "measured": None, "same_class": None, "same_model": None}
    why_not = _not_run_reason(number, cell, entry)
    summ = meas = None
    if why_not is None:
        metric = cell.metrics[number["metric"]]
        unit = metric["unit"]
        summ, v["basis"] = measured_summary(metric, stats.cell_confidence(run, cell.cell_id))
        history = run.history if run is not None else None
        summ = run_level.widen(summ, run_level.term(history, "gpu" if cell.device == "gpu" else "cpu"),
                               run_level.records(history, cell.cell_id, number["metric"],
                                                 entry.stack if entry else None,
                                                 devices.cell_precision(cell)[0], cell.code))
        v["measured"] = summ
        meas = devices.measured_device(cell, _machine(run))
        v["hardware"]["measured"] = meas
        v["stack"] = stack_match(number, cell)
        v["standins"] = standins.of_cell(cell)
    if v["tier"] == IMPLAUSIBLE:  # the measurement, shown as context, is still checked
        return _implausible(v, number, cell, summ, pub, meas, None if why_not else unit)
    if why_not is not None:
        mismatch = devices.host_mismatch(pub, _machine(run))
        if mismatch:
            v["hardware"]["same_class"] = False
            return _finish(v, NOT_TESTABLE_HERE, mismatch)
        return _finish(v, NOT_RUN, why_not)
    try:
        p, _, how = published_value(number, unit)
    except ValueError as e:
        v["cause"] = "whose published unit cannot be compared with the measured one"
        return _finish(v, NOT_COMPARABLE, f"published unit cannot be compared with the measured one: {e}")
    v["published"].update(value_converted=p, unit_converted=unit, conversion=how)
    mismatch = devices.class_mismatch(pub, meas)
    v["hardware"]["same_class"] = mismatch is None
    if mismatch:
        v["comparison"] = "other_class"
        try:
            v["efficiency"] = efficiency(number, cell, summ, unit, pub, meas)
            v["efficiency_is_context"] = True
        except flops.NotApplicable:
            pass
        fast = above_peak(cell, summ, unit, number["metric"], meas)
        if fast:
            v["above_peak"] = fast
            mismatch += f"; and the measurement is faster than its device can compute: {fast['arithmetic']}"
        return _finish(v, NOT_TESTABLE_HERE, mismatch, [ABOVE_PEAK] if fast else None)
    mech = [s for s in v["standins"] if s["mechanism"]]
    if mech:
        v["comparison"] = "standin"
        return _finish(v, NOT_TESTABLE_STANDIN,
                       "measured through a stand-in for the mechanism under test: "
                       + "; ".join(f"{s['used']} instead of {s['original']}" for s in mech))
    fast = above_peak(cell, summ, unit, number["metric"], meas)
    if fast:  # a timing faster than the device can compute is never a verdict
        v["above_peak"] = fast
        v["comparison"] = "above_peak"
        v["cause"] = "measured faster than their device can compute (ABOVE_PEAK)"
        return _finish(v, NOT_COMPARABLE, "the measurement is faster than its device can compute: "
                       f"{fast['arithmetic']}; the timing cannot be right (an unsynchronised loop on a GPU "
                       "times kernel launches, not kernels)", [ABOVE_PEAK])
    same = devices.same_model(pub, meas)
    v["hardware"]["same_model"] = same
    few = (cold_compile(number["metric"], cell) or too_few_samples(number["metric"], summ)
           or no_steady_state(summ))
    if few:
        v["comparison"] = "same_hardware" if same else "efficiency"
        return _finish(v, INCONCLUSIVE, few)
    if same:
        v["ratio"] = summ["median"] / p if p else None  # raw values compare on the same device model only
        if v["stack"]["same"]:
            v["comparison"] = "same_hardware"
            note = f"same hardware ({meas['label']}) and stack ({v['stack']['measured']})"
        else:
            v["comparison"] = "same_hardware_other_stack"
            subs = "; ".join(v["stack"]["substitutes"]) or v["stack"]["measured"]
            note = (
                f"same hardware ({meas['label']}) but not the published stack "
                f"({v['stack']['published']}; ran {subs})"
            )
        return _same_hardware_verdict(v, p, summ, unit, tol, note)
    v["comparison"] = "efficiency"
    return _efficiency_verdict(v, number, cell, summ, unit, pub, meas)


def verdicts_for_run(numbers: list[dict], run: Run, sources: dict) -> list[dict]:
    """Verdicts for every published number on the run's cells; `sources` is
    reprokit.catalog.suites.load_sources() (each number's tolerance reads its source's entry)."""
    return [verdict(n, run.result(n["cell"]), run, sources.get(n["provenance"]["source"]),
                    run.entry(n["cell"]) if n["cell"] else None) for n in numbers]
