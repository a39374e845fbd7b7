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
    from reprokit.reader.load import load
    from reprokit.run import execute_concurrent

    rundir = results.resolve_run(args.run, Path(args.results))
    run = load(rundir)
    if run.runner == "slurm" and not run.finished:  # collect what its jobs finished, then read again
        checks.writable_dir(rundir.path, f"the run directory {rundir.path}", "make it writable "
                            "to collect the jobs' results into it")
        execute_concurrent.attach(rundir, wait_s=float("inf") if args.wait else 0.0)
        run = load(rundir)
    if args.json:
        print(json.dumps(run.doc["cells"], indent=1))
    else:
        for e in run.entries:
            cell = run.result(e.cell_id)
            r = cell.runner if cell is not None else {}
            where = " ".join(x for x in (f"job {r['job_id']}" if r.get("job_id") else "",
                                         f"on {r['node']}" if r.get("node") else "") if x)
            print(f"{e.status:<12} {e.cell_id}" + (f"  [{where}]" if where else "")
                  + (f"  {e.reason}" if e.reason and e.status != "ok" else ""))
        state = "finished" if run.finished else "not finished"
        print(f"{rundir.path.name}: {state}; "
              + ", ".join(f"{n} {s}" for s, n in cells.status_counts(run.doc["cells"]).items()),
              file=sys.stderr)
    return 1 if run.incomplete() or not run.finished else 0
