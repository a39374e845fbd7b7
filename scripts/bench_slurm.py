#!/usr/bin/env python3
"""What the Slurm runner costs, measured on a real cluster. Not a test.

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

    python scripts/bench_slurm.py --multinode [--repeat 3] [--out FILE]

compares, on the three-node cluster of scripts/slurm-multinode.sh (SLURM_CONF set here), one node
(`--slurm-constraint rknode3`, the node with both CPUs) against all three: figure 1 (submission)
and figure 3 with `--runner slurm` only, plus the time a task holds its node outside the cell:
(run wall time x nodes used - sum of in-cell process times) / tasks, the per-task overhead (job
start, fingerprint and CPU probe of a node's first task, polling) as node-seconds. The three nodes
share this machine's two cores: the cells run slower on three nodes than on one, which the in-cell
times show.
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
MULTINODE_CONF = "/etc/slurm-multinode/slurm.conf"  # scripts/slurm-multinode.sh
sys.path.insert(0, str(REPO))

from reprokit import files, results  # noqa: E402
from reprokit.catalog import suites  # noqa: E402
from reprokit.plan.plan import Options, make_job, make_plan  # noqa: E402
from reprokit.reader import merge  # noqa: E402
from reprokit.runners.slurm import SlurmOptions, SlurmRunner, Task  # noqa: E402


def largest_suite() -> str:
    return max(suites.suite_names(), key=lambda n: len(suites.load_suite(n).cells))


def bench_submission(root: Path, constraint: str | None = None) -> dict:
    name = largest_suite()
    plan = make_plan(suites.load_suite(name), Options(quick=True, device="cpu"))
    rundir = results.RunDir(root / f"submit-{name}-{constraint or 'all'}")
    rundir.path.mkdir(parents=True)
    kit = files.kit_info()
    runner = SlurmRunner(SlurmOptions(launcher="local", hold=True, constraint=constraint),
                         say=lambda *_: None)
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


def _seconds(text: str | None) -> float | None:
    """Slurm's elapsed time ([D-]H:MM:SS or M:SS) in seconds; None when absent."""
    if not text:
        return None
    days, _, hms = str(text).rpartition("-")
    try:
        parts = [int(x) for x in hms.split(":")]
    except ValueError:
        return None
    secs = 0
    for x in parts:
        secs = secs * 60 + x
    return secs + 86400 * (int(days) if days else 0)


def run_smoke(root: Path, runner: str, repeat: int, extra: tuple[str, ...] = ()) -> dict:
    cmd = [sys.executable, str(REPO / "reproduce.py"), "run", "--suite", "smoke", "--quick",
           "--runner", runner, "--repeat", str(repeat), "--results", str(root), "--no-report",
           *extra]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    took = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    rundir = results.RunDir(max(root.iterdir(), key=lambda q: q.stat().st_mtime))
    run = rundir.load_run()
    in_cell = 0.0
    nodes: set[str] = set()
    for c in rundir.load_cells():
        for proc in c.get("processes") or [c]:
            wall = proc.get("process_wall_s") or (proc.get("runner") or {}).get("process_wall_s")
            in_cell += float(wall or 0.0)
            if proc.get("node") or (proc.get("runner") or {}).get("node"):
                nodes.add(proc.get("node") or proc["runner"]["node"])
    tasks = len(run["cells"]) * repeat
    out = {"runner": runner, "tasks": tasks, "run_wall_s": round(run["wall_s"], 2),
           "command_wall_s": round(took, 2), "sum_in_cell_s": round(in_cell, 2),
           "wall_over_in_cell": round(run["wall_s"] / in_cell, 2) if in_cell else None}
    if nodes:  # node-seconds a task holds outside its cell (job start, node probe, polling)
        out["nodes"] = sorted(nodes)
        out["node_s_outside_cells_per_task"] = round(
            (run["wall_s"] * len(nodes) - in_cell) / max(1, tasks), 2)
        # each task's own job: Slurm's elapsed time (squeue %M, whole seconds) less its cell's
        # process time: job start, the node's fingerprint (and CPU probe, for a node's first task)
        extra = []
        for cell_id in (e["cell_id"] for e in run["cells"]):
            for r in merge.load_processes(rundir, cell_id, repeat).values():
                used = _seconds((r.get("runner") or {}).get("time_used"))
                wall = (r.get("runner") or {}).get("process_wall_s")
                if used is not None and isinstance(wall, (int, float)):
                    extra.append(used - wall)
        if extra:
            out["job_s_outside_cell_per_task"] = round(sum(extra) / len(extra), 2)
            out["job_s_outside_cell_max"] = round(max(extra), 2)
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
    ap.add_argument("--multinode", action="store_true",
                    help="one node against three on scripts/slurm-multinode.sh's cluster")
    args = ap.parse_args()
    if args.multinode:
        return multinode(args)
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


def multinode(args) -> int:
    """One node (rknode3: both CPUs) against all three nodes of scripts/slurm-multinode.sh."""
    os.environ["SLURM_CONF"] = MULTINODE_CONF  # this process's sbatch and the drivers' inherit it
    if not Path(MULTINODE_CONF).exists():
        raise SystemExit(f"no {MULTINODE_CONF}: run `bash scripts/slurm-multinode.sh` first")
    load = [os.getloadavg()]
    figures = {}
    with tempfile.TemporaryDirectory(prefix="bench-slurm-mn-", dir=str(REPO / "results")
                                     if (REPO / "results").is_dir() else None) as tmp:
        root = Path(tmp)
        for label, constraint in (("1 node", "rknode3"), ("3 nodes", None)):
            sub = bench_submission(root, constraint)
            extra = ("--slurm-constraint", constraint) if constraint else ()
            smoke = run_smoke(root / label.replace(" ", "-"), "slurm", args.repeat, extra)
            load.append(os.getloadavg())
            figures[label] = {"constraint": constraint, "submission": sub, "smoke": smoke}
            print(f"{label}: submission of {sub['cells']} cells in {sub['submit_s']} s "
                  f"({sub['per_cell_ms']} ms per cell); smoke --quick --repeat {args.repeat} "
                  f"({smoke['tasks']} tasks) on {', '.join(smoke.get('nodes') or [])}: run wall "
                  f"{smoke['run_wall_s']} s, {smoke['sum_in_cell_s']} s in cells, "
                  f"{smoke.get('node_s_outside_cells_per_task')} node-s per task outside cells, "
                  f"each task's job {smoke.get('job_s_outside_cell_per_task')} s (at most "
                  f"{smoke.get('job_s_outside_cell_max')} s) longer than its cell; "
                  f"driver CPU {smoke.get('driver_cpu_ms_per_task')} ms per task "
                  f"(+ squeue {smoke.get('squeue_cpu_ms_per_task')} ms)")
    doc = {"measured": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "load_avg_during": [[round(x, 2) for x in la] for la in load]},
           "cluster": "scripts/slurm-multinode.sh: rknode1 (CPU 0), rknode2 (CPU 1), rknode3 "
                      "(CPUs 0-1), each slurmd in its own network and UTS namespace on this machine",
           "command": "python scripts/bench_slurm.py " + " ".join(sys.argv[1:]),
           "figures": figures}
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
