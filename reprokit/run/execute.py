"""Execute a plan with a runner: job files out, cell results in, run record kept current.

The run record is rewritten atomically after every cell process, so a crash of the driver loses
nothing already measured, and `--resume RUN` skips every cell that already has an ok result.

With `run --repeat K` (K > 1) every cell runs in K fresh processes, interleaved across cells:
round N runs process N of every cell (stack by stack, each stack prepared once per run). Each
process writes cells/<stem>.p<N>.json and the cell's main result is re-merged from the process
files after each of them (reprokit/reader/merge.py). A resumed run keeps the ok process files
and runs only the missing or failed processes again.

The driver here writes run.json (`_open_record`), records what will not run (`_todo`), prepares each
stack once (`StackJobs`), then hands a record.Execution to one of the two ways of running the cells:
one process at a time (reprokit/run/serial.py) or, for a runner with `concurrent` (Slurm), all at
once (reprokit/run/execute_concurrent.py); neither imports this module. Every cell entry, placeholder
and result file goes through reprokit/run/record.py.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass

from reprokit import files, formats, results
from reprokit.catalog.suites import Cell, load_stacks
from reprokit.errors import UserError
from reprokit.plan import design, fallback
from reprokit.plan.plan import Plan, cell_specs, make_job
from reprokit.probes import cpu_peak, fingerprint, gpu_peak, processes
from reprokit.reader import lock, merge
from reprokit.reader.cells import check_result, status_counts, valid_processes
from reprokit.run import host_history, lifecycle, reconcile, record
from reprokit.run.execute_concurrent import run_concurrent
from reprokit.run.progress import Progress, design_times, past_cell_times, recorded_times
from reprokit.run.record import Execution, RunRecord, placeholder_result, set_entry
from reprokit.run.serial import run_serial
from reprokit.runners import cell_process
from reprokit.runners.base import Runner, StackUnavailable
from reprokit.runners.host_preflight import decide


def _kept_processes(rundir: results.RunDir, run_id: str, cell: Cell, repeat: int) -> dict[int, float | None]:
    """{index: process wall seconds (None: not recorded)} of a `--repeat K` cell's ok process files
    of this run: a resumed run keeps them and runs the other indices."""
    done = valid_processes(rundir, cell.id, repeat, run_id)
    return {i: (r.get("runner") or {}).get("process_wall_s") for i, r in done.items()
            if r.get("status") == "ok"}


def check_resume_repeat(run: dict, repeat: int | None) -> int:
    """The K of a resumed run (run.json `repeat`, absent = 1); a different --repeat is an error."""
    stored = int(run.get("repeat") or 1)
    if repeat is not None and repeat != stored:
        design = run.get("design") or {}
        if design.get("kind") == "auto":  # the default design: its K is the most any cell may take
            made = (f"which runs the default design (deciding cells sequentially, up to {stored} "
                    "processes a cell)")
        else:
            made = f"which was made with --repeat {stored}"
        raise UserError(f"--repeat {repeat} does not match the run being resumed, {made}: a resume "
                        f"continues the run's own design; drop --repeat to continue it, or start a new "
                        f"run with --repeat {repeat}")
    return stored


def _cpu_peak(say) -> dict | None:
    """Measure the CPU's GEMM peak once per run, so CPU results can be compared as efficiency."""
    probes = {}
    for backend in ("numpy", "torch"):  # the best GEMM library here sets the peak
        try:
            probes[backend] = cpu_peak.measure(backend=backend, with_clock=False)
        except Exception as e:  # the probe must never cost the run
            probes[backend] = {"error": f"{type(e).__name__}: {e}"}
    ok = [p for p in probes.values() if "gflops" in p]
    if ok:
        peak = dict(max(ok, key=lambda p: p["gflops"]))
        peak["probes"] = {k: v.get("gflops", v.get("error")) for k, v in probes.items()}
        try:  # once per run, beside the best GEMM (each chain timing takes about 0.35 s)
            peak["clock"] = cpu_peak.measure_clock()
        except Exception as e:  # the probe must never cost the run
            peak["clock"] = {"ghz": None, "reason": f"the clock probe failed: {type(e).__name__}: {e}"}
        clock = (peak.get("clock") or {}).get("ghz")
        say(f"cpu peak probe: {peak['gflops']:.1f} GFLOP/s ({peak['library']}; all: {peak['probes']}); "
            + (f"effective clock {clock:.3g} GHz measured (dependent register adds, multiply-checked)"
               if clock else
               f"clock not measured: {(peak.get('clock') or {}).get('reason')}"))
        return peak
    say(f"cpu peak probe failed: {probes}")
    return {"error": str(probes)}


