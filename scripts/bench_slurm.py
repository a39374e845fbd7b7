#!/usr/bin/env python3
"""What the Slurm runner costs, measured on a real cluster (issue 15 item 7). Not a test.

    python scripts/bench_slurm.py [--repeat 5] [--out FILE]

Needs a Slurm cluster the kit can submit to (`bash scripts/slurm-setup.sh` makes a one-node one
here). Three figures:

1. submission: every cell of the largest suite (the most cells) as job arrays, through the runner's
   own submit() (task files, batch scripts, sbatch --parsable), submitted held (sbatch --hold) and
   cancelled at once, so nothing runs; the seconds from the first task file to the last job id.
   The launcher's per-stack preparation (venvs, images) is left out: it is the same for every
   runner.
2. following: the smoke suite through `reproduce.py run --runner slurm --quick --repeat K` (2K
   tasks); the driver's CPU time while it follows the jobs (its own, and its squeue children's),
   per task, from run.json `slurm.driver_cost`.
3. overhead: the smoke suite's wall time over the sum of its cells' in-cell process times, with
   `--runner slurm` and with `--runner local` (each `--quick --repeat K`, one run each, back to
   back): what queueing, job start and polling add over running the cells in place.
Prints the figures and writes them as JSON with the machine and date (--out).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reprokit import files, results, suites  # noqa: E402
from reprokit.plan import Options, make_job, make_plan  # noqa: E402
from reprokit.runners.slurm import SlurmOptions, SlurmRunner, Task  # noqa: E402


def largest_suite() -> str:
    return max(suites.suite_names(), key=lambda n: len(suites.load_suite(n).cells))


def bench_submission(root: Path) -> dict:
    name = largest_suite()
    plan = make_plan(suites.load_suite(name), Options(quick=True, device="cpu"))
    rundir = results.RunDir(root / f"submit-{name}")
    rundir.path.mkdir(parents=True)
    kit = files.kit_info()
    runner = SlurmRunner(SlurmOptions(launcher="local", hold=True), say=lambda *_: None)
    tasks, prepared = [], {}
    for stack, cells in plan.by_stack().items():
        job = make_job(plan, stack, rundir.path.name, kit, str(rundir.cells_dir.resolve()))
        path = rundir.jobs_dir / f"{stack}.json"
        files.write_json_atomic(path, job, "job")
        by_id = {jc["id"]: jc for jc in job["cells"]}
        prepared[stack] = {"stack": stack, "python": sys.executable, "env": {}}
        tasks += [Task(c, None, by_id[c.id], path, rundir.log_path(c.id)) for c in cells]
    t0 = time.monotonic()
    records = runner.submit(rundir, prepared, tasks)
    took = time.monotonic() - t0
    subprocess.run(["scancel", *[r["job_id"] for r in records]], check=False)
    return {"suite": name, "cells": len(tasks), "job_arrays": len(records),
            "submit_s": round(took, 3), "sbatch_s": round(runner.stats["submit_s"], 3),
            "per_cell_ms": round(1000 * took / max(1, len(tasks)), 2)}


def run_smoke(root: Path, runner: str, repeat: int) -> dict:
    cmd = [sys.executable, str(REPO / "reproduce.py"), "run", "--suite", "smoke", "--quick",
           "--runner", runner, "--repeat", str(repeat), "--results", str(root), "--no-report"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    took = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    rundir = results.RunDir(max(root.iterdir(), key=lambda q: q.stat().st_mtime))
    run = rundir.load_run()
    in_cell = 0.0
    for c in rundir.load_cells():
        for proc in c.get("processes") or [c]:
            wall = proc.get("process_wall_s") or (proc.get("runner") or {}).get("process_wall_s")
            in_cell += float(wall or 0.0)
    out = {"runner": runner, "tasks": len(run["cells"]) * repeat, "run_wall_s": round(run["wall_s"], 2),
           "command_wall_s": round(took, 2), "sum_in_cell_s": round(in_cell, 2),
           "wall_over_in_cell": round(run["wall_s"] / in_cell, 2) if in_cell else None}
    cost = (run.get("slurm") or {}).get("driver_cost")
    if cost:
        n = max(1, cost["tasks_followed"])
        out["driver_cost"] = cost
        out["driver_cpu_ms_per_task"] = round(1000 * cost["follow_cpu_s"] / n, 2)
        out["squeue_cpu_ms_per_task"] = round(1000 * cost["follow_children_cpu_s"] / n, 2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="processes per smoke cell (default 5)")
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-slurm-", dir=str(REPO / "results")
                                     if (REPO / "results").is_dir() else None) as tmp:
        root = Path(tmp)
        sub = bench_submission(root)
        print(f"submission: {sub['cells']} cells of {sub['suite']} as {sub['job_arrays']} job "
              f"arrays in {sub['submit_s']} s ({sub['per_cell_ms']} ms per cell; sbatch "
              f"{sub['sbatch_s']} s of it)")
        slurm = run_smoke(root / "slurm", "slurm", args.repeat)
        local = run_smoke(root / "local", "local", args.repeat)
    print(f"following: driver CPU {slurm['driver_cpu_ms_per_task']} ms per task (+ squeue "
          f"{slurm['squeue_cpu_ms_per_task']} ms) over {slurm['tasks']} tasks, "
          f"{slurm['driver_cost']['polls']} polls")
    for r in (slurm, local):
        print(f"smoke --quick --repeat {args.repeat}, {r['runner']}: run wall {r['run_wall_s']} s "
              f"over {r['sum_in_cell_s']} s in cells = {r['wall_over_in_cell']}x")
    doc = {"measured": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "load_avg_at_end": os.getloadavg()},
           "command": "python scripts/bench_slurm.py " + " ".join(sys.argv[1:]),
           "submission": sub, "slurm": slurm, "local": local}
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
