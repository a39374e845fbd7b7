"""`reproduce.py run --suite S`: plan, run every cell, write results and the report.

One driver per run: the run directory is made exclusively and locked (reprokit/run/lifecycle.py)
before anything is written into it; `--resume RUN` takes the same lock, reconciles run.json with
the files on disk (reprokit/run/reconcile.py) and refuses when an option that changes measurements
differs from the run's. Exit status: 0 every cell measured; 1 some cell did not finish ok, or the
Docker engine stopped answering mid-run; 2 a user error (one line); 3 a bug of the kit; 128 + the
signal when interrupted (130 SIGINT, 143 SIGTERM, 129 SIGHUP: the running cell is stopped and
recorded as interrupted, no report is rendered, `--resume RUN` continues).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from reprokit import checks, results
from reprokit.catalog import datasets, suites
from reprokit.errors import UserError
from reprokit.plan.plan import Options, cell_specs, decide, make_plan
from reprokit.probes import fingerprint
from reprokit.run import lifecycle, reconcile
from reprokit.run.execute import check_resume_repeat, execute
from reprokit.run.record import exit_code, status_counts
from reprokit.runners import slurm_setup
from reprokit.runners.select import choose_runner


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
    slurm_setup.slurm_arguments(p)
    from reprokit.runners import byo

    byo.add_arguments(p)  # --python STACK=PATH, --python-config FILE
    p.add_argument("--data-lock", metavar="PATH",
                   help="lock file of data digests (default: $REPROKIT_DATA_LOCK or "
                        "~/.cache/reprokit/data-lock.json)")


def check_inputs(args, plan, resumed: results.RunDir | None) -> None:
    """Every input of a run checked before any work starts, nothing created (reprokit/checks.py):
    option combinations, the results directory (a writable directory, or one that can be
    created), free space for the run's estimate, a GPU when one is asked for."""
    if args.data_lock and not args.data:
        raise UserError("--data-lock applies with --data DIR only; add --data DIR or drop --data-lock")
    slurm_setup.check_inputs(args)
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
    if (args.device == "gpu" or args.gpus) and args.runner != "slurm":  # Slurm: the probe's node
        flag = "--device gpu" if args.device == "gpu" else f"--gpus {args.gpus}"
        fingerprint.require_gpu(flag, "run with --device cpu (or auto), or on a host with an NVIDIA GPU "
                           "and its driver")
    if args.data:
        checks.input_dir(args.data, "--data", "pass the directory holding the data files (see "
                         "`reproduce.py data` for the layout)")
        lock = Path(args.data_lock) if args.data_lock else datasets.default_lock_path()
        checks.output_file(lock, "--data-lock", "pass --data-lock PATH naming a file in a directory "
                           "you can write to (digests are recorded there on first use)")


def check_interpreters(args) -> str | None:
    """--python / --python-config: the runners that run them, then the interpreters themselves
    (exists, executable, imports the stack's framework: reprokit/runners/byo.py), before anything
    runs. Returns why `--runner auto` takes the local runner, or None without --python."""
    from reprokit.runners import byo

    if not (args.python or args.python_config):
        return None
    flag = "--python" if args.python else "--python-config"
    if args.runner == "docker" or (args.runner == "slurm" and args.slurm_launcher not in (None, "local")):
        where = "--runner docker" if args.runner == "docker" else \
            f"--slurm-launcher {args.slurm_launcher}"
        raise UserError(f"{flag} names interpreters for the local runner and the Slurm local "
                        f"launcher, not {where} (which runs images); drop {flag} or use --runner "
                        "local")
    mapping = byo.from_args(args)
    return f"{flag} names the interpreter of {', '.join(sorted(mapping))}: local runner"


