"""How healthy a run was, from its run record and cell results (pure, no rendering).

What the report says about the run itself rather than about the published numbers: the machine's
load around every cell (`machine_load`), the driver's time beside the cells' (`driver_overhead`),
how the intervals were made and how far they carry between runs (`interval_summary`, with the kit's
own measurement of run-to-run spread, `rerun_coverage`), and the cells without a usable result
(`cells_not_run`, `incomplete_cells`); on a GPU run, each GPU cell's clocks, power, throttling and other
processes (`gpu_health`) and the measured GEMM rate beside the datasheet peak (`gpu_peak_summary`).
"""

from __future__ import annotations

from reprokit import kitdata
from reprokit.analysis import flops, run_level, stats
from reprokit.probes import jit_cache
from reprokit.reader.frozen import mapping
from reprokit.reader.model import Run
from reprokit.reader.result import CellResult


def driver_overhead(run: Run) -> dict:
    per_cell = []
    total = 0.0
    for e in run.entries:
        pw = e.process_wall_s
        cell = run.result(e.cell_id)
        w = cell.wall_s if cell is not None else None
        if pw is not None:
            total += pw
        per_cell.append({"cell_id": e.cell_id, "process_wall_s": pw, "wall_s": w,
                         "overhead_s": pw - w if pw is not None and w is not None else None})
    wall = run.wall_s
    return {"run_wall_s": wall, "cells_process_wall_s": total,
            "driver_overhead_s": wall - total if wall is not None else None, "cells": per_cell}


INTERVAL_METHODS = {
    "binomial_order_statistic": "exact order-statistic interval of the median, n >= 6",
    "min_max": "[min, max] of fewer than 6 samples",
    "process_medians_order_statistic": "order-statistic interval over 6 or more process medians",
    "process_medians_min_max": "[min, max] of fewer than 6 process medians",
    "process_t": "confidence interval of the central value over 2 or more processes: t on the process "
    "medians (their logarithms), df = processes - 1, half-width t s / sqrt(K); with 3 or more processes the "
    "prediction interval for a re-run (t s sqrt(2/K)) beside it (Kalibera & Jones 2013)",
    "process_figures_process_t": "confidence interval over 2 or more processes' figures as the source "
    "defined them: t on the process figures, df = processes - 1 (prediction interval for a re-run beside it)",
    "process_t_rerun": "re-run interval over 2 or more processes: t on the process medians, "
    "df = processes - 1 "
    "(Kalibera & Jones 2013)",
    "none": "a single sample: no interval",
}
LEVELS_TEXT = {"process": "iterations of one process: covers that process only",
               "median": "processes and their iterations: covers the cell's central value (a re-run's "
                         "median: the prediction interval)",
               "rerun": "processes and their iterations: covers a re-run of the same design"}


def interval_summary(run: Run) -> dict:
    """How the run's intervals were made: per label (coverage) and method, how many timed metrics; the
    median CV; with run --repeat K the spread between process medians against the within-process
    interval; and the kit's measured run-to-run coverage (context)."""
    kinds: dict[tuple, dict] = {}
    cvs, spreads, halves = [], [], []
    for c in run.cell_results():
        if not c.measured:
            continue
        for m in c.metrics.values():
            if not m.get("samples"):
                continue
            summ = stats.summarize_metric(m)
            if summ.get("cv") is not None:
                cvs.append(summ["cv"])
            between = summ.get("between") or {}
            if between.get("spread_rel") is not None and between.get("within_half_width_rel") is not None:
                spreads.append(between["spread_rel"])
                halves.append(between["within_half_width_rel"])
            method = summ.get("ci_method") or "none"
            key = (summ.get("ci_label") or "no interval", method)
            covers = summ.get("ci_covers") if method != "none" else None
            k = kinds.setdefault(key, {"label": key[0], "method": method,
                                       "method_text": INTERVAL_METHODS.get(method, method),
                                       "levels": summ.get("ci_levels") if covers else None,
                                       "covers": covers, "levels_text": LEVELS_TEXT.get(covers),
                                       "coverage": summ.get("ci_coverage"), "metrics": 0})
            k["metrics"] += 1
            if summ.get("ci_coverage") is not None:  # the least any interval of this kind covers
                k["coverage"] = min(k["coverage"] if k["coverage"] is not None else 1.0, summ["ci_coverage"])
    repeat = run.repeat
    between = None
    if spreads:
        spread, half = _upper_median(spreads), _upper_median(halves)
        between = {"metrics": len(spreads), "spread_median": spread, "within_half_width_median": half,
                   "narrower": half < spread / 2}
    return {"kinds": sorted(kinds.values(), key=lambda k: (-k["metrics"], k["label"])), "repeat": repeat,
            "rerun": rerun_coverage(repeat, run),
            "rerun_repeated": None if repeat > 1 else rerun_coverage(3, run),
            "between": between, "design": _design_text(run),
            "median_cv": _upper_median(cvs) if cvs else None,
            "metrics": sum(k["metrics"] for k in kinds.values())}


