"""`reproduce.py status RUN`: where a run's cells are, re-attaching a Slurm run first.

For a `--runner slurm` run that is not finished (left with `--detach`, or whose driver died) and
that no live driver holds, the jobs recorded in run.json are asked about (squeue, sacct): every
cell whose job ended since is collected into the results (its result file, or a placeholder with
the job's terminal state as its reason), and the run is finished when nothing is left. `--wait`
follows the jobs until they all end. Then one line per cell: status, Slurm job, node, reason.
Exit status 0 when every cell has its result, 1 when some are still running or ended without
one, 2 a user error.
"""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("run", help="results/<run-id>, a run id, or 'latest'")
    p.add_argument("--results", default="results", help="results root (default: results/)")
    p.add_argument("--wait", action="store_true",
                   help="follow a Slurm run's jobs until every one has ended")
    p.add_argument("--json", action="store_true", help="the run's cell entries as JSON")


def run(args) -> int:
    import json
    import sys
    from pathlib import Path

    from reprokit import checks, results
    from reprokit.reader import cells
    from reprokit.run import execute_concurrent, reconcile

    rundir = results.resolve_run(args.run, Path(args.results))
    run = rundir.load_run()
    if run.get("runner") == "slurm" and not run.get("finished"):
        checks.writable_dir(rundir.path, f"the run directory {rundir.path}", "make it writable "
                            "to collect the jobs' results into it")
        attached = execute_concurrent.attach(rundir, wait_s=float("inf") if args.wait else 0.0)
        if attached is not None:
            run = attached
    rec = reconcile.reconcile(rundir, run, modify=False)
    run = rec.run
    runner_of = {}
    for cell in rec.cells.values():
        r = cell.get("runner") or {}
        runner_of[cell["cell_id"]] = r
    if args.json:
        print(json.dumps(run["cells"], indent=1))
    else:
        for e in run["cells"]:
            r = runner_of.get(e["cell_id"], {})
            where = " ".join(x for x in (f"job {r['job_id']}" if r.get("job_id") else "",
                                         f"on {r['node']}" if r.get("node") else "") if x)
            print(f"{e['status']:<12} {e['cell_id']}" + (f"  [{where}]" if where else "")
                  + (f"  {e['reason']}" if e.get("reason") and e["status"] != "ok" else ""))
        state = "finished" if run.get("finished") else "not finished"
        print(f"{rundir.path.name}: {state}; "
              + ", ".join(f"{n} {s}" for s, n in cells.status_counts(run["cells"]).items()),
              file=sys.stderr)
    bad = cells.incomplete(run)
    return 1 if bad or not run.get("finished") else 0