def _gpu_peak(device: str, runner_name: str, host: dict, say) -> dict:
    """Measure the GPUs' fp32 and TF32 GEMM rate once per GPU run (reprokit/probes/gpu_peak.py)."""
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
    if "cell_specs" in run or not run.get("cells"):  # a run that recorded none: not started now
        run["cell_specs"] = {**(run.get("cell_specs") or {}), **specs}
    return changed


def _driver() -> dict:
    pid = os.getpid()
    return {"pid": pid, "host": processes.host_name(),
            "start_ticks": processes.process_start_ticks(pid)}


def execute(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str],
            resume: bool = False, say=print) -> dict:
    """Run the plan into rundir (holding its lock; see reprokit/run/lifecycle.py for the signals).

    run.json is written before the CPU probe and the first cell, with every cell of the plan
    `pending`, and rewritten after every cell. SIGINT, SIGTERM or SIGHUP stop the running cell,
    record it as `interrupted`, write run.json and raise lifecycle.Interrupted (exit 128 + the
    signal); a full or read-only results disk raises lifecycle.StorageError (one line, exit 2);
    a Docker engine that stops answering raises cell_process.EngineLost (exit 1). Measured cells are
    never lost: each is on disk before the next starts."""
    rundir.path.mkdir(parents=True, exist_ok=True)
    # the CLI takes the lock before anything else and holds it until it exits; a caller that did
    # not (a test, a script) gets it for the run only
    taken = None if lock.holds(rundir.path) else lifecycle.acquire(rundir.path, argv)
    try:
        return _execute_guarded(plan, runner, rundir, argv, resume, say)
    finally:
        if taken is not None:
            taken.release()


@dataclass
class _Driving:
    """What an interruption needs to finish the run: its record (once run.json is written or
    reconciled) and the progress line."""
    rec: RunRecord | None = None
    progress: Progress | None = None


def _ok_processes(rec: RunRecord, plan: Plan) -> int:
    """How many of the plan's cell processes of this run finished ok (`_kept_processes`, the ones a
    resume keeps): what an interrupted `--repeat K` run keeps although none of its cells has all K yet."""
    k = plan.options.repeat
    return sum(len(_kept_processes(rec.rundir, rec.run["run_id"], c, rec.processes_of(c.id, k)))
               for c in plan.runnable)


def _execute_guarded(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str],
                     resume: bool, say) -> dict:
    started = time.time()
    state = _Driving()
    with lifecycle.signal_guard():
        try:
            return _execute(plan, runner, rundir, argv, resume, say, started, state)
        except lifecycle.Interrupted as e:
            cell_text = _stop(rundir, runner, plan, state, started, "interrupted",
                              f"interrupted by {e.signame}", say)
            ok = status_counts(state.rec.run["cells"] if state.rec else []).get("ok", 0)
            k = plan.options.repeat
            done = _ok_processes(state.rec, plan) if state.rec else 0
            kept = f"{ok} cell(s)" if k == 1 else \
                f"{ok} finished cell(s) and {done} ok cell process(es)"
            raise lifecycle.Interrupted(e.signum, (
                f"interrupted by {e.signame} after {time.time() - started:.1f} s{cell_text}; "
                f"{kept} measured are kept in {rundir.path}; continue with "
                f"`reproduce.py run --suite {plan.suite.name} --resume {rundir.path}` (same "
                "options)")) from None
        except cell_process.EngineLost as e:
            cell_text = _stop(rundir, runner, plan, state, started, "interrupted", str(e), say)
            raise cell_process.EngineLost(f"{e}{cell_text}; the cells measured are kept in "
                                       f"{rundir.path}; start the engine and continue with "
                                       f"--resume {rundir.path}") from None
        except OSError as e:
            if not lifecycle.is_storage_error(e):
                raise
            with contextlib.suppress(Exception):
                _stop(rundir, runner, plan, state, started, "interrupted",
                      f"the results disk refused a write: {e.strerror or e}", say)
            raise lifecycle.storage_error(e) from None


