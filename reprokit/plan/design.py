"""The default measurement design: processes x iterations per cell, chosen from measured costs and variances.

Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time" (ISMM 2013): with two levels (iterations in
processes), the number of iterations per process that gives the narrowest interval for a given time is

    r = ceil(sqrt((c_process / c_iteration) x (T_iteration^2 / T_process^2)))

where c_process is the cost of one more process beyond its iterations (start-up, imports, compilation,
one-shot metrics, warm-up), c_iteration the cost of one more iteration (one of every sampled metric: the
design's iterations per process apply to each), T_iteration^2 the iteration-level variance and T_process^2 the
process-level variance. The processes then fill the cell's time budget. Costs and variances come from a
recorded run (reprokit/data/cell_costs.yaml, written by tools/record_cell_costs.py); the process-level
variance, where no run with several processes per cell is recorded, is the kit's measured run-to-run spread
of one-process medians (reprokit/data/rerun_coverage.json: median |shift| = 0.674 x sqrt(2) x sd for two
normal draws). The cell's budget is `budget_factor` x its recorded one-process wall time (cell_times.yaml).
Iterations are at least the steady-state detection's `min_iterations` (data/steady_state.yaml).

A run interleaves its processes in rounds (reprokit/run/execute.py), so one run has one process count K: the
median of its cells' K&J counts, within [min_processes, max_processes]; each cell's iterations per process
are its own (the job budget's min_samples = max_samples = r; its time budget no longer stops it). `run
--repeat K` sets K by hand and keeps the suite's sampling budgets.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from reprokit import kitdata
from reprokit.plan.plan import budget_for
from reprokit.reader.model import Design, processes_of


def settings() -> dict:
    return kitdata.load("cell_costs")["design"]


def costs(suite: str, runner: str, quick: bool, protocol: str) -> tuple[dict, dict | None]:
    """({cell id: costs}, the measurement's header or None) recorded for this kind of run; a quick run
    uses the full run's costs (the same cells, the same start-up)."""
    doc = kitdata.load("cell_costs")
    for q in (quick, False):
        for m in doc["measurements"]:
            if (m["suite"], m["runner"], m["quick"], m["protocol"]) == (suite, runner, q, protocol):
                return m["cells"], m
    for m in doc["measurements"]:  # another runner: the same workloads, another start-up
        if (m["suite"], m["protocol"]) == (suite, protocol):
            return m["cells"], m
    return {}, None


def rerun_process_cv() -> tuple[float | None, str | None]:
    """(process-level CV, where it comes from) of one-process medians, from the kit's run-to-run
    measurement (rerun_coverage.json, one process per cell): sd = median |shift| / (0.6745 sqrt 2)."""
    if not kitdata.exists("rerun_coverage.json"):
        return None, None
    doc = kitdata.load("rerun_coverage.json")
    found = [m for m in doc["measurements"] if m["summary"]["processes"] == 1]
    if not found:
        return None, None
    m = found[-1]
    return m["summary"]["shift_median"] / (0.6745 * math.sqrt(2)), f"{m['command']} ({m['date']})"


def recorded_wall(suite: str, runner: str, quick: bool, protocol: str) -> dict[str, float]:
    """{cell id: one-process wall seconds} recorded in cell_times.yaml (full budget)."""
    for m in kitdata.load("cell_times")["measurements"]:
        if (m["suite"], m["runner"], m["quick"], m["protocol"]) == (suite, runner, quick, protocol):
            return dict(m["cells"])
    return {}


def kj_iterations(c_process: float, c_iteration: float, t_iteration: float, t_process: float) -> int:
    """Kalibera & Jones' optimal iterations per process (at least 1)."""
    if t_process <= 0 or c_iteration <= 0:
        return 1
    return max(1, math.ceil(math.sqrt((c_process / c_iteration) * (t_iteration ** 2 / t_process ** 2))))


def cell_design(c: dict, wall: float | None, warmup: int, t_process: float, cfg: dict,
                min_iterations: int, timeout_s: float | None = None) -> dict:
    """Processes and iterations for one cell from its costs `c` and recorded wall time. With the
    cell's time limit `timeout_s`, a process is planned to take at most `timeout_share` of it: a
    noisy within-process CV must not plan a process its limit would kill."""
    t_proc = c.get("between_cv") or t_process
    one_round = c.get("round_s") or c["iteration_s"]
    r = max(min_iterations, kj_iterations(c["start_s"] or 0.0, one_round, c["within_cv"], t_proc))
    if timeout_s:
        fits = math.floor((cfg["timeout_share"] * timeout_s - (c["start_s"] or 0.0)) / one_round) - warmup
        r = max(min_iterations, min(r, fits))
    per_process = (c["start_s"] or 0.0) + (warmup + r) * one_round
    budget = cfg["budget_factor"] * wall if wall else None
    k = math.floor(budget / per_process) if budget else cfg["min_processes"]
    k = min(cfg["max_processes"], max(cfg["min_processes"], k))
    return {"iterations": r, "processes": k, "process_s": round(per_process, 2),
            "budget_s": round(budget, 1) if budget else None, "t_process": round(t_proc, 4),
            "t_iteration": c["within_cv"]}


def run_design(cells: list, suite: str, runner: str, quick: bool, protocol: str,
               budgets: dict[str, dict], has_published: bool = True,
               timeouts: dict[str, float] | None = None) -> dict | None:
    """The design of a run of `cells` (suites.Cell). `budgets`: {cell id: the cell's job budget} (its
    warm-up count). Returns {"processes" K, "cells": {id: design}, "text", "source"}; without recorded
    costs, the fewest processes a re-run interval needs (`min_processes`) with the suite's own sampling
    budgets when the suite has published numbers to decide, else None (one process: a smoke suite)."""
    cfg = settings()
    recorded, header = costs(suite, runner, quick, protocol)
    t_process, t_source = rerun_process_cv()
    if protocol != "budget" or header is None or t_process is None:  # `--protocol published`: the
        # source's iteration counts per process, so only the number of processes is the kit's
        if not has_published:
            return None
        why = ("the published protocol fixes the iterations" if protocol != "budget" else
               "no costs recorded for this suite: tools/record_cell_costs.py RUN records them")
        return {"kind": "fixed", "processes": int(cfg["min_processes"]), "cells": {},
                "source": f"cell_costs.yaml design.min_processes ({why})",
                "text": f"{cfg['min_processes']} processes per cell, the fewest a re-run interval needs "
                        f"({why}), each with the suite's own sampling budget"}
    min_iter = int(kitdata.load("steady_state")["min_iterations"])
    walls = recorded_wall(suite, runner, False, protocol)
    out = {}
    for cell in cells:
        c = recorded.get(cell.id)
        if c is None or c.get("start_s") is None:
            continue
        warm = int((budgets.get(cell.id) or {}).get("warmup") or 0)
        out[cell.id] = cell_design(c, walls.get(cell.id), warm, t_process, cfg, min_iter,
                                   (timeouts or {}).get(cell.id))
    if not out:
        return None
    k = min(cfg["max_processes"], max(cfg["min_processes"],
                                      int(statistics.median_low([d["processes"] for d in out.values()]))))
    for d in out.values():
        d["planned_s"] = round(k * d["process_s"], 1)
    budget = budget_summary(out, cfg)
    return {"kind": "fixed", "processes": k, "cells": out, "budget": budget,
            "source": f"cell_costs.yaml (run {header['run']}, {header['machine']}, {header['date']}); "
                      f"process-level CV {t_process:.3g} from {t_source}",
            "text": f"{k} processes per cell (the median of the cells' Kalibera & Jones designs within "
                    f"{cfg['budget_factor']:g}x their one-process time, at least {cfg['min_processes']}), "
                    "each cell's iterations per process from its recorded costs and variances; "
                    + budget["text"]}


def budget_summary(cells: dict[str, dict], cfg: dict) -> dict:
    """Does the design keep its budget? The planned time of the cells (K x process_s each) against
    `budget_factor` x their recorded one-process time; a cell without a recorded time has no budget,
    and says so. The run's K is at least min_processes, so a cell whose start-up and iterations cost
    more than budget / min_processes is planned above its budget: the text counts them."""
    known = {cid: d for cid, d in cells.items() if d.get("budget_s")}
    over = sorted(cid for cid, d in known.items() if d["planned_s"] > d["budget_s"])
    planned = sum(d["planned_s"] for d in known.values())
    one = sum(d["budget_s"] for d in known.values()) / cfg["budget_factor"]
    ratio = round(planned / one, 2) if one else None
    parts = []
    if known:
        parts.append(f"planned {ratio:g}x the recorded one-process time of the {len(known)} cells that have "
                     f"one (budget {cfg['budget_factor']:g}x); {len(over)} of them above their budget"
                     + (f" ({cfg['min_processes']} processes of start-up and iterations cost more)"
                        if over else ""))
    if len(known) < len(cells):
        parts.append(f"{len(cells) - len(known)} of {len(cells)} cells without a recorded one-process time "
                     "(cell_times.yaml): no budget")
    return {"planned_s": round(planned, 1), "one_process_s": round(one, 1), "ratio": ratio,
            "over": over, "no_budget": sorted(set(cells) - set(known)), "text": "; ".join(parts)}


def process_budget(budget: dict, cell: dict | None) -> dict:
    """A job budget with the design's iterations per process for the cell (unchanged without one)."""
    if cell is None or "iterations" not in cell:
        return budget
    r = int(cell["iterations"])
    return {**budget, "min_samples": r, "max_samples": r, "time_budget_s": 0}


def auto_design(plan, runner: str, judgment: dict) -> dict:
    """The design by role (`run --design auto`, the default): `judgment` is what each cell
    can decide here (reprokit/analysis/decidability.py judge). A cell no verdict or claim depends on
    (*context*) runs once, for `min_iterations` iterations (the fewest the steady-state detection
    classifies, data/steady_state.yaml) and no time budget: its interval covers that one process and
    is labelled so; no verdict is decided on it. A cell that decides gets the fixed design's iterations
    (`run_design`, where costs are recorded) and runs sequentially: up to `design.sequential`'s
    max_processes, looked at from first_look on at the corrected confidence (reprokit/run/serial.py
    look); under Slurm, which starts every process at once, max(first_look, the fixed K) processes at
    95 %. Each cell entry's `processes` is what it runs (run.json design.kind "auto"); the run's K is
    the largest."""
    o = plan.options
    min_iter = int(kitdata.load("steady_state")["min_iterations"])
    roles = judgment["cells"]
    deciding = [c for c in plan.runnable if (roles.get(c.id) or {}).get("role") == "decides"]
    fixed = run_design(deciding, plan.suite.name, runner, o.quick, o.protocol,
                       {c.id: budget_for(c, plan.suite, o) for c in deciding}, True,
                       {c.id: float(c.timeout_s or plan.suite.defaults["timeout_s"]) for c in deciding}) \
        if deciding else None
    seq = sequential_settings()
    walls = recorded_wall(plan.suite.name, runner, False, o.protocol)
    cells: dict[str, dict] = {}
    for c in plan.runnable:
        role = (roles.get(c.id) or {}).get("role", "context")
        if role == "decides":
            d = dict(((fixed or {}).get("cells") or {}).get(c.id) or {}, role=role)
            one = d.get("process_s") or walls.get(c.id)
            if runner == "slurm":  # every process at once: no looks, one K at 95 %
                d["processes"] = looks = max(seq["first_look"], int((fixed or {}).get("processes") or 0))
            else:  # processes: the cap; the run stops adding them once it is decided
                d.update(processes=seq["max_processes"], sequential=True, first_look=seq["first_look"],
                         confidence=seq["confidence"])
                looks = seq["first_look"]  # planned: the fewest processes that can decide
        else:
            d = {"role": "context", "processes": 1, "iterations": min_iter}
            one = walls.get(c.id)  # a full-budget process: an upper estimate of a context one
            looks = 1
        d["planned_s"] = round(looks * one, 1) if one else None
        if d.get("sequential") and one:
            d["max_s"] = round(d["processes"] * one, 1)
        cells[c.id] = d
    n_dec = len(deciding)
    k = max([d["processes"] for d in cells.values()] or [1])
    text = (f"by role: {len(cells) - n_dec} context cell(s) in one process of {min_iter} iterations "
            "(no verdict is decided on them)")
    if n_dec and runner == "slurm":
        k_dec = max(d["processes"] for d in cells.values() if d["role"] == "decides")
        text += (f"; {n_dec} deciding cell(s) in {k_dec} processes each (Slurm runs every process at once: "
                 "no sequential looks, 95 % intervals)")
    elif n_dec:
        text += (f"; {n_dec} deciding cell(s) in {seq['first_look']} to {seq['max_processes']} processes, "
                 f"added until what they feed is decided ({seq['text']}), iterations per process "
                 + (f"from recorded costs ({fixed['source']})" if (fixed or {}).get("cells")
                    else "from the suite's sampling budget (no costs recorded)"))
    return {"kind": "auto", "processes": k, "cells": cells, "text": text, "judgment": judgment["text"],
            "decidability": {key: judgment[key] for key in ("device", "numbers", "claims")},
            "source": (fixed or {}).get("source") or "data/steady_state.yaml min_iterations"}


def sequential_settings() -> dict:
    """cell_costs.yaml design.sequential with the confidence of each look: 1 - alpha / looks
    (Bonferroni over the looks from first_look to max_processes), and its words."""
    s = dict(settings()["sequential"])
    looks = int(s["max_processes"]) - int(s["first_look"]) + 1
    s["looks"] = looks
    s["confidence"] = 1 - float(s["alpha"]) / looks
    s["text"] = (f"looked at after each of processes {s['first_look']}-{s['max_processes']}, each look at "
                 f"{100 * s['confidence']:.4g} % (Bonferroni over {looks} looks: at most "
                 f"{100 * float(s['alpha']):.3g} % false decisions)")
    return s


def cell_processes(design: dict | None, cell_id: str, repeat: int) -> int:
    """How many processes `cell_id` runs under a planned design (reprokit/reader/model.py answers it)."""
    return processes_of(Design.from_doc(design), cell_id, repeat)


def default_options(plan, runner: str):
    """The plan's options with the default design (processes x iterations) for `runner`, or
    unchanged where no costs are recorded and nothing is published to decide (one process). Used
    without `run --repeat K` and without sampling overrides; the design changes how often each cell
    runs, never which."""
    o = plan.options
    d = run_design(plan.runnable, plan.suite.name, runner, o.quick, o.protocol,
                   {c.id: budget_for(c, plan.suite, o) for c in plan.runnable}, bool(plan.suite.sources),
                   {c.id: float(c.timeout_s or plan.suite.defaults["timeout_s"]) for c in plan.runnable})
    return o if d is None else replace(o, repeat=d["processes"], design=d)
