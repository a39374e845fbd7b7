"""`reproduce.py run --suite S`: plan, run every cell, write results and the report."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from reprokit import datasets, results, suites
from reprokit.errors import UserError
from reprokit.execute import check_resume_repeat, execute, exit_code
from reprokit.plan import Options, make_plan
from reprokit.runners.select import choose_runner


def add_arguments(p) -> None:
    p.add_argument("--suite", required=True, help="suite name (see `reproduce.py list`)")
    p.add_argument("--quick", action="store_true",
                   help="short run: minimum samples only, no time budget beyond them")
    p.add_argument("--protocol", choices=["budget", "published"], default="budget",
                   help="budget: time-bounded sampling (default); published: the original "
                        "iteration counts (hours on a CPU)")
    p.add_argument("--runner", choices=["auto", "local", "docker"], default="auto",
                   help="auto (default): docker when an engine answers, local otherwise")
    p.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    p.add_argument("--gpus", help="GPU count or comma-separated ids for the docker runner")
    p.add_argument("--cells", nargs="+", default=[], metavar="GLOB",
                   help="only cells whose id matches one of these glob patterns")
    p.add_argument("--min-samples", type=int, help="override the suite's minimum timed samples")
    p.add_argument("--time-budget", type=float, help="override the per-metric time budget (s)")
    p.add_argument("--results", default="results", help="results root (default: results/)")
    p.add_argument("--repeat", metavar="K",
                   help="run every cell in K fresh processes (default 1), interleaved across cells "
                        "(round 1 runs every cell once, then round 2, ...); the samples of the K "
                        "processes are merged into the cell's result, with each one's count")
    p.add_argument("--resume", metavar="RUN",
                   help="continue RUN, skipping cells already ok (with --repeat K: the processes "
                        "already ok; K comes from RUN)")
    p.add_argument("--no-report", action="store_true", help="do not render the report")
    p.add_argument("--data", metavar="DIR",
                   help="real data files (see `reproduce.py data`): cells that read PTB, "
                        "WikiText-2 or Nietzsche use them instead of the stand-ins")
    p.add_argument("--data-lock", metavar="PATH",
                   help="lock file of data digests (default: $REPROKIT_DATA_LOCK or "
                        "~/.cache/reprokit/data-lock.json)")


def _check_space(root: Path, need_mb: int = 200) -> None:
    root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(root).free // 2**20
    if free < need_mb:
        raise UserError(f"only {free} MB free under {root}; free at least {need_mb} MB or pass "
                        "--results DIR on another disk")


def parse_repeat(value: str | None) -> int | None:
    """`--repeat K`: an integer of at least 1 (None when not given)."""
    if value is None:
        return None
    try:
        k = int(value)
    except ValueError:
        k = 0
    if k < 1:
        raise UserError(f"--repeat must be an integer of at least 1, not '{value}'")
    return k


def run(args) -> int:
    suite = suites.load_suite(args.suite)
    if args.min_samples is not None and args.min_samples < 1:
        raise UserError("--min-samples must be at least 1")
    repeat = parse_repeat(args.repeat)
    root = Path(args.results)
    _check_space(root)
    resumed = results.resolve_run(args.resume, root) if args.resume else None
    if resumed is not None:  # K comes from the run being resumed
        repeat = check_resume_repeat(resumed.load_run(), repeat)
    options = Options(quick=args.quick, protocol=args.protocol, device="cpu", cells=args.cells,
                      min_samples=args.min_samples, time_budget_s=args.time_budget,
                      repeat=repeat or 1)
    plan = make_plan(suite, options)
    if args.data:
        options.data = datasets.prepare_run(plan.runnable, args.data, args.data_lock,
                                            say=lambda m: print(m, file=sys.stderr))
    elif args.data_lock:
        raise UserError("--data-lock applies with --data DIR only")
    runner, device, why = choose_runner(args.runner, args.device, args.gpus,
                                        sorted(plan.by_stack()))
    plan.options.device = device
    print(f"runner: {runner.name} ({why}); device: {device}", file=sys.stderr)
    if resumed is not None:
        rundir = resumed
    else:
        rundir = results.RunDir(root / results.new_run_id(suite.name))
    print(f"results: {rundir.path}", file=sys.stderr)
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    run_record = execute(plan, runner, rundir, sys.argv[:], resume=bool(args.resume), say=say)
    if not args.no_report:
        from reprokit import report
        for p in report.render(rundir):
            print(f"report: {p}", file=sys.stderr)
    counts: dict[str, int] = {}
    for c in run_record["cells"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    print(f"done in {run_record['wall_s']:.0f} s: "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())), file=sys.stderr)
    return exit_code(run_record)