def _stop(rundir: results.RunDir, runner: Runner, plan: Plan, state: _Driving, started: float,
          status: str, why: str, say) -> str:
    """After an interruption: the running cell is stopped (its runner killed it), recorded with
    `status` unless it wrote a valid ok result in time; run.json finished. Returns ' during CELL'."""
    with contextlib.suppress(Exception):
        runner.cleanup()
    if state.progress is not None:
        with contextlib.suppress(Exception):
            state.progress.close()
    text = ""
    if state.rec is None:
        return text
    run = state.rec.run
    run_id = run["run_id"]
    cur = state.rec.current
    if cur is not None:
        cell, process, t0 = cur
        text = f" during {cell.id}" + (f" (process {process})" if process else "")
        reason = (f"{why} after {time.monotonic() - t0:.1f} s of the cell; it was stopped; "
                  f"--resume {rundir.path} measures it again")
        doc, _ = check_result(rundir.cell_path(cell.id, process), run_id, cell.id, process)
        if doc is None or doc.get("status") != "ok":
            doc = placeholder_result(run_id, cell, status, reason, plan.options.device)
            if process is not None:
                doc["process"] = process
                rundir.write_process(doc)
            else:
                rundir.write_cell(doc)
        if process is None:
            set_entry(run, cell, doc["status"], doc["reason"], None)
        else:
            k = state.rec.processes_of(cell.id, plan.options.repeat)
            merged = merge.merge(valid_processes(rundir, cell.id, k, run_id), k)
            rundir.write_cell(merged)
            set_entry(run, cell, merged["status"], merged["reason"], None)
    run.setdefault("incidents", []).append(
        {"kind": "interrupted", "at": files.utcnow(), "cell_id": cur[0].id if cur else None,
         "text": f"{why}{text} after {time.time() - started:.1f} s"})
    run["current"] = None
    run["finished"] = files.utcnow()
    run["wall_s"] = state.rec.prior_wall + time.time() - started
    record.write_run(rundir, run)
    return text


def _open_record(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str],
                 resume: bool, started: float, state: _Driving, say) -> RunRecord:
    """run.json of a new run (written with every cell of the plan `pending` before the CPU and GPU
    probes) or of the run being resumed (reconciled with its files first)."""
    plan_cells = [c for c, _, _ in plan.not_runnable] + list(plan.runnable)
    if resume and rundir.run_file.exists():
        run = rundir.load_run()  # its own run_id: its directory may have been renamed or moved
        check_resume_repeat(run, plan.options.repeat)
        run = reconcile.reconcile(rundir, run, {c.id: c.stack for c in plan_cells},
                                  modify=True, say=say).run
        run["finished"] = None
        run["current"] = None
        kit = files.kit_info()
        if kit != run.get("kit"):  # the processes it runs now carry this kit (make_job); say so here
            was = (run.get("kit") or {}).get("git_commit") or "unknown"
            run.setdefault("incidents", []).append(
                {"kind": "resumed", "at": files.utcnow(), "cell_id": None,
                 "text": f"resumed by kit {kit.get('git_commit') or 'unknown'}"
                         f"{' (uncommitted changes)' if kit.get('git_dirty') else ''}, "
                         f"the run started with {was}: the results of this sitting record it"})
        if _record_specs(run, cell_specs(plan), plan.options.allow_changed_data):
            run["data_snapshot"] = results.snapshot_data(rundir)  # the data it now measures with
        state.rec = RunRecord(rundir, run, started)
    else:
        run = {
            "schema_version": formats.version("run"), "kind": "run", "run_id": rundir.path.name,
            "suite": plan.suite.name, "argv": argv, "runner": runner.name,
            "protocol": plan.options.protocol, "quick": plan.options.quick,
            "repeat": plan.options.repeat, "started": files.utcnow(), "finished": None, "wall_s": None,
            "host_fingerprint": plan.host if plan.host is not None else fingerprint.host_fingerprint(),
            "kit": files.kit_info(), "stacks": {}, "cells": [], "cell_specs": cell_specs(plan),
            "data_snapshot": results.snapshot_data(rundir),
            "options": {"device": plan.options.device, "min_samples": plan.options.min_samples,
                        "time_budget_s": plan.options.time_budget_s,
                        "time_limit_s": plan.options.time_limit_s,
                        "data": (plan.options.data or {}).get("root"),
                        "cells": list(plan.options.cells)},
            "driver": _driver(), "current": None, "cpu_peak": None,
        }
        if plan.options.design is not None:  # the default design (reprokit/plan/design.py), not --repeat K
            run["design"] = plan.options.design
        # this host's earlier runs beside this one: the between-run term of its re-run intervals
        run["history"] = host_history.collect(rundir.path.parent, run["host_fingerprint"],
                                              {c.id for c in plan_cells}, rundir.path.name)
        for c in plan_cells:  # every cell is listed before anything runs
            set_entry(run, c, "pending", "not run yet", None)
        state.rec = RunRecord(rundir, run, started)
        record.write_run(rundir, run)  # before the CPU probe: a driver killed from here on leaves a run
        run["cpu_peak"] = _cpu_peak(say)
        run["gpu_peak"] = _gpu_peak(plan.options.device, runner.name, run["host_fingerprint"], say)
    run["driver"] = _driver()
    if plan.options.data:
        run["data"] = plan.options.data
    state.rec.prior_wall = run.get("wall_s") or 0.0
    return state.rec


