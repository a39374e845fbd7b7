"""Execute a plan with a runner: job files out, cell results in, run record kept current.

The run record is rewritten atomically after every cell process, so a crash of the driver loses
nothing already measured, and `--resume RUN` skips every cell that already has an ok result.

With `run --repeat K` (K > 1) every cell runs in K fresh processes, interleaved across cells:
round N runs process N of every cell (stack by stack, each stack prepared once per run). Each
process writes cells/<stem>.p<N>.json and the cell's main result is re-merged from the process
files after each of them (reprokit/merge_processes.py). A resumed run keeps the ok process files
and runs only the missing or failed processes again.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from pathlib import Path

from reprokit import (
    cell_gpus,
    cpu_peak,
    design,
    fallback,
    files,
    fingerprint,
    gpu_peak,
    gpu_state,
    jit_warmup,
    lifecycle,
    merge_processes,
    probe_cache,
    reconcile,
    results,
)
from reprokit.errors import UserError
from reprokit.plan import Plan, cell_specs, decide, make_job
from reprokit.progress import Progress, design_times, past_cell_times, recorded_times
from reprokit.runners.base import CellOutcome, Runner, StackUnavailable
from reprokit.suites import Cell, load_stacks


def placeholder_result(run_id: str, cell: Cell, status: str, reason: str, device: str) -> dict:
    """A result file for a cell that produced none itself (not run, crashed, timed out)."""
    return {
        "schema_version": files.version("cell_result"), "kind": "cell_result", "run_id": run_id,
        "cell_id": cell.id, "source": cell.source, "stack": cell.stack, "workload": cell.workload,
        "variant": cell.variant, "params": cell.params, "status": status, "reason": reason,
        "started": None, "finished": files.utcnow(), "wall_s": None, "device": device,
        "metrics": {}, "implementation": {}, "stack_fingerprint": {}, "kit": files.kit_info(),
    }


def _finish_result(rundir: results.RunDir, run_id: str, cell: Cell, outcome: CellOutcome,
                   stack_spec: dict, runner_name: str, device: str,
                   process: int | None = None, prepared: dict | None = None,
                   substitution: dict | None = None, host: dict | None = None,
                   jit: dict | None = None) -> dict:
    """Merge what the runner saw into the harness's result (or make one if there is none).

    With `process` N (run --repeat K) this is the process file cells/<stem>.p<N>.json; the
    cell's main result is then merged from the process files (merge_processes.merge_cell)."""
    existing = None
    path = rundir.cell_path(cell.id, process)
    if path.exists():
        existing, problem = reconcile.check_result(path, run_id, cell.id, process)
        if problem:  # an invalid file is itself a crash; it is kept aside, never overwritten
            try:
                where = f"moved to {reconcile.move_aside(rundir, path).relative_to(rundir.path)}"
            except OSError as e:
                if lifecycle.is_storage_error(e):
                    raise
                where = f"could not move it aside: {e}"
            outcome = CellOutcome("crashed", f"result file invalid: {problem} ({where})",
                                  outcome.process_wall_s, outcome.log_file, outcome.runner_info)
    if existing is not None and (existing.get("run_id") != run_id
                                 or existing.get("process") != process):
        existing = None
    if existing is None or outcome.status in ("timeout", "oom", "crashed"):
        reason = outcome.reason or "no result written"
        result = placeholder_result(run_id, cell, outcome.status, reason, device)
        if process is not None:
            result["process"] = process
    else:
        result = existing
    impl = result.setdefault("implementation", {})
    subs = impl.setdefault("substitutes", [])
    if prepared is not None and "substitutes" in prepared:  # the environment the runner chose
        stack_subs = prepared["substitutes"]
    else:
        stack_subs = stack_spec.get("local", {}).get("substitutes", []) if runner_name == "local" else []
    if substitution and substitution not in subs:  # a fallback link's image ran it: said first
        subs.insert(0, substitution)
    for s in stack_subs:
        if s not in subs:
            subs.append(s)
    if prepared is not None and prepared.get("environment"):
        result["environment"] = prepared["environment"]
    result["log_file"] = outcome.log_file and str(Path(outcome.log_file).relative_to(rundir.path))
    result["runner"] = {"name": runner_name, "process_wall_s": outcome.process_wall_s,
                        **outcome.runner_info}
    if "gpus" not in result:  # the GPUs the cell had, from its runner (reprokit/cell_gpus.py)
        result["gpus"], result["gpus_source"] = cell_gpus.for_cell(
            result, runner_name, outcome.runner_info, cell.gpus_on(device), host,
            (prepared or {}).get("env"))
    jit_warmup.annotate(result, jit)  # jit_warmup_s: its key's untimed first start; jit_cache
    result["runner"] = gpu_state.attach(result, result["runner"])  # NVML around a GPU cell
    if process is None:
        rundir.write_cell(result)
    else:
        rundir.write_process(result)
    return result


