"""One verdict per published number: was it reproduced, and can it even be true?

Pure functions: a published number (reprokit.suites.load_published), the cell result that measured
it (or None), the run record (host fingerprint, measured CPU peak) in; a verdict dict out.

Verdicts (`verdict` field):
  same GPU model as the publication (the run's GPU maps to the same peaks.yaml entry, same count):
    REPRODUCED        the CI of the measured median lies inside published value x (1 +- tolerance)
    DEVIATES_FASTER   the CI lies entirely on the faster side of that band (time below / rate above)
    DEVIATES_SLOWER   entirely on the slower side
    DEVIATES_HIGHER / DEVIATES_LOWER   the same for metrics that are not speeds (memory)
    INCONCLUSIVE      the CI overlaps an edge of the band (too noisy, or too close to call)
    (`comparison` says "same_hardware" when the stack is the published one, "same_hardware_other_stack"
    when the implementation used substitutes or another framework version; the reason names them)
  different hardware: the efficiencies (achieved FLOP/s / peak of each device) are compared instead,
  the run's CPU peak being the GEMM probe stored in the run (reprokit.cpu_peak):
    EFFICIENCY_SIMILAR / EFFICIENCY_HIGHER / EFFICIENCY_LOWER / INCONCLUSIVE (same band rule)
    NOT_COMPARABLE    no FLOP model for the metric, or no peak for one of the devices
  NOT_RUN             the cell has no result, did not finish, or lacks the metric (reason says which)
Independently of the measurement, `plausibility` judges the published number alone: the FLOP/s it
implies on the publication GPU against that GPU's fp32 peak. Above 100 % it is IMPLAUSIBLE, which
is added to `labels` (the measured verdict is kept: both are reported).

Unit conversion for the whole report lives in `reprokit.units.convert`; a published number is put into the
measured metric's unit by `published_value` (transform.scale first, then `convert`).
"""

from __future__ import annotations

import re

from reprokit import units
from reprokit.analysis import flops, stats

DEFAULT_TOLERANCE = 0.10

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
IMPLAUSIBLE = "IMPLAUSIBLE"
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
)

# -- units: one table for the whole code base (reprokit/units.py) ---------------------------------
convert = units.convert
better_direction = units.better_direction
is_speed = units.is_speed


def published_value(number: dict, to_unit: str | None = None) -> tuple[float, str, str]:
    """(value, unit, how) of a published number in `to_unit` (default: its own unit).

    transform.scale is applied first: a value published as 50 x the metric (elapsed time of 50
    batches) is divided by 50; then the unit is converted with `convert`.
    """
    scale = float((number.get("transform") or {}).get("scale", 1))
    value, unit = float(number["value"]) / scale, number["unit"]
    how = [f"{number['value']:g} {unit}"]
    if scale != 1:
        how.append(f"/ {scale:g} (transform.scale)")
    if to_unit and to_unit != unit:
        value = convert(value, unit, to_unit)
        how.append(f"-> {value:.6g} {to_unit}")
        unit = to_unit
    return value, unit, " ".join(how)


# -- hardware and stack ----------------------------------------------------------------------------
def publication_device(number: dict) -> dict:
    """The publication's device: {"kind", "label", "entry", "count", "peak_tflops", "verified", "reason"}."""
    label = number["environment"].get("gpu") or "unstated"
    if label.lower().startswith("none"):
        return {
            "kind": "cpu",
            "label": label,
            "entry": None,
            "count": 1,
            "peak_tflops": None,
            "verified": None,
            "reason": f"the publication CPU's peak is unknown ('{label}')",
        }
    hit = flops.find_gpu(label)
    if hit is None:
        return {
            "kind": "gpu",
            "label": label,
            "entry": None,
            "count": None,
            "peak_tflops": None,
            "verified": None,
            "reason": f"no peak for the publication GPU '{label}' in peaks.yaml",
        }
    return {
        "kind": "gpu",
        "label": label,
        "entry": hit["entry"],
        "count": hit["count"],
        "peak_tflops": hit["peak_tflops"],
        "fp32_tflops": hit["fp32_tflops"],
        "verified": hit["verified"],
        "sources": hit["sources"],
        "reason": None,
    }


def same_hardware(pub: dict, meas: dict, run: dict | None) -> bool:
    if pub["kind"] != meas["kind"]:
        return False
    if pub["kind"] == "gpu":
        return pub["entry"] is not None and pub["entry"] == meas["entry"] and pub["count"] == meas["count"]
    model = (((run or {}).get("host_fingerprint") or {}).get("cpu") or {}).get("model_name")
    return bool(model) and model.lower() in pub["label"].lower()


def _version_equal(a: str | None, b: str | None) -> bool:
    """'1.2.1' == '1.2.1+cpu'; '8.0' matches '8.0.44' (compare the common numeric prefix)."""
    if not a or not b:
        return False
    pa, pb = re.findall(r"\d+", a.split("+")[0]), re.findall(r"\d+", b.split("+")[0])
    n = min(len(pa), len(pb))
    return n > 0 and pa[:n] == pb[:n]


