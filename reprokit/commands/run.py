"""`reproduce.py run --suite S`: plan, run every cell, write results and the report.

One driver per run: the run directory is made exclusively and locked (reprokit/lifecycle.py)
before anything is written into it; `--resume RUN` takes the same lock, reconciles run.json with
the files on disk (reprokit/reconcile.py) and refuses when an option that changes measurements
differs from the run's. Exit status: 0 every cell measured; 1 some cell did not finish ok, or the
Docker engine stopped answering mid-run; 2 a user error (one line); 3 a bug of the kit; 128 + the
signal when interrupted (130 SIGINT, 143 SIGTERM, 129 SIGHUP: the running cell is stopped and
recorded as interrupted, no report is rendered, `--resume RUN` continues).
"""

from __future__ import annotations

import sys
from pathlib import Path

from reprokit import checks, datasets, lifecycle, reconcile, results, suites
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
                   help="run every cell in K fresh processes (default 1), interleaved across cells "
                        "(round 1 runs every cell once, then round 2, ...); the samples of the K "
                        "processes are merged into the cell's result, with each one's count")
    p.add_argument("--resume", metavar="RUN",
                   help="continue RUN, skipping cells already ok (with --repeat K: the processes "
                        "already ok; K comes from RUN); the other options that change measurements "
                        "must be the run's")
    p.add_argument("--no-report", action="store_true", help="do not render the report")
    p.add_argument("--data", metavar="DIR",
                   help="real data files (see `reproduce.py data`): cells that read PTB, "
                        "WikiText-2 or Nietzsche use them instead of the stand-ins")
    p.add_argument("--data-lock", metavar="PATH",
                   help="lock file of data digests (default: $REPROKIT_DATA_LOCK or "
                        "~/.cache/reprokit/data-lock.json)")


def check_inputs(args, plan, resumed: results.RunDir | None) -> None:
    """Every input of a run checked before any work starts, nothing created (reprokit/checks.py):
    option combinations, the results directory (a writable directory, or one that can be
    created), free space for the run's estimate, a GPU when one is asked for."""
    if args.data_lock and not args.data:
        raise UserError("--data-lock applies with --data DIR only; add --data DIR or drop --data-lock")
    if args.gpus and args.runner == "local":
        raise UserError("--gpus applies to the docker runner only; drop --gpus or pass --runner docker")
    if args.gpus and args.device == "cpu":
        raise UserError("--gpus asks for GPUs but --device cpu for none; drop --gpus or pass "
                        "--device gpu")
    if resumed is None:  # the new run's directory is made under --results
        where = Path(args.results)
        checks.writable_dir(where, f"--results {where}",
                            "pass --results DIR naming a directory you can write to")
        room = "free space there or pass --results DIR on another disk"
    else:  # a resumed run writes into its own directory only
        where = resumed.path
        checks.writable_dir(where, f"--resume {args.resume}", "make the run directory writable, "
                            "or copy it to a writable disk and resume the copy")
        room = "free space there, or copy the run to another disk and resume the copy"
    n = len(plan.runnable) * plan.options.repeat
    checks.free_space(where, checks.run_space_mb(n), "this run",
                      f"{checks.RUN_BASE_MB} MB + {checks.CELL_PROCESS_MB} MB for each of {n} cell "
                      "processes", room)
    if args.device == "gpu" or args.gpus:
        flag = "--device gpu" if args.device == "gpu" else f"--gpus {args.gpus}"
        checks.require_gpu(flag, "run with --device cpu (or auto), or on a host with an NVIDIA GPU "
                           "and its driver")
    if args.data:
        checks.input_dir(args.data, "--data", "pass the directory holding the data files (see "
                         "`reproduce.py data` for the layout)")
        lock = Path(args.data_lock) if args.data_lock else datasets.default_lock_path()
        checks.output_file(lock, "--data-lock", "pass --data-lock PATH naming a file in a directory "
                           "you can write to (digests are recorded there on first use)")


def run(args) -> int:
    suite = suites.load_suite(args.suite)
    repeat = args.repeat
    root = Path(args.results)
    resumed = results.resolve_run(args.resume, root) if args.resume else None
    if resumed is not None:  # K comes from the run being resumed
        repeat = check_resume_repeat(resumed.load_run(), repeat)
    options = Options(quick=args.quick, protocol=args.protocol, device="cpu", cells=args.cells,
                      min_samples=args.min_samples, time_budget_s=args.time_budget,
                      repeat=repeat or 1)
    plan = make_plan(suite, options)
    check_inputs(args, plan, resumed)
    if resumed is not None:  # one driver per run: the lock before anything is written
        lifecycle.acquire(resumed.path)
        early = reconcile.resume_options(plan.options, "", suite.name)
        for later in ("runner", "device", "data"):  # known once data and runner are set up
            del early[later]
        reconcile.check_resume(resumed.load_run(), early)
    if args.data:
        options.data = datasets.prepare_run(plan.runnable, args.data, args.data_lock,
                                            say=lambda m: print(m, file=sys.stderr))
    runner, device, why = choose_runner(args.runner, args.device, args.gpus,
                                        sorted(plan.by_stack()))
    plan.options.device = device
    print(f"runner: {runner.name} ({why}); device: {device}", file=sys.stderr)
    if resumed is not None:
        reconcile.check_resume(resumed.load_run(),
                               reconcile.resume_options(plan.options, runner.name, suite.name))
        rundir = resumed
    else:  # made exclusively (a suffix when another driver made the same id), then locked
        rundir = results.RunDir(lifecycle.make_run_dir(root, results.new_run_id(suite.name)))
        lifecycle.acquire(rundir.path)
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
