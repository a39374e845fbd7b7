"""The driver of `reproduce.py run`: from the request (its options) to a finished run record.

One pass, each step once: the suite and the cells asked for (or a resumed run's own) -> the request
checked (reprokit/run/inputs.py) -> the runner and the device, from the cells' stacks and
environments -> the plan, made once for that device (on a GPU the framework-default twins too) with
the default design for that runner (reprokit/plan/design.py) -> free space for it -> the run
directory, made and locked (or the resumed one, locked and reconciled) -> every cell's preflight
verdict on the host that runs it -> execute (reprokit/run/execute.py). The command
(reprokit/commands/run.py) renders the report from the record.

One driver per run: the run directory is made exclusively and locked (reprokit/run/lifecycle.py)
before anything is written into it; `--resume RUN` takes the same lock, reconciles run.json with the
files on disk (reprokit/run/reconcile.py) and refuses when an option that changes measurements
differs from the run's."""

from __future__ import annotations

import time
from dataclasses import replace

from reprokit import results
from reprokit.analysis import decidability
from reprokit.catalog import datasets, suites
from reprokit.errors import UserError
from reprokit.plan import design, time_limit
from reprokit.plan.plan import Options, cell_specs, implemented_cells, make_plan
from reprokit.probes import fingerprint
from reprokit.reader.status import Skip
from reprokit.run import inputs, lifecycle, reconcile
from reprokit.run.execute import check_resume_repeat, execute
from reprokit.run.request import RunRequest
from reprokit.runners import allocation, select, slurm_setup
from reprokit.runners.host_preflight import decide


def resume_cells(run: dict, asked: list[str] | tuple[str, ...]) -> list[str]:
    """The cell patterns of a resumed run: --cells when given, else the ones the run was started
    with (run.json options.cells), so that `--resume RUN` alone continues the run's own cells
    rather than planning the whole suite (and refusing stacks the run never had)."""
    if asked:
        return list(asked)
    return (run.get("options") or {}).get("cells") or []


def environment_device(asked: str, runner, device: str, cells: list, say) -> tuple[str, set[str], str]:
    """(device, ids of cells that run on the CPU instead, why) as the environments that will run
    `cells` allow it (`asked`: the --device given; runners/select.py local_device): the local runner
    judges each stack's environment; the Slurm local launcher's GPU run refuses environments built
    without GPU support (probed on this host, assumed on the nodes)."""
    if runner.name == "local":
        return select.local_device(asked, cells, say=say)
    if runner.name == "slurm" and device == "gpu" and runner.launcher.name == "local":
        node = (getattr(runner, "probe_result", None) or {}).get("node_fingerprint") or {}
        _, by_stack = select.gpu_environments(cells, node, other_host=True, runner="slurm", say=say)
        select.refuse_gpu("--runner slurm --device gpu", by_stack, "--device cpu")
    if asked == "auto" and runner.name != "slurm":  # say why, as the local runner does
        gpus, nvidia = fingerprint.nvml_gpus()
        return device, set(), ("--device auto: " + (f"NVML sees {len(gpus)} GPU(s)" if gpus else
                               f"this host has no GPU ({nvidia.get('reason') or 'NVML sees none'})"))
    return device, set(), ""


# what the run spends outside its cells within --time-limit: the CPU/GPU probes, stack environments
# and the report (a 2-core machine: the probes take about 20 s, the report about 30 s)
TIME_LIMIT_RESERVE_S = 60.0


