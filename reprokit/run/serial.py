"""The serial way of running a plan's cells over the run record: one cell process at a time.

reprokit/run/execute.py (the driver) opens the record, prepares each stack's job once and hands a
record.Execution here, or to reprokit/run/execute_concurrent.py for a runner that runs every cell at
once (Slurm). Per cell: the untimed JIT warm-up of a stack's first GPU cell, the GPU state watched
around the process, the runner's outcome merged into the cell's result (record.finish_result), a
probe's outcome into the probe cache, then the entry in run.json, before the next cell starts.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import replace

from reprokit.analysis import decidability
from reprokit.plan import fallback, probe_cache
from reprokit.probes import gpu_state
from reprokit.reader import merge
from reprokit.reader.cells import valid_processes
from reprokit.reader.model import CellDesign, Run
from reprokit.reader.result import CellResult
from reprokit.reader.status import Skip, Stop
from reprokit.run import jit_warmup, lifecycle, record
from reprokit.run.record import Execution
from reprokit.runners import cell_process
from reprokit.runners.base import CellOutcome


def run_serial(ex: Execution) -> None:
    """One cell process at a time: with --repeat K round N runs process N of every cell, stack by
    stack; each result (then run.json) is on disk before the next cell starts."""
    plan, runner, rec, progress, say = ex.plan, ex.runner, ex.rec, ex.progress, ex.say
    repeat = plan.options.repeat
    rundir, run = rec.rundir, rec.run
    run_id = run["run_id"]
    verdicts = plan.verdicts or {}
    for rnd in [None] if repeat == 1 else list(range(1, repeat + 1)):
        for stack, items in ex.by_stack.items():
            now = _startable(ex, [(c, procs) for c, procs in items if rnd in procs], rnd)
            ready = ex.prepare(stack, items) if now else None
            if ready is None:
                continue
            prepared, spec, job_path, job_cells = ready
            for c, _ in now:  # the first GPU cell of a stack, GPU and driver: an untimed start
                job_cell = _within_limit(ex, c, rnd, job_cells[c.id])
                if job_cell is None:  # left by --time-limit (recorded)
                    continue
                jit = jit_warmup.before_cell(run, runner, prepared, job_path, job_cell,
                                             rundir, stack, say)
                progress.start(c, process=rnd)
                kwargs = {} if rnd is None else {"process": rnd}
                rec.start(c, rnd)  # a driver killed now leaves the running cell on record
                monitor = gpu_state.Monitor() if _gpu_cell(job_cell, plan.options.device,
                                                           run["host_fingerprint"]) else None
                try:
                    outcome = runner.run_cell(prepared, job_path, job_cell, rundir.cells_dir,
                                              rundir.log_path(c.id, rnd), **kwargs)
                except (lifecycle.Interrupted, cell_process.EngineLost):
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
                skip = None
                if outcome.status == "timeout" and job_cell.get("time_limit_stop"):
                    skip = Skip("while_running", limit_s=plan.options.time_limit_s,
                                left_s=job_cell["timeout_s"], needs_s=job_cell["time_limit_stop"],
                                ran_s=outcome.process_wall_s)
                    outcome = replace(outcome, status="skipped", reason=skip.reason())
                res = record.finish_result(rundir, run_id, c, outcome, spec, runner.name,
                                           plan.options.device, rnd, prepared,
                                           fallback.substitution(verdicts[c.id]),
                                           host=run["host_fingerprint"], jit=jit, skip=skip)
                if probe_cache.is_probe(c.workload):
                    probe_cache.record_cell(res, run["host_fingerprint"], runner.name,
                                            plan.options.device, say)
                if rnd is None:
                    rec.record(c, res["status"], res["reason"], outcome.process_wall_s, skip)
                else:
                    rec.record_merged(c, record.merge_cell(rundir, c.id, rec.processes_of(c.id, repeat),
                                                              run_id))
                progress.done(c, res["status"], outcome.process_wall_s, res["reason"], process=rnd)
        if rnd is not None:
            look(ex, rnd)


def _sequential(ex: Execution) -> dict[str, CellDesign]:
    """{cell id: its design} of the run's sequentially designed cells (a design by role), as run.json
    says now."""
    d = ex.rec.design()
    return d.sequential() if d is not None else {}


def look(ex: Execution, rnd: int) -> None:
    """After round `rnd`: each sequential cell that ran process `rnd` (from its first look on) whose
    verdicts and claim pairs are all decided, at the design's per-look confidence, stops there; at
    its cap it stops undecided, with what it would need (reprokit/analysis/decidability.py
    sequential_status). A stopped cell's processes are the ones it ran (run.json design)."""
    seq = _sequential(ex)
    if not seq:
        return
    looking = [(c, procs) for items in ex.by_stack.values() for c, procs in items
               if c.id in seq and seq[c.id].stop is None and rnd in procs
               and rnd >= (seq[c.id].first_look or 2)]
    if not looking:
        return
    rundir, run_id = ex.rec.rundir, ex.rec.run["run_id"]
    merged = {}  # each as far as it ran: a cell still running has `rnd` processes, a stopped one its own
    for cid, e in seq.items():
        k = e.processes if e.stop is not None else rnd
        done = valid_processes(rundir, cid, k, run_id)
        if done:
            merged[cid] = CellResult.from_doc(merge.merge(done, max(done)))
    try:
        run = Run.from_doc(ex.rec.run, merged)
        still = decidability.sequential_status(run, [c.id for c, _ in looking])
    except Exception as e:  # the stopping rule must never cost the run: the cells run on
        ex.say(f"sequential design: the look after process {rnd} failed ({type(e).__name__}: {e}); "
               "the cells run all their processes")
        return
    for c, procs in looking:
        if c.id not in merged or not merged[c.id].measured:  # no process measured anything: nothing
            continue  # was decided (it runs its processes, and the run says why they failed)
        open_items = still.get(c.id) or []
        if open_items and rnd < max(procs):
            continue
        stop_sequential(ex, c, procs, Stop("cap", rnd, tuple(open_items)) if open_items
                        else Stop("decided", rnd))