def _processes_to_run(rundir: results.RunDir, run_id: str, cell: Cell, repeat: int) -> list[int]:
    """Process indices of a `--repeat K` cell that have no ok process file of this run yet."""
    done = merge_processes.load_processes(rundir, cell.id, repeat, run_id)
    return [i for i in range(1, repeat + 1) if done.get(i, {}).get("status") != "ok"]


def check_resume_repeat(run: dict, repeat: int | None) -> int:
    """The K of a resumed run (run.json `repeat`, absent = 1); a different --repeat is an error."""
    stored = int(run.get("repeat") or 1)
    if repeat is not None and repeat != stored:
        raise UserError(f"--repeat {repeat} does not match the run being resumed, which was made "
                        f"with --repeat {stored}; drop --repeat or pass --repeat {stored}")
    return stored


def _cpu_peak(say) -> dict | None:
    """Measure the CPU's GEMM peak once per run, so CPU results can be compared as efficiency."""
    probes = {}
    for backend in ("numpy", "torch"):  # the best GEMM library here sets the peak
        try:
            probes[backend] = cpu_peak.measure(backend=backend)
        except Exception as e:  # the probe must never cost the run
            probes[backend] = {"error": f"{type(e).__name__}: {e}"}
    ok = [p for p in probes.values() if "gflops" in p]
    if ok:
        peak = dict(max(ok, key=lambda p: p["gflops"]))
        peak["probes"] = {k: v.get("gflops", v.get("error")) for k, v in probes.items()}
        clock = (peak.get("clock") or {}).get("ghz")
        say(f"cpu peak probe: {peak['gflops']:.1f} GFLOP/s ({peak['library']}; all: {peak['probes']}); "
            + (f"effective clock {clock:.3g} GHz measured (dependent adds)" if clock else
               f"clock not measured: {(peak.get('clock') or {}).get('reason')}"))
        return peak
    say(f"cpu peak probe failed: {probes}")
    return {"error": str(probes)}


def _gpu_peak(device: str, runner_name: str, host: dict, say) -> dict:
    """Measure the GPUs' fp32 and TF32 GEMM rate once per GPU run (reprokit/gpu_peak.py)."""
    if device == "cpu":
        peak = {"skipped": "a CPU run (device cpu)"}
    elif runner_name == "slurm":
        peak = {"skipped": "the Slurm runner measures each node's GPUs on the node "
                           "(slurm/nodes/<node>.json gpu_peak)"}
    elif not (host or {}).get("gpus"):
        peak = {"skipped": "NVML finds no GPU on this host ("
                           f"{((host or {}).get('nvidia') or {}).get('reason') or 'no reason given'})"}
    else:
        peak = gpu_peak.probe()
    say(f"gpu peak probe: {gpu_peak.summary(peak)}")
    return peak


