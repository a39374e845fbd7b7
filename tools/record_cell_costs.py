"""Record each cell's measured costs and variances in reprokit/data/cell_costs.yaml.

    python tools/record_cell_costs.py [--partial] [--rounds N] RUN_DIR [RUN_DIR ...]

`--partial`: a run stopped between rounds (`run --repeat K` or the default design) counts too: a cell
whose finished processes are all ok gives its costs from those processes (`processes` says how many).
`--rounds N`: only each cell's first N processes (a stopped run's cells then count alike).

For every ok cell of a run and its first sampled metric (the one the design sizes the cell by): the fixed
cost of one process (`start_s`: process wall time minus the warm-up and timed seconds of its sampled
metrics, per process; so start-up, imports, compilation and one-shot metrics such as Theano's
compile_time), the cost of one steady iteration of the sizing metric (`iteration_s`, the median of the
steady-state seconds, reprokit/analysis/steady_state.py), the cost of one more iteration of the design
(`round_s`: one steady iteration of every sampled metric, since the design's iterations per process apply
to each), the iteration-level variance as a CV (`within_cv`, pooled over the processes) and, from a run
with 2 or more processes per cell, the process-level CV of the process medians (`between_cv`; null from
a one-process run). reprokit/plan/design.py picks processes x iterations from these (Kalibera & Jones
2013). One entry per (suite, runner, --quick, protocol): a new run replaces the old one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reprokit import files, kitdata, results, validate  # noqa: E402
from reprokit.analysis import cpus, steady_state  # noqa: E402
from reprokit.errors import UserError  # noqa: E402

OUT = REPO / "reprokit" / "data" / "cell_costs.yaml"
HEADER = """\
# Per cell: the fixed cost of a process beyond its sampled iterations (start_s: start-up, compilation,
# one-shot metrics), of one steady iteration of its sizing metric (iteration_s) and of every sampled
# metric (round_s: one more iteration of the design), the iteration-level CV (within_cv) and, from a
# run of 2 or more processes per cell, the process-level CV of the process medians (between_cv, else
# null), per (suite, runner, --quick, protocol). Written by tools/record_cell_costs.py RUN_DIR from the
# run's cell results; each entry names the run, the machine and the date. reprokit/plan/design.py chooses
# processes x iterations per cell from them (Kalibera & Jones, "Rigorous Benchmarking in Reasonable
# Time", ISMM 2013).
"""


def cell_costs(cell: dict, entry: dict | None) -> dict | None:
    """The costs of one ok cell result (None without a sampled metric: 2 or more samples in a process;
    a one-shot metric such as compile_time has 1 per process, K in a merged K-process result)."""
    metrics, loops = [], set()
    for m in (cell.get("metrics") or {}).values():
        loop = tuple(m.get("raw_seconds") or [])
        if max(m.get("processes") or [len(loop)]) >= 2 and len(loop) == len(m.get("samples") or []) \
                and loop not in loops:  # two metrics of one timed loop (train_wps, train_wps_synced): once
            loops.add(loop)
            metrics.append(m)
    if not metrics:
        return None
    m = metrics[0]
    kept = steady_state.of_metric({**m, "samples": m["raw_seconds"]})
    groups = steady_state.split_processes(kept["samples"], kept["processes"])
    pooled = [x for g in groups for x in g]
    iteration = statistics.median(pooled)
    within = statistics.median([statistics.stdev(g) / statistics.fmean(g) for g in groups if len(g) >= 2])
    k = len(groups)
    between = (statistics.stdev([statistics.median(g) for g in groups]) / iteration) if k >= 2 else None
    wall = (entry or {}).get("process_wall_s")
    timed = sum(sum(x.get("raw_seconds") or []) + sum(x.get("warmup_seconds") or []) for x in metrics)
    start = max(0.0, (float(wall) - timed) / k) if wall else None
    one_round = sum(statistics.median(x["raw_seconds"]) for x in metrics)
    return {"metric": next(n for n, x in cell["metrics"].items() if x is m),
            "start_s": round(start, 2) if start is not None else None,
            "iteration_s": round(iteration, 5), "round_s": round(one_round, 5), "within_cv": round(within, 4),
            "between_cv": round(between, 4) if between is not None else None, "processes": k}


def first_rounds(cell: dict, entry: dict | None, n: int) -> tuple[dict, dict | None]:
    """The cell result and run.json entry of a K-process cell cut to its first `n` processes."""
    done = cell.get("processes") or []
    if len(done) <= n:
        return cell, entry
    metrics = {}
    for name, m in (cell.get("metrics") or {}).items():
        counts = m.get("processes") or []
        keep = sum(counts[:n])
        warm = m.get("warmup_seconds") or []
        per = len(warm) // len(counts) if counts and len(warm) % len(counts) == 0 else 0
        metrics[name] = {**m, "processes": counts[:n], "raw_seconds": (m.get("raw_seconds") or [])[:keep],
                         "samples": (m.get("samples") or [])[:keep], "warmup_seconds": warm[:per * n]}
    wall = sum(float(p.get("process_wall_s") or 0.0) for p in done[:n])
    return {**cell, "metrics": metrics, "processes": done[:n]}, {**(entry or {}), "process_wall_s": wall}


def finished_ok(cell: dict, rounds: int | None = None) -> bool:
    """A cell of a stopped run whose processes so far (its first `rounds`, when given) all finished ok,
    at least one: its merged result holds their samples and its run.json entry the sum of their walls."""
    done = (cell.get("processes") or [])[:rounds]
    return cell.get("status") != "ok" and bool(done) and all(p.get("status") == "ok" for p in done)


def entry(rundir: Path, partial: bool = False, rounds: int | None = None) -> dict:
    rd = results.RunDir(rundir)
    run = rd.load_run()
    entries = {e["cell_id"]: e for e in run["cells"]}
    cells = {}
    for c in rd.load_cells():
        if c.get("status") == "ok" or (partial and finished_ok(c, rounds)):
            e = entries.get(c["cell_id"])
            if rounds:
                c, e = first_rounds(c, e, rounds)
            costs = cell_costs(c, e)
            if costs:
                cells[c["cell_id"]] = costs
    if not cells:
        raise UserError(f"{rundir} has no ok cell with timed samples; record a run whose cells ran ok "
                        "(--partial: one stopped between rounds)")
    return {"suite": run["suite"], "runner": run["runner"], "quick": bool(run["quick"]),
            "protocol": run["protocol"], "run": run["run_id"], "repeat": int(run.get("repeat") or 1),
            "machine": cpus.short_label((run.get("host_fingerprint") or {}).get("cpu") or {}),
            "date": str(run["started"])[:10], "cells": dict(sorted(cells.items()))}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="record_cell_costs.py", description=__doc__.split("\n")[0])
    p.add_argument("--partial", action="store_true",
                   help="a run stopped between rounds counts too (cells whose finished processes are ok)")
    p.add_argument("--rounds", type=int, metavar="N", help="only each cell's first N processes")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    args = p.parse_args(argv)
    doc = files.load_yaml(OUT.read_text())  # keeps its `design` settings
    for d in args.runs:
        try:
            new = entry(Path(d), args.partial, args.rounds)
        except UserError as e:
            print(f"record_cell_costs: {e}", file=sys.stderr)
            return 2
        key = (new["suite"], new["runner"], new["quick"], new["protocol"])
        doc["measurements"] = [m for m in doc["measurements"]
                               if (m["suite"], m["runner"], m["quick"], m["protocol"]) != key] + [new]
    validate.check("cell_costs", doc, str(OUT))
    design = yaml.safe_dump({"design": doc.pop("design")}, sort_keys=False, width=110)
    measured = yaml.safe_dump({"measurements": doc["measurements"]}, sort_keys=False, width=110)
    files.write_text_atomic(OUT, HEADER + "schema_version: 1\n" + design + measured)
    kitdata.forget()
    print(f"wrote {OUT.relative_to(REPO)}: {sum(len(m['cells']) for m in doc['measurements'])} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