def plan_summary(run: Run) -> dict | None:
    """What the run planned by role and under --time-limit: {"judgment" (what it can decide here),
    "design" (how each role is measured), "time_limit_s", "left" (cells the limit left, with why)};
    None for a run without a design by role or a time limit."""
    by_role = run.design is not None and run.design.by_role
    limit = run.options.time_limit_s
    if not by_role and not limit:
        return None
    left, partial = [], []  # cells the limit left whole; cells it left after some processes
    for e in run.entries:
        if e.status == "skipped" and e.skip is not None:
            c = run.result(e.cell_id)
            (partial if c is not None and c.measured else left).append(
                {"cell_id": e.cell_id, "reason": c.partial if c is not None and c.measured else e.reason})
    return {"judgment": run.design.judgment if by_role else None,
            "design": run.design.text if by_role else None, "time_limit_s": limit, "left": left,
            "partial": partial}


def _design_text(run: Run) -> str | None:
    """The design's own account of its processes and its time against the recorded one-process time
    (run.json design.text), for a design that states its budget (reprokit/plan/design.py
    budget_summary); None without one (--repeat K, or a design that does not state it)."""
    d = run.design
    return d.text if d is not None and d.budget is not None else None


def _upper_median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def rerun_coverage(repeat: int = 1, run: Run | None = None) -> dict | None:
    """The kit's own measurement of run-to-run spread on one machine (reprokit/data/rerun_coverage.json,
    written by scripts/bench_rerun_coverage.py with its command, machine and date) made with one process
    per cell when `repeat` is 1, else with several; None when there is none. `current`: it measured the
    intervals the kit makes today (re-run intervals over processes), not an older kind."""
    if not kitdata.exists("rerun_coverage.json"):
        return None
    doc = kitdata.load("rerun_coverage.json")
    found = [m for m in doc["measurements"] if (m["summary"]["processes"] > 1) == (repeat > 1)]
    if not found:
        return None
    basis = _term_basis(run)  # the measurement of intervals widened as this run's are, where there is one
    m = next((m for m in reversed(found) if _basis_of(m) == basis), found[-1])
    s = m["summary"]
    per_cell = "one process per cell" if s["processes"] == 1 else f"{s['processes']} processes per cell"
    short = (f"{s['inside']} of {s['pairs']} medians of a second run ({s['coverage']:.0%}) fell inside the "
             f"first run's intervals, {per_cell}{TERM_TEXT[_basis_of(m)]}")
    text = (f"{short} ({', '.join(s['interval_labels'])}); the medians moved by {s['shift_median']:.1%} "
            f"(median over metrics; {s['shift_p90']:.0%} at the 90th percentile) while the intervals' median "
            f"half-width was {s['half_width_median']:.1%} ({m['command']}, {m['machine']}, {m['date']}"
            + _loads(m) + ")")
    other = run is not None and run.device != m.get("device", "cpu")  # never another device's
    # calibration quoted as this run's
    return {"text": text, "short": short, "command": m["command"], "machine": m["machine"], "date": m["date"],
            "current": any("re-run" in label or "prediction" in label for label in s["interval_labels"]),
            "other_device": other, "run_term": {"basis": _basis_of(m)}, **s}


TERM_TEXT = {"history": " with the between-run term of the host's history",
             "default": " with the kit's default between-run term", "none": ""}