def _gpu_cell(job_cell: dict, device: str, host: dict) -> bool:
    """Whether a cell may run on a GPU, so its GPUs' state is watched (a CPU cell's is not)."""
    dev = job_cell.get("device") or device
    return dev == "gpu" or (dev == "auto" and bool((host or {}).get("gpus")))


def _record_specs(run: dict, specs: dict[str, str], allow: bool) -> list[str]:
    """A resumed run: the specs of cells it plans for the first time are added; cells whose spec
    changed (only with --allow-changed-data: the command refuses otherwise) are an incident."""
    changed = reconcile.check_cell_specs(run, specs, allow)
    if changed:
        run.setdefault("incidents", []).append(
            {"kind": "changed_data", "at": files.utcnow(), "cell_id": None,
             "text": f"resumed with --allow-changed-data: the suite's data changed what "
                     f"{', '.join(changed)} measure(s) since the run started; results of both "
                     "definitions are mixed in this run"})
    if "cell_specs" in run or not run.get("cells"):  # an older run records none: not started now
        run["cell_specs"] = {**(run.get("cell_specs") or {}), **specs}
    return changed


def _driver() -> dict:
    pid = os.getpid()
    return {"pid": pid, "host": lifecycle.host_name(), "start_ticks": lifecycle.process_start_ticks(pid)}


def execute(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str],
            resume: bool = False, say=print) -> dict:
    """Run the plan into rundir (holding its lock; see reprokit/lifecycle.py for the signals).

    run.json is written before the CPU probe and the first cell, with every cell of the plan
    `pending`, and rewritten after every cell. SIGINT, SIGTERM or SIGHUP stop the running cell,
    record it as `interrupted`, write run.json and raise lifecycle.Interrupted (exit 128 + the
    signal); a full or read-only results disk raises lifecycle.StorageError (one line, exit 2);
    a Docker engine that stops answering raises lifecycle.EngineLost (exit 1). Measured cells are
    never lost: each is on disk before the next starts."""
    rundir.path.mkdir(parents=True, exist_ok=True)
    # the CLI takes the lock before anything else and holds it until it exits; a caller that did
    # not (a test, a script) gets it for the run only
    lock = None if lifecycle.holds(rundir.path) else lifecycle.acquire(rundir.path, argv)
    try:
        return _execute_guarded(plan, runner, rundir, argv, resume, say)
    finally:
        if lock is not None:
            lock.release()


def _execute_guarded(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str],
                     resume: bool, say) -> dict:
    started = time.time()
    ctx: dict = {"current": None, "run": None, "progress": None}
    with lifecycle.signal_guard():
        try:
            return _execute(plan, runner, rundir, argv, resume, say, started, ctx)
        except lifecycle.Interrupted as e:
            cell_text = _stop(rundir, runner, plan, ctx, started, "interrupted",
                              f"interrupted by {e.signame}", say)
            ok = sum(1 for c in (ctx["run"] or {}).get("cells", []) if c["status"] == "ok")
            raise lifecycle.Interrupted(e.signum, (
                f"interrupted by {e.signame} after {time.time() - started:.1f} s{cell_text}; "
                f"{ok} cell(s) measured are kept in {rundir.path}; continue with "
                f"`reproduce.py run --suite {plan.suite.name} --resume {rundir.path}` (same "
                "options)")) from None
        except lifecycle.EngineLost as e:
            cell_text = _stop(rundir, runner, plan, ctx, started, "interrupted", str(e), say)
            raise lifecycle.EngineLost(f"{e}{cell_text}; the cells measured are kept in "
                                       f"{rundir.path}; start the engine and continue with "
                                       f"--resume {rundir.path}") from None
        except OSError as e:
            if not lifecycle.is_storage_error(e):
                raise
            with contextlib.suppress(Exception):
                _stop(rundir, runner, plan, ctx, started, "interrupted",
                      f"the results disk refused a write: {e.strerror or e}", say)
            raise lifecycle.storage_error(e) from None