def stack_match(number: dict, cell: dict) -> dict:
    """Whether the cell ran the published stack: same framework version and no substitutes."""
    env = number["environment"]
    impl = cell.get("implementation") or {}
    subs = impl.get("substitutes") or []
    pub = f"{env.get('framework', '?')} {env.get('framework_version', '?')}"
    meas = f"{impl.get('framework', '?')} {impl.get('framework_version', '?')}"
    same = not subs and _version_equal(env.get("framework_version"), impl.get("framework_version"))
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


def plausibility(number: dict) -> dict | None:
    """The published number alone against its publication GPU's fp32 peak, or None without a FLOP
    model or a peak. {"implausible", "percent_of_peak", "implied_tflops", "peak_tflops",
    "flops_per_item", "items_per_s", "gpu", "arithmetic", "peak_verified"}."""
    pub = publication_device(number)
    if pub["peak_tflops"] is None:
        return None
    value, unit, _ = published_value(number)
    try:
        a = flops.achieved(value, unit, number["metric"], number["cell"] or "", number["workload"])
    except flops.NotApplicable:
        return None
    frac = a["tflops"] / pub["peak_tflops"]
    count = f"{pub['count']} x " if pub["count"] != 1 else ""
    arith = (
        f"{a['arithmetic']}; peak {count}{pub['label']} ({pub['entry']}) "
        f"{_rate(pub['peak_tflops'])} fp32 -> {_pct(frac)} of peak"
    )
    return {
        "implausible": frac > 1.0,
        "percent_of_peak": 100 * frac,
        "implied_tflops": a["tflops"],
        "peak_tflops": pub["peak_tflops"],
        "flops_per_item": a["flops_per_item"],
        "items_per_s": a["items_per_s"],
        "item": a["item"],
        "phase": a["phase"],
        "gpu": pub["label"],
        "peak_verified": pub["verified"],
        "arithmetic": arith,
    }


# -- the verdict -----------------------------------------------------------------------------------
def _not_run_reason(number: dict, cell: dict | None, run_entry: dict | None) -> str | None:
    metric = number["metric"]
    if cell is None:
        if run_entry is None:
            return f"cell {number['cell']} is not part of this run"
        why = run_entry.get("reason") or "no result file"
        return f"cell {number['cell']} {run_entry.get('status', 'not run')}: {why}"
    if cell.get("status") != "ok":
        return f"cell {cell['cell_id']} {cell.get('status')}: {cell.get('reason') or 'no reason given'}"
    m = (cell.get("metrics") or {}).get(metric)
    if not m or not m.get("samples"):
        return f"cell {cell['cell_id']} produced no '{metric}' samples"
    return None


def _base(number: dict, tolerance: float) -> dict:
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
            "scale": (number.get("transform") or {}).get("scale", 1),
            "gpu": env.get("gpu"),
            "environment": env,
        },
        "tolerance": tolerance,
        "defects": list(number.get("defects") or []),
        "plausibility": plausibility(number),
        "measured": None,
        "band": None,
        "ratio": None,
        "efficiency": None,
        "hardware": None,
        "stack": None,
        "comparison": None,
    }


def _finish(v: dict, verdict: str, reason: str) -> dict:
    v["verdict"], v["reason"] = verdict, reason
    v["labels"] = [verdict] + ([IMPLAUSIBLE] if (v["plausibility"] or {}).get("implausible") else [])
    return v


def _same_hardware_verdict(v: dict, p: float, summ: dict, unit: str, tol: float, note: str) -> dict:
    lo, hi = stats.interval(summ)
    band = (p * (1 - tol), p * (1 + tol))
    v["band"] = list(band)
    pos = band_position(lo, hi, *band)
    single = summ["ci_low"] is None
    basis = (
        "the single measured value"
        if single
        else f"the {summ['ci_confidence']:.0%} CI of the median [{lo:.4g}, {hi:.4g}] {unit} (n={summ['n']})"
    )
    band_txt = f"published {p:.4g} {unit} +- {_pct(tol)} = [{band[0]:.4g}, {band[1]:.4g}]"
    if pos == "inside":
        return _finish(v, REPRODUCED, f"{note}: {basis} lies inside {band_txt}")
    if pos == "overlap":
        return _finish(v, INCONCLUSIVE, f"{note}: {basis} overlaps an edge of {band_txt}")
    better = better_direction(unit)
    if is_speed(unit):
        faster = (pos == "below") == (better == "lower")
        label = DEVIATES_FASTER if faster else DEVIATES_SLOWER
    else:
        label = DEVIATES_HIGHER if pos == "above" else DEVIATES_LOWER
    word = label.split("_")[1].lower()
    return _finish(
        v,
        label,
        f"{note}: {basis} lies entirely {pos} {band_txt} ({word}, "
        f"median/published = {summ['median'] / p:.3g})",
    )