def _basis_of(m: dict) -> str:
    """The between-run term a measurement's intervals carried (none: the processes' own)."""
    return (m.get("run_term") or {}).get("basis", "none")


def _term_basis(run: Run | None) -> str:
    if run is None:
        return "none"
    basis = run_level.term(run.history, "gpu" if run.device == "gpu" else "cpu").basis
    return basis if basis in TERM_TEXT else "none"


def _loads(m: dict) -> str:
    """'; the highest 1-minute load of each run: a, b' when the measurement recorded it, else ''."""
    loads = [x for x in m.get("load_1min") or [] if x]
    return f"; the highest 1-minute load of each run: {', '.join(f'{x:.1f}' for x in loads)}" if loads else ""


def machine_load(run: Run) -> dict:
    """The 1-minute load average around every cell against the host's core count. A cell can keep
    every usable core busy itself, and its own threads are in the average read just after it (and,
    decaying, before the next one), so a cell counts as loaded only above cores + 1: at least one
    runnable thread more than the benchmark can account for. The CPU peak probe, which runs before
    any cell, counts as loaded above the core count."""
    cpu = run.machine.cpu
    cores = cpu.get("usable_cores") or cpu.get("logical_cores")
    limit = cores + 1 if cores else None
    per_cell = []
    cells = run.cell_results()
    for c in cells:
        before, after = ((c.load_avg.get(k) or [None])[0] for k in ("before", "after"))
        if before is None and after is None:
            continue
        worst = max(x for x in (before, after) if x is not None)
        per_cell.append({"cell_id": c.cell_id, "before_1min": before, "after_1min": after,
                         "high": limit is not None and worst > limit})
    start = run.host.get("load_avg")
    probe = run.cpu_peak.get("load_avg_1min") if run.cpu_peak is not None else None
    high = [c["cell_id"] for c in per_cell if c["high"]]
    return {"cores": cores, "limit_1min": limit, "host_at_start": start if isinstance(start, list) else None,
            "cpu_peak_probe_1min": probe,
            "cpu_peak_probe_high": bool(cores) and probe is not None and probe > cores,
            "cells": per_cell, "high_cells": high,
            "max_1min": max((x for c in per_cell for x in (c["before_1min"], c["after_1min"])
                             if x is not None), default=None),
            "warning": bool(high), "effect": load_effect(cells, set(high), len(per_cell), limit)}


def load_effect(cells: list[CellResult], high: set[str], measured: int,
                limit: float | None) -> dict | None:
    """What the load did to the intervals: how many cells ran loaded, and the median
    relative half-width and CV of their timed metrics against the other cells'; None without a loaded
    cell. `text` says it in one sentence (the report's load warning, instead of a list of cell ids)."""
    if not high:
        return None
    groups: dict[bool, dict[str, list[float]]] = {True: {"half": [], "cv": []}, False: {"half": [], "cv": []}}
    for c in cells:
        if not c.measured:
            continue
        g = groups[c.cell_id in high]
        for m in c.metrics.values():
            if len(m.get("samples") or []) < 2:
                continue
            summ = stats.summarize_metric(m)
            if summ.get("cv") is not None:
                g["cv"].append(summ["cv"])
            if summ.get("ci_low") is not None and summ.get("median"):
                g["half"].append((summ["ci_high"] - summ["ci_low"]) / 2 / abs(summ["median"]))

    def med(xs: list[float]) -> float | None:
        return _upper_median(xs) if xs else None

    out = {"loaded_cells": len(high), "cells": measured,
           "loaded_half_width_median": med(groups[True]["half"]),
           "other_half_width_median": med(groups[False]["half"]),
           "loaded_cv_median": med(groups[True]["cv"]), "other_cv_median": med(groups[False]["cv"])}
    text = f"{len(high)} of {measured} cells ran with the 1-minute load above {limit:g}"
    lh, oh = out["loaded_half_width_median"], out["other_half_width_median"]
    lc, oc = out["loaded_cv_median"], out["other_cv_median"]
    if lh is not None and oh is not None:
        text += (f": their intervals' median half-width was {100 * lh:.3g} % of the median against "
                 f"{100 * oh:.3g} % for the other cells")
        if lc is not None and oc is not None:
            text += f" (CV {100 * lc:.3g} % against {100 * oc:.3g} %)"
    elif lh is not None:
        text += (f": their intervals' median half-width was {100 * lh:.3g} % of the median (every cell "
                 "ran loaded)")
    out["text"] = text
    return out