def _stop(rundir: results.RunDir, runner: Runner, plan: Plan, ctx: dict, started: float,
          status: str, why: str, say) -> str:
    """After an interruption: the running cell is stopped (its runner killed it), recorded with
    `status` unless it wrote a valid ok result in time; run.json finished. Returns ' during CELL'."""
    with contextlib.suppress(Exception):
        runner.cleanup()
    if ctx["progress"] is not None:
        with contextlib.suppress(Exception):
            ctx["progress"].close()
    run = ctx["run"]
    cur = ctx["current"]
    text = ""
    if run is None:
        return text
    run_id = run["run_id"]
    if cur is not None:
        cell, process, t0 = cur
        text = f" during {cell.id}" + (f" (process {process})" if process else "")
        reason = (f"{why} after {time.monotonic() - t0:.1f} s of the cell; it was stopped; "
                  f"--resume {rundir.path} measures it again")
        doc, _ = reconcile.check_result(rundir.cell_path(cell.id, process), run_id, cell.id, process)
        if doc is None or doc.get("status") != "ok":
            doc = placeholder_result(run_id, cell, status, reason, plan.options.device)
            if process is not None:
                doc["process"] = process
                rundir.write_process(doc)
            else:
                rundir.write_cell(doc)
        if process is None:
            _entry(run, cell, doc["status"], doc["reason"], None)
        else:
            merged = merge_processes.merge(
                reconcile.valid_processes(rundir, cell.id, plan.options.repeat, run_id),
                plan.options.repeat)
            rundir.write_cell(merged)
            _entry(run, cell, merged["status"], merged["reason"], None)
    run.setdefault("incidents", []).append(
        {"kind": "interrupted", "at": files.utcnow(), "cell_id": cur[0].id if cur else None,
         "text": f"{why}{text} after {time.time() - started:.1f} s"})
    run["current"] = None
    run["finished"] = files.utcnow()
    run["wall_s"] = (ctx.get("prior_wall") or 0.0) + time.time() - started
    rundir.write_run(run)
    return text


def _record_probe(result: dict, run: dict, runner_name: str, device: str, say) -> None:
    """A gpu-smoke probe's outcome into the GPU probe cache (reprokit/probe_cache.py), for preflight
    to read on this host. Only a GPU run through the Docker runner records one, so this has NEVER
    RUN (no GPU here). A cache that cannot be written costs a warning, never the run."""
    try:
        entry, path = probe_cache.record_result(result, run["host_fingerprint"], runner_name, device)
    except (OSError, ValueError, UserError) as e:
        say(f"warning: the probe result of {result.get('cell_id')} was not cached: {e}")
        return
    if entry is not None:
        say(f"probe cache: {entry['stack']} on {entry['host']['gpu_name']} "
            f"(driver {entry['host']['driver_version']}): {entry['status']} -> {path}")


def _entry(run: dict, cell: Cell, status: str, reason: str | None, wall: float | None) -> None:
    entries = {e["cell_id"]: e for e in run["cells"]}
    entries[cell.id] = {"cell_id": cell.id, "stack": cell.stack, "status": status,
                        "reason": reason, "process_wall_s": wall,
                        "result_file": str(Path("cells") / results.cell_filename(cell.id))}
    run["cells"] = list(entries.values())