def _todo(plan: Plan, rec: RunRecord, entries: dict[str, dict], resume: bool,
          say) -> tuple[list[tuple[Cell, list]], dict[str, list[float]]]:
    """(cell, process indices to run) of every runnable cell: [None] = one process writing the main
    result (K = 1); and {cell id: seconds of its kept processes} (for the ETA). A resumed run keeps
    what is measured; a cell preflight refuses is recorded skipped. `entries`: run.json's cell
    entries before this driver recorded any."""
    rundir, run_id, repeat = rec.rundir, rec.run["run_id"], plan.options.repeat
    verdicts = plan.verdicts or {}
    todo: list[tuple[Cell, list]] = []
    kept_s: dict[str, list[float]] = {}
    for c in plan.runnable:
        k = rec.processes_of(c.id, repeat)  # a design by role: its own
        procs: list = [None] if repeat == 1 else list(range(1, k + 1))
        if resume and repeat == 1 and entries.get(c.id, {}).get("status") == "ok":
            say(f"resume: {c.id} already measured, kept")
            continue
        if resume and repeat > 1:
            kept = _kept_processes(rundir, run_id, c, k)
            procs = [i for i in range(1, k + 1) if i not in kept]
            kept_s[c.id] = [w for w in kept.values() if isinstance(w, (int, float)) and w > 0]
            if not procs:
                say(f"resume: {c.id} already measured, kept")
                merged = rundir.load_cell(c.id)
                if merged is None or merged.get("status") != "ok" \
                        or len(merged.get("processes", [])) != k:
                    merged = record.merge_cell(rundir, c.id, k, run_id)
                if entries.get(c.id, {}).get("status") != "ok":
                    rec.record_merged(c, merged)
                continue
            if kept:
                say(f"resume: {c.id}: process{'es' if len(kept) > 1 else ''} "
                    f"{', '.join(map(str, sorted(kept)))} of {k} kept, running "
                    f"{', '.join(map(str, procs))}")
        v = verdicts[c.id]
        if not v["runnable"]:
            reason = "preflight: " + "; ".join(v["reasons"])
            rundir.write_cell(placeholder_result(run_id, c, "skipped", reason, plan.options.device))
            rec.record(c, "skipped", reason, None)
            continue
        if fallback.substitution(v):
            say(f"preflight: {c.id}: runs on {fallback.stack_to_run(c.stack, v)} instead of {c.stack} "
                f"(fallback chain; why: run.json preflight, and the cell's result)")
        elif v["status"] == "jit":
            say(f"preflight: {c.id}: {'; '.join(v['reasons'])}")
        todo.append((c, procs))
    return todo, kept_s