def check_resume_interpreters(run: dict, args) -> None:
    """A resumed run keeps the interpreters it was started with: a stack run with --python then
    needs the same --python now, and one run with the kit's environment no --python (its cells
    would otherwise mix two environments)."""
    from reprokit.runners import byo

    before = {s: e.get("python") for s, e in (run.get("environments") or {}).items() if e.get("byo")}
    now = byo.chosen()
    for stack in sorted(set(before) | set(now)):
        if before.get(stack) != now.get(stack) and (stack in before or stack in run.get("environments", {})):
            was = f"--python {stack}={before[stack]}" if stack in before else "the kit's environment"
            given = f"--python {stack}={now[stack]}" if stack in now else "none"
            fix = f"pass {was}" if stack in before else f"drop --python {stack}=..."
            raise UserError(f"cannot resume {run.get('run_id')}: stack {stack} ran with {was}, this "
                            f"command gives {given}; {fix}, or start a new run")


def environment_device(args, runner, device: str, plan) -> tuple[str, set[str], str]:
    """The device as the environments that will run allow it (runners/select.py local_device):
    the local runner judges each stack's environment; the Slurm local launcher's GPU run refuses
    environments built without GPU support (probed on this host, assumed on the nodes)."""
    from reprokit.runners import select

    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731  (environments being made)
    if runner.name == "local":
        return select.local_device(args.device, plan.runnable, say=say)
    if runner.name == "slurm" and device == "gpu" and runner.launcher.name == "local":
        node = (getattr(runner, "probe_result", None) or {}).get("node_fingerprint") or {}
        _, by_stack = select.gpu_environments(plan.runnable, node, other_host=True, runner="slurm",
                                              say=say)
        select.refuse_gpu("--runner slurm --device gpu", by_stack, "--device cpu")
    if args.device == "auto" and runner.name != "slurm":  # say why, as the local runner does
        from reprokit.probes import fingerprint

        gpus, nvidia = fingerprint.nvml_gpus()
        return device, set(), ("--device auto: " + (f"NVML sees {len(gpus)} GPU(s)" if gpus else
                               f"this host has no GPU ({nvidia.get('reason') or 'NVML sees none'})"))
    return device, set(), ""


def default_design(suite, options: Options, runner: str, cells: list | None = None) -> Options:
    """Without --repeat K (and without sampling overrides): the processes x iterations of the default
    design (reprokit/plan/design.py, from data/cell_costs.yaml), or one process where no costs are recorded.
    `cells`: the plan's runnable cells (planned here when not given)."""
    from reprokit.plan import design
    from reprokit.plan.plan import budget_for

    if cells is None:
        cells = make_plan(suite, options).runnable
    d = design.run_design(cells, suite.name, runner, options.quick, options.protocol,
                          {c.id: budget_for(c, suite, options) for c in cells}, bool(suite.sources))
    if d is None:
        return options
    return replace(options, repeat=d["processes"], design=d)


def resume_cells(run: dict, asked: list[str]) -> list[str]:
    """The cell patterns of a resumed run: --cells when given, else the ones the run was started
    with (run.json options.cells), so that `--resume RUN` alone continues the run's own cells
    rather than planning the whole suite (and refusing stacks the run never had)."""
    if asked:
        return asked
    return (run.get("options") or {}).get("cells") or []


