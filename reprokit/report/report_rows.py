"""The report's rows: one published number beside its verdict, in the publication's own unit (pure,
no I/O; built by reprokit/report/report.py, which only renders them).

The verdict (reprokit.analysis.verdicts) compares in the measured metric's unit; a reader compares
with the paper, so the rows show the measured median and its 95 % CI converted back into the unit
and multiple the publication used (`transform.scale`: e.g. elapsed time of 50 batches = 50 x time
per batch). All unit conversion goes through `verdicts.convert`; this module has no unit table.
"""

from __future__ import annotations

from typing import Any

from reprokit.analysis import defects, devices, stats, verdicts
from reprokit.reader.model import CellEntry, Run
from reprokit.reader.result import CellResult

# What a ratio measured/published means, per kind of unit.
DIRECTIONS = {
    "time": {"better": "lower", "above": "slower", "below": "faster"},
    "memory": {"better": "lower", "above": "more memory", "below": "less memory"},
    "rate": {"better": "higher", "above": "faster", "below": "slower"},
}
DEVIATING = (verdicts.DEVIATES_FASTER, verdicts.DEVIATES_SLOWER, verdicts.DEVIATES_HIGHER,
             verdicts.DEVIATES_LOWER, verdicts.EFFICIENCY_HIGHER, verdicts.EFFICIENCY_LOWER)


def unit_kind(unit: str) -> str | None:
    """'time', 'memory' or 'rate' (anything per second), from verdicts' unit knowledge."""
    better = verdicts.better_direction(unit)
    if verdicts.is_speed(unit):
        return "time" if better == "lower" else "rate"
    return "memory" if better == "lower" else None


def better(unit: str) -> str | None:
    """'lower' or 'higher' is better for this unit, None when unknown."""
    kind = unit_kind(unit)
    return DIRECTIONS[kind]["better"] if kind else None


def reading(ratio: float | None, unit: str) -> str | None:
    """The ratio measured/published in words, e.g. '3.2x slower', 'about equal'."""
    kind = unit_kind(unit)
    if ratio is None or kind is None or ratio <= 0:
        return None
    if 0.995 <= ratio <= 1.005:
        return "about equal"
    words = DIRECTIONS[kind]
    if ratio > 1:
        return f"{factor_text(ratio)}x {words['above']}"
    return f"{factor_text(1 / ratio)}x {words['below']}"


def factor_text(v: float) -> str:
    """3 significant digits without exponent notation: 4.33, 51.9, 734, 1,190."""
    return f"{float(f'{v:.3g}'):,.0f}" if v >= 1000 else f"{v:.3g}"


def to_published_unit(value: float | None, measured_unit: str, number: dict) -> float | None:
    """A measured value in the published number's unit and multiple (raises ValueError when the
    units cannot be converted)."""
    if value is None:
        return None
    scale = float(number.get("transform", {}).get("scale", 1.0))
    return verdicts.convert(value, measured_unit, number["unit"]) * scale


def _cell_state(number: dict, cell: CellResult | None,
                entry: CellEntry | None) -> tuple[str | None, str | None]:
    if number["cell"] is None:
        return None, None
    if cell is not None:
        return cell.status, cell.reason
    if entry is not None:
        return entry.status, entry.reason or "no result file"
    return "not in run", None