class StackJobs:
    """Each stack the run needs prepared once per run by the runner (its environment or image) and
    its job file written (jobs/<stack>.json, the cells to run); run.json `stacks` says what ran
    them. Both ways of executing use `prepare`."""

    def __init__(self, plan: Plan, runner: Runner, rec: RunRecord, progress: Progress,
                 stacks: dict, say) -> None:
        self.plan, self.runner, self.rec, self.progress = plan, runner, rec, progress
        self.stacks, self.say = stacks, say
        # stack -> (prepared, spec, job path, job cells by id), or None: unavailable
        self.ready: dict[str, tuple | None] = {}

    def prepare(self, stack: str, items: list[tuple[Cell, list]]) -> tuple | None:
        """(prepared, spec, job path, job cells by id); None (its cells recorded skipped) when the
        stack is unavailable."""
        if stack in self.ready:
            return self.ready[stack]
        plan, run, rundir = self.plan, self.rec.run, self.rec.rundir
        spec = self.stacks[stack]
        run["stacks"][stack] = {"framework": spec["framework"], "original": spec["original"],
                                "image": spec["image"]}
        try:
            prepared = self.runner.prepare(stack, spec, self.say)
        except StackUnavailable as e:
            for c, procs in items:
                rundir.write_cell(placeholder_result(run["run_id"], c, "skipped", str(e),
                                                     plan.options.device))
                self.rec.record(c, "skipped", str(e), None)
                for p in procs:
                    self.progress.done(c, "skipped", 0.0, process=p)
            self.ready[stack] = None
            return None
        if prepared.get("environment"):  # which interpreter and pins run the stack, and why
            run["stacks"][stack]["environment"] = prepared["environment"]
        if prepared.get("env_probe"):  # what that environment can use (runners/env_probe.py)
            run.setdefault("environments", {})[stack] = prepared["env_probe"]
        job = make_job(plan, stack, run["run_id"], files.kit_info(), str(rundir.cells_dir.resolve()),
                       cells=[c for c, _ in items])  # the cells to run, not every cell of the stack
        for jc in job["cells"]:  # the default design's iterations per process (reprokit/plan/design.py)
            jc["budget"] = design.process_budget(jc["budget"], (run.get("design") or {}).get("cells", {})
                                                 .get(jc["id"]))
        for jc in job["cells"]:  # the probe of a stack reaching this GPU only through PTX JIT:
            if plan.verdicts[jc["id"]].get("env", {}).get("CUDA_FORCE_PTX_JIT") == "1":  # its workload
                jc["params"]["cuda_force_ptx_jit"] = True  # sets it before importing the framework
        job_path = rundir.jobs_dir / f"{stack}.json"
        files.write_json_atomic(job_path, job, "job")
        self.ready[stack] = (prepared, spec, job_path, {jc["id"]: jc for jc in job["cells"]})
        return self.ready[stack]


def _execute(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str], resume: bool,
             say, started: float, state: _Driving) -> dict:
    stacks = load_stacks()
    repeat = plan.options.repeat
    if repeat < 1:
        raise UserError(f"--repeat must be an integer of at least 1, not {repeat}")
    rec = _open_record(plan, runner, rundir, argv, resume, started, state, say)
    run = rec.run
    run_id = run["run_id"]
    entries = {e["cell_id"]: e for e in run["cells"]}
    for cell, status, reason in plan.not_runnable:
        skip = plan.skips.get(cell.id)
        rundir.write_cell(placeholder_result(run_id, cell, status, reason, plan.options.device, skip))
        rec.record(cell, status, reason, None, skip)

    if plan.verdicts is None or plan.runner != runner.name:  # a plan not decided for this runner
        plan = decide(plan, runner.name, run["host_fingerprint"])
    run["preflight"] = plan.verdicts
    todo, kept_s = _todo(plan, rec, entries, resume, say)
    if hasattr(runner, "reap_leftovers"):  # containers of this run, or of drivers that died
        runner.reap_leftovers(rundir.path, say)
    history = {**recorded_times(runner.name, plan.options.quick, plan.options.protocol),
               **past_cell_times(rundir.path.parent, runner.name, plan.options.quick,
                                 plan.options.protocol, exclude=rundir.path),
               **design_times(run.get("design"))}  # per-cell costs of the design that runs
    progress = Progress([(c, p) for c, procs in todo for p in procs], say=say, history=history,
                        repeat=repeat, kept=kept_s,
                        processes={c.id: rec.processes_of(c.id, repeat)
                                   for c, _ in todo}, deadline=plan.options.deadline)
    state.progress = progress
    by_stack: dict[str, list[tuple[Cell, list]]] = {}
    for c, procs in todo:  # by the stack whose image runs the cell (a fallback link, else its own)
        by_stack.setdefault(plan.run_stack(c), []).append((c, procs))
    ex = Execution(plan, runner, rec, by_stack, StackJobs(plan, runner, rec, progress, stacks, say).prepare,
                   progress, stacks, say, resume)
    if getattr(runner, "concurrent", False):  # a cluster runner: every cell submitted, outcomes
        # collected as they finish (reprokit/run/execute_concurrent.py)
        if run_concurrent(ex):
            progress.close()
            return run  # --detach: the jobs run on; status/report/--resume re-attach
    else:
        run_serial(ex)
    runner.cleanup()
    run = reconcile.reconcile(rundir, run, modify=True, say=say).run  # what is on disk now
    rec.run = run
    run["current"] = None
    run["finished"] = files.utcnow()
    run["wall_s"] = rec.wall()
    record.write_run(rundir, run)
    progress.close()
    return run


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use reproduce.py")