def _execute(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str], resume: bool,
             say, started: float, ctx: dict) -> dict:
    stacks = load_stacks()
    run_id = rundir.path.name
    repeat = plan.options.repeat
    if repeat < 1:
        raise UserError(f"--repeat must be an integer of at least 1, not {repeat}")
    plan_cells = [c for c, _, _ in plan.not_runnable] + list(plan.runnable)
    if resume and rundir.run_file.exists():
        run = rundir.load_run()
        run_id = run["run_id"]  # the run's own id: its directory may have been renamed or moved
        check_resume_repeat(run, repeat)
        run = reconcile.reconcile(rundir, run, {c.id: c.stack for c in plan_cells},
                                  modify=True, say=say).run
        run["finished"] = None
        run["current"] = None
        if _record_specs(run, cell_specs(plan), plan.options.allow_changed_data):
            run["data_snapshot"] = results.snapshot_data(rundir)  # the data it now measures with
        ctx["run"] = run
    else:
        run = {
            "schema_version": files.version("run"), "kind": "run", "run_id": run_id, "suite": plan.suite.name,
            "argv": argv, "runner": runner.name, "protocol": plan.options.protocol,
            "quick": plan.options.quick, "repeat": repeat, "started": files.utcnow(),
            "finished": None, "wall_s": None,
            "host_fingerprint": plan.host if plan.host is not None else fingerprint.host_fingerprint(),
            "kit": files.kit_info(), "stacks": {}, "cells": [], "cell_specs": cell_specs(plan),
            "data_snapshot": results.snapshot_data(rundir),
            "options": {"device": plan.options.device, "min_samples": plan.options.min_samples,
                        "time_budget_s": plan.options.time_budget_s,
                        "data": (plan.options.data or {}).get("root"),
                        "cells": list(plan.options.cells)},
            "driver": _driver(), "current": None, "cpu_peak": None,
        }
        if plan.options.design is not None:  # the default design (reprokit/design.py), not --repeat K
            run["design"] = plan.options.design
        for c in plan_cells:  # every cell is listed before anything runs
            _entry(run, c, "pending", "not run yet", None)
        ctx["run"] = run
        rundir.write_run(run)  # before the CPU probe: a driver killed from here on leaves a run
        run["cpu_peak"] = _cpu_peak(say)
        run["gpu_peak"] = _gpu_peak(plan.options.device, runner.name, run["host_fingerprint"], say)
    run["driver"] = _driver()
    if plan.options.data:
        run["data"] = plan.options.data
    prior_wall = run.get("wall_s") or 0.0
    ctx["prior_wall"] = prior_wall
    entries = {e["cell_id"]: e for e in run["cells"]}

    def record(cell: Cell, status: str, reason: str | None, wall: float | None) -> None:
        entries[cell.id] = {"cell_id": cell.id, "stack": cell.stack, "status": status,
                            "reason": reason, "process_wall_s": wall,
                            "result_file": str(Path("cells") / results.cell_filename(cell.id))}
        run["cells"] = list(entries.values())
        run["current"] = None
        ctx["current"] = None
        run["wall_s"] = prior_wall + time.time() - started
        rundir.write_run(run)

    def record_merged(cell: Cell, merged: dict) -> None:
        walls = [p["process_wall_s"] for p in merged["processes"]
                 if isinstance(p.get("process_wall_s"), (int, float))]
        record(cell, merged["status"], merged["reason"], sum(walls) if walls else None)

    for cell, status, reason in plan.not_runnable:
        rundir.write_cell(placeholder_result(run_id, cell, status, reason, plan.options.device))
        record(cell, status, reason, None)

    if plan.verdicts is None or plan.runner != runner.name:  # a plan not decided for this runner
        plan = decide(plan, runner.name, run["host_fingerprint"])
    verdicts = plan.verdicts
    run["preflight"] = verdicts
    # (cell, process indices to run): [None] = one process writing the main result (K = 1)
    todo: list[tuple[Cell, list]] = []
    for c in plan.runnable:
        procs: list = [None] if repeat == 1 else list(range(1, repeat + 1))
        if resume and repeat == 1 and entries.get(c.id, {}).get("status") == "ok":
            say(f"resume: {c.id} already measured, kept")
            continue
        if resume and repeat > 1:
            procs = _processes_to_run(rundir, run_id, c, repeat)
            if not procs:
                say(f"resume: {c.id} already measured, kept")
                merged = rundir.load_cell(c.id)
                if merged is None or merged.get("status") != "ok" \
                        or len(merged.get("processes", [])) != repeat:
                    merged = merge_processes.merge_cell(rundir, c.id, repeat, run_id)
                if entries.get(c.id, {}).get("status") != "ok":
                    record_merged(c, merged)
                continue
            if len(procs) < repeat:
                say(f"resume: {c.id}: running process{'es' if len(procs) > 1 else ''} "
                    f"{', '.join(map(str, procs))} of {repeat} again")
        v = verdicts[c.id]
        if not v["runnable"]:
            reason = "preflight: " + "; ".join(v["reasons"])
            rundir.write_cell(placeholder_result(run_id, c, "skipped", reason, plan.options.device))
            record(c, "skipped", reason, None)
            continue
        if fallback.substitution(v):
            say(f"preflight: {c.id}: runs on {fallback.stack_to_run(c.stack, v)} instead of {c.stack} "
                f"(fallback chain; why: run.json preflight, and the cell's result)")
        elif v["status"] == "jit":
            say(f"preflight: {c.id}: {'; '.join(v['reasons'])}")
        todo.append((c, procs))
    if hasattr(runner, "reap_leftovers"):  # containers of this run, or of drivers that died
        runner.reap_leftovers(rundir.path, say)
    history = {**recorded_times(runner.name, plan.options.quick, plan.options.protocol),
               **past_cell_times(rundir.path.parent, runner.name, plan.options.quick,
                                 plan.options.protocol, exclude=rundir.path),
               **design_times(run.get("design"))}  # per-cell costs of the design that runs
    progress = Progress([(c, p) for c, procs in todo for p in procs], say=say, history=history,
                        repeat=repeat)
    ctx["progress"] = progress
    by_stack: dict[str, list[tuple[Cell, list]]] = {}
    for c, procs in todo:  # by the stack whose image runs the cell (a fallback link, else its own)
        by_stack.setdefault(plan.run_stack(c), []).append((c, procs))
    ready: dict[str, tuple | None] = {}  # stack -> (prepared, spec, job path, job cells by id)

    def prepare(stack: str, items: list[tuple[Cell, list]]) -> tuple | None:
        """Prepare a stack once per run; None (its cells skipped) when it is unavailable."""
        if stack in ready:
            return ready[stack]
        spec = stacks[stack]
        run["stacks"][stack] = {"framework": spec["framework"], "original": spec["original"],
                                "image": spec["image"]}
        try:
            prepared = runner.prepare(stack, spec, say)
        except StackUnavailable as e:
            for c, procs in items:
                rundir.write_cell(placeholder_result(run_id, c, "skipped", str(e),
                                                     plan.options.device))
                record(c, "skipped", str(e), None)
                for p in procs:
                    progress.done(c, "skipped", 0.0, process=p)
            ready[stack] = None
            return None
        if prepared.get("environment"):  # which interpreter and pins run the stack, and why
            run["stacks"][stack]["environment"] = prepared["environment"]
        if prepared.get("env_probe"):  # what that environment can use (runners/env_probe.py)
            run.setdefault("environments", {})[stack] = prepared["env_probe"]
        job = make_job(plan, stack, run_id, run["kit"], str(rundir.cells_dir.resolve()),
                       cells=[c for c, _ in items])  # the cells to run, not every cell of the stack
        for jc in job["cells"]:  # the default design's iterations per process (reprokit/design.py)
            jc["budget"] = design.process_budget(jc["budget"], (run.get("design") or {}).get("cells", {})
                                                 .get(jc["id"]))
        for jc in job["cells"]:  # the probe of a stack reaching this GPU only through PTX JIT:
            if verdicts[jc["id"]].get("env", {}).get("CUDA_FORCE_PTX_JIT") == "1":  # its workload
                jc["params"]["cuda_force_ptx_jit"] = True  # sets it before importing the framework
        job_path = rundir.jobs_dir / f"{stack}.json"
        files.write_json_atomic(job_path, job, "job")
        ready[stack] = (prepared, spec, job_path, {jc["id"]: jc for jc in job["cells"]})
        return ready[stack]

    concurrent = bool(getattr(runner, "concurrent", False))
    if concurrent:  # a cluster runner: every cell submitted, outcomes collected as they finish
        from reprokit.execute_concurrent import run_concurrent
        if run_concurrent(plan, runner, rundir, run, by_stack, prepare, ready, record,
                          record_merged, progress, say, resume, stacks):
            progress.close()
            return run  # --detach: the jobs run on; status/report/--resume re-attach
    rounds = [] if concurrent else [None] if repeat == 1 else list(range(1, repeat + 1))
    for rnd in rounds:
        for stack, items in by_stack.items():
            now = [(c, procs) for c, procs in items if rnd in procs]
            if not now or prepare(stack, items) is None:
                continue
            prepared, spec, job_path, job_cells = ready[stack]
            for c, _ in now:  # the first GPU cell of a stack, GPU and driver: an untimed start
                jit = jit_warmup.before_cell(run, runner, prepared, job_path, job_cells[c.id],
                                             rundir, stack, say)
                progress.start(c, process=rnd)
                kwargs = {} if rnd is None else {"process": rnd}
                run["current"] = {"cell_id": c.id, "process": rnd, "started": files.utcnow(),
                                  "driver": run["driver"]}
                rundir.write_run(run)  # a driver killed now leaves the running cell on record
                ctx["current"] = (c, rnd, time.monotonic())
                monitor = gpu_state.Monitor() if _gpu_cell(job_cells[c.id], plan.options.device,
                                                           run["host_fingerprint"]) else None
                try:
                    outcome = runner.run_cell(prepared, job_path, job_cells[c.id], rundir.cells_dir,
                                              rundir.log_path(c.id, rnd), **kwargs)
                except (lifecycle.Interrupted, lifecycle.EngineLost):
                    raise
                except Exception as e:  # a runner bug must not end the suite either
                    if lifecycle.is_storage_error(e):
                        raise
                    outcome = CellOutcome("crashed", f"runner error: {type(e).__name__}: {e}", 0.0,
                                          None, {"traceback": traceback.format_exc()[-2000:]})
                finally:
                    raw_gpu = monitor.stop() if monitor is not None else None
                if raw_gpu is not None:  # gpu_state.attach makes it the result's gpu_state
                    outcome.runner_info["gpu_state"] = raw_gpu
                res = _finish_result(rundir, run_id, c, outcome, spec, runner.name,
                                     plan.options.device, rnd, prepared,
                                     fallback.substitution(verdicts[c.id]),
                                     host=run["host_fingerprint"], jit=jit)
                if probe_cache.is_probe(c.workload):
                    _record_probe(res, run, runner.name, plan.options.device, say)
                if rnd is None:
                    record(c, res["status"], res["reason"], outcome.process_wall_s)
                else:
                    record_merged(c, merge_processes.merge_cell(rundir, c.id, repeat, run_id))
                progress.done(c, res["status"], outcome.process_wall_s, res["reason"], process=rnd)
    runner.cleanup()
    run = reconcile.reconcile(rundir, run, modify=True, say=say).run  # what is on disk now
    ctx["run"] = run
    run["current"] = None
    run["finished"] = files.utcnow()
    run["wall_s"] = prior_wall + time.time() - started
    rundir.write_run(run)
    progress.close()
    return run


def not_ok_cells(run: dict) -> list[dict]:
    """The run's cell entries that did not finish ok (`pending`, `interrupted`, `missing`, `invalid`
    too; a cell not implemented or skipped by preflight is not a failure)."""
    return [c for c in run["cells"] if c["status"] not in ("ok", "not_implemented", "skipped")]


def exit_code(run: dict) -> int:
    """1 when some cell did not finish ok, else 0: `run` and `report` exit with it."""
    return 1 if not_ok_cells(run) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use reproduce.py")
