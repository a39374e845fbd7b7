"""`reproduce.py run --suite S`: its options; the driver runs it; then the report.

The driver (reprokit/run/driver.py) plans, runs every cell and writes results. Exit status: 0 every
cell measured; 1 some cell did not finish ok, or the Docker engine stopped answering mid-run; 2 a user
error (one line); 3 a bug of the kit; 128 + the signal when interrupted (130 SIGINT, 143 SIGTERM, 129
SIGHUP: the running cell is stopped and recorded as interrupted, no report is rendered, `--resume RUN`
continues).
"""

from __future__ import annotations

import sys

from reprokit import checks
from reprokit.reader.cells import status_counts
from reprokit.reader.load import load
from reprokit.run import driver
from reprokit.run.request import RunRequest
from reprokit.runners import slurm_setup


def add_arguments(p) -> None:
    p.add_argument("--suite", required=True, help="suite name (see `reproduce.py list`)")
    p.add_argument("--quick", action="store_true",
                   help="short run: minimum samples only, no time budget beyond them")
    p.add_argument("--protocol", choices=["budget", "published"], default="budget",
                   help="budget: time-bounded sampling (default); published: the original "
                        "iteration counts (hours on a CPU)")
    p.add_argument("--runner", choices=["auto", "local", "docker", "slurm"], default="auto",
                   help="auto (default): docker when an engine answers, local otherwise; slurm: "
                        "every cell as a Slurm job-array task (the --slurm-* options)")
    p.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    p.add_argument("--gpus", type=checks.gpus_option,
                   help="GPU count or comma-separated ids for the docker runner")
    p.add_argument("--cells", nargs="+", default=[], metavar="GLOB",
                   help="only cells whose id matches one of these glob patterns")
    p.add_argument("--min-samples", help="override the suite's minimum timed samples (1 to 100000)",
                   type=checks.option("--min-samples", integer=True, low=1, high=100_000, example="6"))
    p.add_argument("--time-budget", help="override the per-metric time budget (s, 0 to 86400)",
                   type=checks.option("--time-budget", low=0, high=86_400, unit="of seconds",
                                      example="20"))
    p.add_argument("--results", default="results", help="results root (default: results/)")
    p.add_argument("--repeat", metavar="K",
                   type=checks.option("--repeat", integer=True, low=1, high=100, example="3"),
                   help="run every cell in K fresh processes (default: the design of reprokit/plan/design.py "
                        "from data/cell_costs.yaml, else 1), interleaved across cells "
                        "(round 1 runs every cell once, then round 2, ...); the samples of the K "
                        "processes are merged into the cell's result, with each one's count")
    p.add_argument("--design", choices=["auto", "full"], default=None,
                   help="auto (default): what each cell can decide here sets its design: a cell no "
                        "verdict or claim depends on is measured once, briefly, for context "
                        "(docs/verdicts.md); full: every cell in the fixed multi-process design of "
                        "data/cell_costs.yaml, for a re-run interval of every cell; with --resume it must be "
                        "the run's own")
    p.add_argument("--time-limit", metavar="DURATION", type=checks.duration("--time-limit"),
                   help="a wall-time limit for the whole run (e.g. 14m, 900s, 1.5h): cells are "
                        "ordered by the verdicts and claims they decide per second of their recorded "
                        "cost, those that do not fit are left (listed, with the time they would take) "
                        "and a cell still running at the limit is stopped; the report renders from "
                        "what ran")
    p.add_argument("--resume", metavar="RUN",
                   help="continue RUN, skipping cells already ok (with --repeat K: the processes "
                        "already ok; K comes from RUN; its cells too, unless --cells is given); the "
                        "other options that change measurements must be the run's")
    p.add_argument("--allow-changed-data", action="store_true",
                   help="with --resume: resume although the suite's data changed what some cells "
                        "measure since the run started (mixes two definitions; recorded in run.json)")
    p.add_argument("--no-report", action="store_true", help="do not render the report")
    p.add_argument("--data", metavar="DIR",
                   help="real data files (see `reproduce.py data`): cells that read PTB, "
                        "WikiText-2 or Nietzsche use them instead of the stand-ins")
    p.add_argument("--data-subset", action="store_true",
                   help="with --data: the files are a deliberate subset (a trimmed copy), accepted "
                        "though their counts are far from the data set's; the run records it")
    slurm_setup.slurm_arguments(p)
    from reprokit.runners import byo

    byo.add_arguments(p)  # --python STACK=PATH, --python-config FILE
    p.add_argument("--data-lock", metavar="PATH",
                   help="lock file of data digests (default: $REPROKIT_DATA_LOCK or "
                        "~/.cache/reprokit/data-lock.json)")


def run(args) -> int:
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    rundir, _ = driver.drive(RunRequest.from_args(args), sys.argv[:], say)
    run = load(rundir)  # the run as its files say, read as every later reader reads it
    if run.slurm is not None and run.slurm.detached:
        return 0  # the jobs run on: `status RUN` / `report RUN` / `--resume RUN` re-attach
    if not args.no_report:
        from reprokit.report import report
        for p in report.render(rundir):  # judged with the data the run started with
            say(f"report: {p}")
    counts = status_counts({"status": e.status} for e in run.entries)
    say(f"done in {run.wall_s or 0:.0f} s: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    partial = [c for c in run.measured() if not c.ok]
    if partial:
        shown = "; ".join(f"{c.cell_id}: {c.partial}" for c in partial[:3])
        say(f"{len(partial)} cell(s) reported from the processes they finished: {shown}"
            + ("; ..." if len(partial) > 3 else ""))
    if not run.measured() and not run.not_ok():
        from reprokit.reader.model import NOTHING_MEASURED
        say(f"reproduce.py: {NOTHING_MEASURED}")
    return run.exit_code