def _plan(req: RunRequest, suite, options: Options, cells: list, byo_local: str | None, resumed, say,
          started: float | None = None):
    """(plan, runner, why the runner and device) for the request: the runner and device chosen from
    the cells' stacks and environments, then the plan made once for them, with the default design
    unless --repeat K or a sampling override (a resumed run keeps its own K and design)."""
    if req.runner == "slurm":
        runner, device, why = slurm_setup.slurm_runner(req.slurm, req.device, resumed, req.results)
    else:
        runner, device, why = select.choose_runner(req.runner, req.device, req.gpus,
                                                   sorted({c.stack for c in cells}),
                                                   local_because=byo_local)
    device, on_cpu, device_why = environment_device(req.device, runner, device, cells, say)
    plan = make_plan(suite, replace(options, device=device), on_cpu)
    judgment = None
    if req.repeat is None and resumed is None and req.min_samples is None and req.time_budget is None:
        if (req.design or "auto") == "auto" and options.protocol == "budget" \
                and suite.sources:  # a suite with nothing published (smoke): its own budget
            host = slurm_setup.planning_host(runner, device) or fingerprint.host_fingerprint()
            judgment = decidability.judge(suite, plan.runnable, device, host)
            d = design.auto_design(plan, runner.name, judgment)
            plan = replace(plan, options=replace(plan.options, repeat=d["processes"], design=d))
        else:
            plan = replace(plan, options=design.default_options(plan, runner.name))
    limit = req.time_limit
    if limit is None and resumed is None:  # inside a Slurm allocation: the job's own limit
        limit, how = allocation.time_left()
        if limit is not None:
            say(f"--time-limit from the allocation: {how}")
    if limit is not None:
        plan = _fit_time_limit(plan, runner.name, max(limit, 1.0), judgment, say,
                               time.time() if started is None else started)
    return plan, runner, f"runner: {runner.name} ({why}); device: {device}" + (
        f" ({device_why})" if device_why else "")


def _fit_time_limit(plan, runner_name: str, limit_s: float, judgment: dict | None, say, started: float):
    """The plan with the cells that fit `--time-limit` in priority order (reprokit/plan/time_limit.py)
    and the others recorded as left (skipped, with the time they would take)."""
    o = plan.options
    walls = design.recorded_wall(plan.suite.name, runner_name, False, o.protocol)
    cells = (o.design or {}).get("cells") or {}
    costs: dict[str, float | None] = {}
    for c in plan.runnable:
        d = cells.get(c.id) or {}
        k = design.cell_processes(o.design, c.id, o.repeat)
        one = d.get("process_s") or walls.get(c.id)
        costs[c.id] = d.get("planned_s") or (k * one if one else None)
    roles = (judgment or {}).get("cells") or {}
    fitted = time_limit.fit([c.id for c in plan.runnable], roles, costs, limit_s,
                            reserve_s=TIME_LIMIT_RESERVE_S)
    by_id = {c.id: c for c in plan.runnable}
    skips = {cid: Skip("planned", limit_s=limit_s, needs_s=cost or None) for cid, cost in fitted.left}
    left = [(by_id[cid], "skipped", skip.reason()) for cid, skip in skips.items()]
    options = replace(o, time_limit_s=limit_s, time_limit_text=fitted.text,
                      deadline=started + limit_s)
    return replace(plan, options=options, runnable=[by_id[c] for c in fitted.order],
                   not_runnable=list(plan.not_runnable) + left, skips={**plan.skips, **skips})


def plan_lines(plan) -> list[str]:
    """The run's first lines after the runner: what it can decide here and how long it plans to
    take (a design by role), and what --time-limit fitted and left."""
    d = plan.options.design or {}
    out = []
    if d.get("judgment"):
        known = [c.get("planned_s") for c in (d.get("cells") or {}).values()]  # before any limit
        total = sum(x for x in known if x)
        unknown = sum(1 for x in known if not x)
        extra = f" (and {unknown} cell(s) of unknown time)" if unknown else ""
        when = (f"about {total / 60:.0f} min{extra}" if total else
                "time unknown (no recorded cell times for this suite and runner)")
        out.append(f"{d['judgment']}: {when} [{d['text']}]")
    if plan.options.time_limit_text:
        out.append(plan.options.time_limit_text)
    return out