def stop_sequential(ex: Execution, c, procs: list, stop: Stop) -> None:
    """Stop a sequential cell after `stop.after` processes: no later process runs, its result is merged
    from those it ran, and run.json's design says so (reprokit/run/record.py record_stop)."""
    done = stop.after
    ex.rec.record_stop(c, stop)
    later = [p for p in procs if p > done]
    procs[:] = [p for p in procs if p <= done]
    for p in later:
        ex.progress.remaining.pop((c.id, p), None)
    run_id = ex.rec.run["run_id"]
    ex.rec.record_merged(c, record.merge_cell(ex.rec.rundir, c.id, done, run_id))
    ex.say(f"{c.id}: {stop.text()}")


def process_estimate(ex: Execution, cell_id: str) -> float | None:
    """The expected seconds of one process of the cell: the ETA's (its own processes, or its recorded
    time at this run's pace), else the design's plan; None when unknown."""
    here = ex.progress.estimate(cell_id)  # this run's pace, where it knows one
    if here is not None:
        return here
    d = ex.rec.design()
    own = d.cell(cell_id) if d is not None else None
    if own is not None and own.planned_s:
        return float(own.planned_s) / max(1, own.processes)
    return None


def _startable(ex: Execution, now: list, rnd) -> list:
    """The (cell, processes) of a round that may start under --time-limit; the others are left
    (recorded) before their stack is prepared, so no environment is built for a cell that will not run."""
    left = {c.id for c, _ in now if not _may_start(ex, c)}
    for c, _ in now:
        if c.id in left:
            _leave(ex, c, rnd)
    return [(c, procs) for c, procs in now if c.id not in left]


def _may_start(ex: Execution, c) -> bool:
    """Whether a process of the cell may start under --time-limit: the limit has not passed and its
    expected time (process_estimate) fits what is left; always without a limit."""
    deadline = getattr(ex.plan.options, "deadline", None)
    if deadline is None:
        return True
    left = deadline - time.time()
    need = process_estimate(ex, c.id)
    return left > 0 and (need is None or need <= left)


def _within_limit(ex: Execution, c, rnd, job_cell: dict) -> dict | None:
    """The job cell to run under --time-limit (its time limit cut to what is left of the run's, the
    cut recorded as `time_limit_stop`), or None when the process is left: the limit has passed, or
    its planned time exceeds what is left (recorded `skipped`, with why). Unchanged without a limit."""
    deadline = getattr(ex.plan.options, "deadline", None)
    if deadline is None:
        return job_cell
    if _may_start(ex, c):
        left = deadline - time.time()
        own = float(job_cell.get("timeout_s") or 1200)
        if left >= own:
            return job_cell
        return {**job_cell, "timeout_s": round(left, 1), "time_limit_stop": own}
    _leave(ex, c, rnd)
    return None


def _leave(ex: Execution, c, rnd) -> None:
    """Process `rnd` of the cell will not start under --time-limit: a sequential cell past its first
    look stops where it is; any other is recorded `skipped`, with why."""
    left = ex.plan.options.deadline - time.time()
    need = process_estimate(ex, c.id)
    seq = _sequential(ex).get(c.id)
    if seq and rnd is not None and rnd > (seq.first_look or 2):
        procs = next(p for items in ex.by_stack.values() for x, p in items if x.id == c.id)
        stop_sequential(ex, c, procs, Stop("time_limit", rnd - 1))
        return
    rec, rundir = ex.rec, ex.rec.rundir
    skip = Skip("before_start", limit_s=ex.plan.options.time_limit_s, left_s=max(left, 0.0),
                needs_s=need)
    reason = skip.reason()
    doc = record.placeholder_result(rec.run["run_id"], c, "skipped", reason, ex.plan.options.device, skip)
    if rnd is None:
        rundir.write_cell(doc)
        rec.record(c, "skipped", reason, None, skip)
    else:
        doc["process"] = rnd
        rundir.write_process(doc)
        rec.record_merged(c, record.merge_cell(rundir, c.id, rec.processes_of(c.id, ex.plan.options.repeat),
                                                  rec.run["run_id"]))
    ex.progress.left(c, reason, process=rnd)


def _gpu_cell(job_cell: dict, device: str, host: dict) -> bool:
    """Whether a cell may run on a GPU, so its GPUs' state is watched (a CPU cell's is not)."""
    dev = job_cell.get("device") or device
    return dev == "gpu" or (dev == "auto" and bool((host or {}).get("gpus")))