def row(number: dict, verdict: dict, cell: CellResult | None, entry: CellEntry | None = None) -> dict:
    """One report row: the published number as written, the measurement in its unit (the figure of
    the source's own definition when the cell recorded one, else the median; its interval, min-max,
    CV, noisy flag; `basis` says which, `robust_median` and its interval give the median beside a
    figure), the ratio in words and the verdict (label, reason, and the whole verdict dict under
    `analysis`)."""
    prov, env = number["provenance"], number["environment"]
    status, cell_reason = _cell_state(number, cell, entry)
    out: dict[str, Any] = {
        "id": number["id"], "source": prov["source"], "table": prov["table"],
        "row_label": prov["row_label"], "metric": number["metric"],
        "metric_as_published": number.get("metric_as_published", number["metric"]),
        "published": number["value"], "unit": number["unit"],
        "scale": float(number.get("transform", {}).get("scale", 1.0)),
        "cell": number["cell"], "cell_status": status, "cell_reason": cell_reason,
        "in_run": status not in (None, "not in run"),
        "device": cell.device if cell is not None else None,
        "published_gpu": env["gpu"],
        "published_on_gpu": devices.publication_device(number)["kind"] == "gpu",
        "published_device": verdict["hardware"]["published"].get("label"),
        "defects": list(number.get("defects", [])),
        "measured": None, "ci_low": None, "ci_high": None, "measured_min": None, "measured_max": None,
        "n": 0, "cv": None, "noisy": None, "ci_method": None, "ci_note": None, "stop_reason": None,
        "ci_label": None, "ci_coverage": None, "ci_levels": None, "ci_scope": None,
        "measured_unit": None, "ratio": verdict.get("ratio"), "better": better(number["unit"]),
        "reading": None, "note": None, "state": _state(cell, number["metric"]), "steady_note": None,
        "basis": verdict.get("basis"), "robust_median": None, "robust_ci_low": None, "robust_ci_high": None,
        "verdict": verdict["verdict"], "labels": list(verdict["labels"]), "reason": verdict["reason"],
        "comparison": verdict.get("comparison"),
        "deviates": verdict["verdict"] in DEVIATING,
        "implausible": verdict["verdict"] == verdicts.IMPLAUSIBLE,
        "tier": verdict.get("tier"),
        "bound": _bound_text(verdict),
        "standin": _standin_text(verdict),
        "policy_note": policy_note(verdict),
        "analysis": verdict,
    }
    summ = verdict.get("measured")
    if number["cell"] is None:
        out["note"] = "no cell reproduces this number"
    elif status == "not in run":
        out["note"] = "cell not in this run"
    elif cell is not None and cell.partial is not None:  # measured by the processes it finished
        out["note"] = f"from {cell.partial}"
    elif status != "ok":
        out["note"] = f"cell {status}"
    elif summ is None:
        out["note"] = f"metric {number['metric']} not measured by the cell"
    if summ is None or summ.get("median") is None:
        return out
    out.update(measured_unit=summ["unit"], n=summ["n"], cv=summ["cv"], noisy=summ["noisy"],
               ci_method=summ["ci_method"], ci_note=summ["ci_note"], stop_reason=summ["stop_reason"],
               ci_label=summ.get("ci_label"), ci_coverage=summ.get("ci_coverage"),
               ci_levels=summ.get("ci_levels"), ci_scope=ci_scope(summ))
    try:
        conv = {k: to_published_unit(summ[k], summ["unit"], number)
                for k in ("median", "ci_low", "ci_high", "min", "max")}
    except ValueError as e:
        out["note"] = f"measured in {summ['unit']}, published in {number['unit']}: {e}"
        return out
    out.update(measured=conv["median"], ci_low=conv["ci_low"], ci_high=conv["ci_high"],
               measured_min=conv["min"], measured_max=conv["max"])
    robust = summ.get("robust")
    if robust is not None:  # the figure of the source's definition is shown; the median beside it
        out.update(robust_median=to_published_unit(robust["median"], robust["unit"], number),
                   robust_ci_low=to_published_unit(robust["ci_low"], robust["unit"], number),
                   robust_ci_high=to_published_unit(robust["ci_high"], robust["unit"], number))
    out["steady_note"] = steady_note(summ)
    out["reading"] = reading(out["ratio"], number["unit"])
    if out["scale"] != 1.0:
        out["note"] = f"measured {number['metric']} x {out['scale']:g}"
    return out


_NO_RUN_TERM = {"not_recorded": " (the run recorded no history of this host)",
                "none": " (no history on this host and no default for the device class)"}


def ci_scope(summ: dict) -> str | None:
    """What an interval covers, in words beside its label: 'this process only' (iterations of one
    process); over K >= 3 processes the re-run prediction interval beside the confidence interval,
    with the levels it covers (process, and run where the host's history or the device class's default
    gives a between-run term: reprokit/analysis/run_level.py); 're-run of K processes' (the re-run
    interval over processes); None otherwise."""
    if summ.get("ci_low") is None:
        return None
    if summ.get("ci_covers") == "median":
        if summ.get("pi_low") is None:
            return None
        run = summ.get("pi_run") or {}
        covers = ("process + " + run["text"] if "run" in (summ.get("pi_covers") or [])
                  else "process only: no between-run term" + _NO_RUN_TERM.get(run.get("basis"), ""))
        return (f"prediction for a re-run of {summ.get('processes')} processes: "
                f"[{summ['pi_low']:.4g}, {summ['pi_high']:.4g}], covers {covers}")
    if summ.get("ci_covers") == "rerun":
        return f"re-run of {summ.get('processes')} processes"
    if summ.get("ci_covers") == "process":
        return "this process only"
    return None