def drive(req: RunRequest, argv: list[str], say) -> tuple[results.RunDir, dict]:
    """Run what `req` asks for; returns the run directory and its finished record. `argv`: the
    command line, as run.json records it; `say` prints one progress line. With `--design auto` what
    each cell can decide here (reprokit/analysis/decidability.py judge) sets its design; the cells
    that decide run sequentially, stopped by decidability.sequential_status (reprokit/run/serial.py)."""
    started = time.time()  # --time-limit counts from here
    suite = suites.load_suite(req.suite)
    resumed = results.resolve_run(req.resume, req.results) if req.resume else None
    repeat, patterns = req.repeat, list(req.cells)
    if resumed is not None:  # K comes from the run being resumed, and so do its cells
        repeat = check_resume_repeat(resumed.load_run(), repeat)
        patterns = resume_cells(resumed.load_run(), patterns)
    if req.allow_changed_data and resumed is None:
        raise UserError("--allow-changed-data applies to --resume RUN only; drop it, or add "
                        "--resume RUN")
    cells = implemented_cells(suite, patterns)
    inputs.check_options(req, resumed)
    byo_local = inputs.check_interpreters(req)
    options = Options(quick=req.quick, protocol=req.protocol, device="cpu", cells=patterns,
                      min_samples=req.min_samples, time_budget_s=req.time_budget,
                      repeat=repeat or 1, allow_changed_data=req.allow_changed_data)
    if resumed is not None and (resumed.load_run().get("design") or {}).get("kind") == "auto":
        options = replace(options, design=resumed.load_run()["design"])  # each cell's own K
    if resumed is not None:  # what only reads the run is checked first; then one driver per run: the
        # lock before anything is written
        inputs.check_resume_interpreters(resumed.load_run(), req)
        early = reconcile.resume_options(options, "", suite.name)
        for later in ("runner", "device", "data"):  # known once data and runner are set up
            del early[later]
        if req.design is not None:  # the design asked for, compared with the run's own
            early["design"] = req.design
        reconcile.check_resume(resumed.load_run(), early)
        lifecycle.acquire(resumed.path)
    if req.data:
        options = replace(options, data=datasets.prepare_run(cells, req.data, req.data_lock, say=say,
                                                             subset=req.data_subset))
    plan, runner, chosen = _plan(req, suite, options, cells, byo_local, resumed, say, started)
    inputs.check_space(req, plan, resumed)
    say(chosen)
    for line in plan_lines(plan):
        say(line)
    if resumed is not None:
        reconcile.check_resume(resumed.load_run(),
                               reconcile.resume_options(plan.options, runner.name, suite.name))
        reconcile.check_cell_specs(resumed.load_run(), cell_specs(plan), req.allow_changed_data)
        rundir = resumed
        if runner.name == "slurm":  # collect what the run's jobs finished while nobody followed
            from reprokit.run.execute_concurrent import attach
            attach(rundir, say=say)
    else:  # made exclusively (a suffix when another driver made the same id), then locked
        rundir = results.RunDir(lifecycle.make_run_dir(req.results, results.new_run_id(suite.name)))
        lifecycle.acquire(rundir.path)
    say(f"results: {rundir.path}")
    # the plan complete before anything runs: every cell's preflight verdict for this runner on this
    # host (a resumed run keeps the host it started on), and so the stack whose image runs it
    host = rundir.load_run().get("host_fingerprint") if resumed is not None else None
    if host is None:  # a Slurm GPU run is planned on the probe job's node
        host = slurm_setup.planning_host(runner, plan.options.device)
    plan = slurm_setup.judged_on_environments(
        decide(plan, runner.name, host or fingerprint.host_fingerprint(),
               **slurm_setup.launcher_images(runner, plan.runnable, plan.options.device)),
        runner, plan.options.device)
    return rundir, execute(plan, runner, rundir, argv, resume=bool(req.resume), say=say)