def cells_not_run(run: Run) -> list[dict]:
    out = []
    seen = set()
    for e in run.entries:
        c = run.result(e.cell_id)
        seen.add(e.cell_id)
        if c is None and e.status != "ok":
            out.append({"cell_id": e.cell_id, "stack": e.stack, "status": e.status,
                        "reason": e.reason or "no result file", "log_file": None})
        elif c is not None and not c.ok:  # one measured by only some processes says what it reports
            reason = f"reported from {c.partial}" if c.partial else c.reason
            out.append({"cell_id": e.cell_id, "stack": e.stack, "status": c.status,
                        "reason": "; ".join([reason or "no reason given", *c.cuts()]),
                        "log_file": c.log_file})
    for cid, c in run.results.items():
        if cid not in seen and not c.ok:
            out.append({"cell_id": cid, "stack": c.stack, "status": c.status,
                        "reason": c.reason, "log_file": c.log_file})
    return out


def incomplete_cells(run: Run) -> list[dict]:
    """Cells with no usable result (missing, invalid, interrupted, pending), each with its reason:
    the report says so at the top instead of claiming every cell ran."""
    return [{"cell_id": e.cell_id, "stack": e.stack, "status": e.status,
             "label": e.status.upper(), "reason": e.reason}
            for e in run.incomplete()]


def _short_uuid(uuid: str | None) -> str:
    return (uuid or "GPU ?")[:12]


NOT_RECORDED = ("the cell's result was written, but its driver was stopped before it "
                "added the GPU state it observed (the run adopted the result on resume)")


def gpu_health(cells: list[CellResult]) -> dict:
    """The NVML state of every GPU cell (its `gpu_state`, reprokit/probes/gpu_state.py): per cell and GPU the
    SM clock, power and temperature before and after it, and which cells ran throttled (a reason of
    reprokit/data/gpu_clock_reasons.yaml that counts as throttling, seen in any sample) or beside
    another compute process. The report labels those cells as it labels cells run under load. A CPU
    cell has no `gpu_state` and is not listed."""
    per_cell, throttled, shared, errors = [], [], [], []
    for c in cells:
        st = c.gpu_state
        if st is None:
            if c.device == "gpu" and c.ok and not c.runner:
                # the cell wrote its result, but its driver was stopped before it added what it
                # observed around the process (runner, GPUs, NVML state); the run adopted the result
                per_cell.append({"cell_id": c.cell_id, "gpus": [], "throttled": [], "shared": [],
                                 "unattributed": [], "samples": None, "error": NOT_RECORDED,
                                 "jit": jit_cache.describe(c.doc)})
                errors.append(c.cell_id)
            continue
        seen = mapping(st.get("reasons_seen"))
        samples = st.get("samples")
        reasons = [f"{n} ({seen[n]} of {samples} samples)" if n in seen and samples else n
                   for n in st.get("throttled") or []]
        others = [f"pid {p.get('pid')}"
                  + (f" ({p['used_memory_mib']:.0f} MiB)" if p.get("used_memory_mib") is not None else "")
                  + f" on {_short_uuid(p.get('gpu_uuid'))}" for p in st.get("shared") or []]
        after = {s.get("uuid"): s for s in st.get("after") or []}
        uuids = [s.get("uuid") for s in st.get("before") or []]
        uuids += [u for u in after if u not in uuids]
        before = {s.get("uuid"): s for s in st.get("before") or []}
        gpus = []
        for u in uuids:
            b, a = mapping(before.get(u)), mapping(after.get(u))
            gpus.append({"uuid": u, "gpu": _short_uuid(u),
                         "sm_clock_before_mhz": b.get("sm_clock_mhz"),
                         "sm_clock_after_mhz": a.get("sm_clock_mhz"),
                         "max_sm_clock_mhz": a.get("max_sm_clock_mhz") or b.get("max_sm_clock_mhz"),
                         "power_before_w": b.get("power_draw_w"), "power_after_w": a.get("power_draw_w"),
                         "power_limit_w": a.get("power_limit_w") or b.get("power_limit_w"),
                         "temperature_before_c": b.get("temperature_c"),
                         "temperature_after_c": a.get("temperature_c")})
        unknown = [f"pid {p.get('pid')} on {_short_uuid(p.get('gpu_uuid'))}"
                   for p in st.get("unattributed") or []]
        entry = {"cell_id": c.cell_id, "gpus": gpus, "throttled": reasons, "shared": others,
                 "unattributed": unknown, "jit": jit_cache.describe(c.doc),
                 "error": st.get("error"), "samples": samples}
        per_cell.append(entry)
        if reasons:
            throttled.append(c.cell_id)
        if others:
            shared.append(c.cell_id)
        if st.get("error") and not gpus:
            errors.append(c.cell_id)
    labels = {c["cell_id"]: "; ".join(
        (["GPU throttled: " + ", ".join(n.split(" (")[0] for n in c["throttled"])] if c["throttled"] else [])
        + (["GPU shared with another process"] if c["shared"] else []))
        for c in per_cell if c["throttled"] or c["shared"]}
    return {"cells": per_cell, "throttled_cells": throttled, "shared_cells": shared,
            "unread_cells": errors, "warning": bool(throttled or shared), "labels": labels}