def steady_note(summ: dict) -> str | None:
    """The steady-state detection's line when it changed something (iterations dropped, a process with
    no steady state), else None (reprokit/analysis/steady_state.py)."""
    robust = summ.get("robust")
    ss = summ.get("steady_state") or (robust["steady_state"] if robust else None)
    if not ss or not (sum(ss["dropped"]) or ss["no_steady_state"]):
        return None
    return ss["summary"]


def _state(cell: CellResult | None, metric: str) -> str | None:
    """What the measurement started from when that matters (a compile cache: cold or warm)."""
    m = (cell.metric(metric) if cell is not None else None) or {}
    states = [s for s in dict.fromkeys(m.get("states") or [m.get("state")]) if s]
    return "; ".join(states) or None


def _bound_text(verdict: dict) -> str | None:
    """The roofline bound in the published unit, e.g. 'at most 41,600 words/s (compute)'."""
    rf = verdict.get("roofline")
    if not rf or rf.get("bound_value") is None:
        return None
    word = "at most" if verdicts.better_direction(rf["bound_unit"]) != "lower" else "at least"
    return f"{word} {factor_text(rf['bound_value'])} {rf['bound_unit']} ({rf['binding']}-bound)"


def policy_note(verdict: dict) -> str | None:
    """What the efficiency policy did to this number, in one line, or None: shown as context
    instead of a verdict (and what the band rule alone would have said), no efficiency for an unknown
    precision, or flagged for a measurement above its device's peak."""
    labels = verdict.get("labels") or []
    pol, fast = verdict.get("policy") or {}, verdict.get("above_peak")
    told = [f"{e['label']} by {e['defect']} ({e['inflation_there']:.3g}x inflation there against "
            f"{e['inflation_needed']:.3g}x needed)" for e in verdict.get("explanations") or []
            if e.get("inflation_there") is not None]
    told += [f"{e['label']}: no known defect of its source explains the {e['inflation_needed']:.3g}x "
             "timing inflation it would take to be ordinary"
             for e in verdict.get("explanations") or []
             if e.get("defect") is None and e["label"] == defects.UNEXPLAINED]
    if verdicts.ABOVE_PEAK in labels and fast:
        return (f"ABOVE_PEAK: measured {_pct(fast['fraction'])} of the device's {fast['peak_kind']}, "
                "so the timing cannot be right; no verdict" + "".join(f"; {x}" for x in told))
    if told:
        return "; ".join(told)
    if verdicts.EFFICIENCY_CONTEXT in labels and pol:
        if pol["precision"] != pol["published_precision"]:
            why = f"ran in {pol['precision']}, published in {pol['published_precision']}"
        else:
            why = f"peaks {pol['peak_ratio']:.3g}x apart (policy: at most {pol['max_peak_ratio']:g}x)"
        return f"EFFICIENCY_CONTEXT: {why}; the efficiency band alone would say {pol['band_rule']}"
    if verdicts.PRECISION_UNKNOWN in labels:
        return "PRECISION_UNKNOWN: the cell did not record whether TF32 ran; no efficiency"
    return None


def _pct(x: float) -> str:
    return f"{100 * x:,.0f} %"


def _standin_text(verdict: dict) -> str | None:
    """The stand-ins that matter for a reader: mechanisms replaced, another framework, then another
    release of the framework."""
    shown = [s["short"] for s in verdict.get("standins") or []
             if s["kind"] in ("mechanism", "framework", "version")]
    return "; ".join(dict.fromkeys(shown)) or None


def unmatched(published: list[dict], run: Run) -> list[dict]:
    """Metrics of ok cells that no published number refers to, with their summaries."""
    wanted = {(n["cell"], n["metric"]) for n in published if n["cell"]}
    rows = []
    for c in run.cell_results():
        if not c.measured:
            continue
        for name, metric in c.metrics.items():
            if (c.cell_id, name) in wanted:
                continue
            rows.append({"cell": c.cell_id, "source": c.source, "stack": c.stack,
                         "variant": c.variant, "metric": name, "device": c.device,
                         "state": _state(c, name),
                         **stats.summarize_metric(metric)})
    return rows