def run(args) -> int:  # noqa: C901 (older than the check)
    suite = suites.load_suite(args.suite)
    repeat = args.repeat
    root = Path(args.results)
    resumed = results.resolve_run(args.resume, root) if args.resume else None
    cells = args.cells
    if resumed is not None:  # K comes from the run being resumed, and so do its cells
        repeat = check_resume_repeat(resumed.load_run(), repeat)
        cells = resume_cells(resumed.load_run(), cells)
    options = Options(quick=args.quick, protocol=args.protocol, device="cpu", cells=cells,
                      min_samples=args.min_samples, time_budget_s=args.time_budget,
                      repeat=repeat or 1, allow_changed_data=args.allow_changed_data)
    plan = None  # the cells the options select; the design changes how often each runs, not which
    if repeat is None and args.min_samples is None and args.time_budget is None:
        plan = make_plan(suite, options)
        options = default_design(suite, options, args.runner, plan.runnable)
    if args.allow_changed_data and resumed is None:
        raise UserError("--allow-changed-data applies to --resume RUN only; drop it, or add "
                        "--resume RUN")
    plan = make_plan(suite, options) if plan is None else replace(plan, options=options)
    check_inputs(args, plan, resumed)
    byo_local = check_interpreters(args)
    if resumed is not None:
        check_resume_interpreters(resumed.load_run(), args)
    if resumed is not None:  # one driver per run: the lock before anything is written
        lifecycle.acquire(resumed.path)
        early = reconcile.resume_options(plan.options, "", suite.name)
        for later in ("runner", "device", "data"):  # known once data and runner are set up
            del early[later]
        reconcile.check_resume(resumed.load_run(), early)
    data = None
    if args.data:
        data = datasets.prepare_run(plan.runnable, args.data, args.data_lock,
                                    say=lambda m: print(m, file=sys.stderr))
    if args.runner == "slurm":
        runner, device, why = slurm_setup.slurm_runner(args, resumed, root)
    else:
        runner, device, why = choose_runner(args.runner, args.device, args.gpus,
                                            sorted(plan.by_stack()), local_because=byo_local)
    device, on_cpu, device_why = environment_device(args, runner, device, plan)
    # planned again for the device the runner gives: on a GPU the framework-default twins run too
    plan = make_plan(suite, replace(options, device=device, data=data))
    if on_cpu:  # --device auto: cells whose environment cannot use the GPU run on the CPU
        plan = replace(plan, runnable=[replace(c, device="cpu") if c.id in on_cpu else c
                                       for c in plan.runnable])
    print(f"runner: {runner.name} ({why}); device: {device}"
          + (f" ({device_why})" if device_why else ""), file=sys.stderr)
    if resumed is not None:
        reconcile.check_resume(resumed.load_run(),
                               reconcile.resume_options(plan.options, runner.name, suite.name))
        reconcile.check_cell_specs(resumed.load_run(), cell_specs(plan), args.allow_changed_data)
        rundir = resumed
        if runner.name == "slurm":  # collect what the run's jobs finished while nobody followed
            from reprokit.run.execute_concurrent import attach
            attach(rundir, say=lambda m: print(m, file=sys.stderr, flush=True))
    else:  # made exclusively (a suffix when another driver made the same id), then locked
        rundir = results.RunDir(lifecycle.make_run_dir(root, results.new_run_id(suite.name)))
        lifecycle.acquire(rundir.path)
    print(f"results: {rundir.path}", file=sys.stderr)
    # the plan complete before anything runs: every cell's preflight verdict for this runner on this
    # host (a resumed run keeps the host it started on), and so the stack whose image runs it
    host = rundir.load_run().get("host_fingerprint") if resumed is not None else None
    if host is None:  # a Slurm GPU run is planned on the probe job's node
        host = slurm_setup.planning_host(runner, device)
    plan = slurm_setup.judged_on_environments(decide(plan, runner.name,
                                                     host or fingerprint.host_fingerprint()),
                                              runner, device)
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    run_record = execute(plan, runner, rundir, sys.argv[:], resume=bool(args.resume), say=say)
    if (run_record.get("slurm") or {}).get("detached"):
        return 0  # the jobs run on: `status RUN` / `report RUN` / `--resume RUN` re-attach
    if not args.no_report:
        from reprokit.report import report
        with results.run_data(rundir, run_record):  # the data the run started with
            for p in report.render(rundir):
                print(f"report: {p}", file=sys.stderr)
    counts = status_counts(run_record["cells"])
    print(f"done in {run_record['wall_s']:.0f} s: "
          + ", ".join(f"{v} {k}" for k, v in counts.items()), file=sys.stderr)
    return exit_code(run_record)