def gpu_peak_summary(run: Run) -> dict | None:
    """The run's measured GPU GEMM rates (run.json `gpu_peak`, reprokit/probes/gpu_peak.py) beside the
    datasheet peaks of peaks.yaml (fp32 CUDA-core and TF32 tensor), as `cpu_peak` is shown beside the
    CPU's theoretical peak; None for a run that did not record one."""
    peak = run.gpu_peak
    if peak is None:
        return None
    if "gpus" not in peak:
        why = peak.get("skipped") or peak.get("error") or "no GPU measured"
        return {"measured": False, "text": ("skipped: " if "skipped" in peak else "failed: ") + why,
                "gpus": [], "method": None}
    rows = []
    for g in peak.get("gpus") or []:
        hit = flops.find_gpu(g.get("name"))
        sheet32 = hit["fp32_tflops"] if hit else None
        sheet_tf32 = hit.get("tf32_tensor_tflops") if hit else None
        fp32, tf32 = g.get("fp32_tflops"), g.get("tf32_tflops")
        rows.append({"index": g.get("index"), "name": g.get("name"), "uuid": g.get("uuid"),
                     "fp32_tflops": fp32, "tf32_tflops": tf32,
                     "datasheet_fp32_tflops": sheet32, "datasheet_tf32_tflops": sheet_tf32,
                     "datasheet": f"peaks.yaml {hit['entry']}" if hit else "no peaks.yaml entry",
                     "fp32_fraction": fp32 / sheet32 if fp32 and sheet32 else None,
                     "tf32_fraction": tf32 / sheet_tf32 if tf32 and sheet_tf32 else None,
                     "note": g.get("error") or g.get("tf32_reason")})
        rows[-1]["text"] = _gemm_text(rows[-1])
    return {"measured": True, "text": None, "gpus": rows, "method": peak.get("method")}


def _gemm_text(g: dict) -> str:
    """'fp32 51.2 TFLOP/s (76% of the datasheet's 67; peaks.yaml h100-sxm); TF32 ...' for one GPU."""
    parts = []
    for label, key in (("fp32", "fp32"), ("TF32", "tf32")):
        rate, sheet, frac = g[f"{key}_tflops"], g[f"datasheet_{key}_tflops"], g[f"{key}_fraction"]
        if rate is None:
            continue
        text = f"{label} {rate:.3g} TFLOP/s"
        if frac is not None:
            text += f" ({frac:.0%} of the datasheet's {sheet:.3g})"
        parts.append(text)
    text = "; ".join(parts) or "no rate measured"
    text += f" [{g['name']}, datasheet: {g['datasheet']}]"
    return text + (f"; {g['note']}" if g.get("note") else "")