def _efficiency_verdict(
    v: dict, number: dict, cell: dict, summ: dict, unit: str, tol: float, pub: dict, meas: dict, hw_note: str
) -> dict:
    metric = number["metric"]
    if meas["peak_tflops"] is None:
        return _finish(v, NOT_COMPARABLE, f"{hw_note}; no efficiency comparison: {meas['reason']}")
    if pub["peak_tflops"] is None:
        return _finish(v, NOT_COMPARABLE, f"{hw_note}; no efficiency comparison: {pub['reason']}")
    p_value, p_unit, _ = published_value(number)
    try:
        a_pub = flops.achieved(p_value, p_unit, metric, number["cell"], number["workload"])
        params = cell.get("params") or {}
        lo, hi = stats.interval(summ)
        a_med = flops.achieved(summ["median"], unit, metric, cell["cell_id"], params)
        a_lo = flops.achieved(lo, unit, metric, cell["cell_id"], params)
        a_hi = flops.achieved(hi, unit, metric, cell["cell_id"], params)
    except flops.NotApplicable as e:
        return _finish(v, NOT_COMPARABLE, f"{hw_note}; no efficiency comparison: {e}")
    peak_m = meas["peak_tflops"]
    e_vals = sorted([a_lo["tflops"] / peak_m, a_hi["tflops"] / peak_m])
    e_med = a_med["tflops"] / peak_m
    e_pub = a_pub["tflops"] / pub["peak_tflops"]
    band = (e_pub * (1 - tol), e_pub * (1 + tol))
    v["band"] = list(band)
    v["efficiency"] = {
        "measured": {
            "median": e_med,
            "ci_low": e_vals[0],
            "ci_high": e_vals[1],
            "tflops_median": a_med["tflops"],
            "peak_tflops": peak_m,
            "peak_source": meas["peak_source"],
            "arithmetic": a_med["arithmetic"],
        },
        "published": {
            "value": e_pub,
            "tflops": a_pub["tflops"],
            "peak_tflops": pub["peak_tflops"],
            "peak_source": f"peaks.yaml {pub['entry']}",
            "arithmetic": a_pub["arithmetic"],
        },
        "model": a_med["model"],
        "phase": a_med["phase"],
    }
    pos = band_position(e_vals[0], e_vals[1], *band)
    txt = (
        f"{hw_note}: efficiency compared (achieved FLOP/s / peak). Measured {_pct(e_med)} of "
        f"{meas['label']}'s {_rate(peak_m)} ({meas['peak_source']}; CI {_pct(e_vals[0])}-"
        f"{_pct(e_vals[1])}) vs published {_pct(e_pub)} of {pub['label']}'s "
        f"{_rate(pub['peak_tflops'])} +- {_pct(tol)}"
    )
    if (v["plausibility"] or {}).get("implausible"):
        txt += "; the published value exceeds its GPU's peak, so this comparison says little"
    label = {
        "inside": EFFICIENCY_SIMILAR,
        "above": EFFICIENCY_HIGHER,
        "below": EFFICIENCY_LOWER,
        "overlap": INCONCLUSIVE,
    }[pos]
    return _finish(v, label, txt)


def verdict(
    number: dict,
    cell: dict | None,
    run: dict | None = None,
    tolerance: float | None = None,
    run_entry: dict | None = None,
) -> dict:
    """The verdict on one published number (see the module docstring for the labels).

    `cell` is the cell result that measured number["cell"] (None when absent), `run` the run record
    (host fingerprint and the measured `cpu_peak`), `tolerance` the source's (default 0.10),
    `run_entry` the run record's line for the cell (gives the reason when no result file exists).
    """
    tol = DEFAULT_TOLERANCE if tolerance is None else float(tolerance)
    v = _base(number, tol)
    why = _not_run_reason(number, cell, run_entry)
    if why is not None:
        return _finish(v, NOT_RUN, why)
    metric = cell["metrics"][number["metric"]]
    unit = metric["unit"]
    summ = stats.summarize_metric(metric)
    v["measured"] = summ
    try:
        p, _, how = published_value(number, unit)
    except ValueError as e:
        return _finish(v, NOT_COMPARABLE, f"published unit cannot be compared with the measured one: {e}")
    v["published"].update(value_converted=p, unit_converted=unit, conversion=how)
    v["ratio"] = summ["median"] / p if p else None
    pub, meas = publication_device(number), flops.measured_device(cell, run)
    same = same_hardware(pub, meas, run)
    v["hardware"] = {"published": pub, "measured": meas, "same": same}
    v["stack"] = stack_match(number, cell)
    if same:
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
    hw_note = f"different hardware (published on {pub['label']}, measured on {meas['label']})"
    return _efficiency_verdict(v, number, cell, summ, unit, tol, pub, meas, hw_note)


def verdicts_for_run(
    numbers: list[dict], cells: dict[str, dict], run: dict | None = None, sources: dict | None = None
) -> list[dict]:
    """Verdicts for every published number. `cells` maps cell id -> cell result; `sources` is
    reprokit.suites.load_sources() (for each source's tolerance; default 0.10)."""
    entries = {c["cell_id"]: c for c in (run or {}).get("cells") or []}
    out = []
    for n in numbers:
        src = (sources or {}).get(n["provenance"]["source"]) or {}
        out.append(verdict(n, cells.get(n["cell"]), run, src.get("tolerance"), entries.get(n["cell"])))
    return out
