"""Execute a plan with a runner that runs many cells at once (`runner.concurrent`, the Slurm runner).

reprokit/run/execute.py hands over here (record.Execution) once the run record is written and the cells to
run are known; both write the record through reprokit/run/record.py and this module never imports
execute.py: every cell (every process with --repeat K) is submitted, then the outcomes are collected as
they finish, each written (its result file, then run.json) before the next is looked at, so the
reliability rules of a run hold as for the one-at-a-time runners:

- one writer: the driver holds the run's lock throughout; `status`/`report` re-attach only when
  they can take it (a live driver keeps following its own jobs);
- nothing lost: a result the harness wrote is kept whatever Slurm says afterwards
  (record.finish_result reads it first); a cell without one gets a placeholder with its reason;
- resume: the job ids are in run.json (`slurm.jobs`); `--resume` re-attaches to the tasks that are
  still queued or running, collects the ones that ended, and re-submits only cells without a
  result;
- interrupt: SIGINT/SIGTERM/SIGHUP cancel what the driver submitted (scancel), the cancelled cells
  are recorded as interrupted, and lifecycle.Interrupted goes on up (exit 128 + the signal);
  `--detach` leaves the jobs running and returns at once.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reprokit import files, results
from reprokit.errors import UserError
from reprokit.plan import fallback, probe_cache
from reprokit.reader import lock
from reprokit.reader.cells import status_counts
from reprokit.reader.status import Skip
from reprokit.run import jit_warmup, lifecycle, reconcile, record
from reprokit.run.record import Execution, RunRecord
from reprokit.runners.base import CellOutcome


@dataclass
class _Collector:
    """Collects one task's outcome: its result written (record.finish_result), then its entry."""
    rec: RunRecord
    run_id: str
    runner: Any
    device: str
    repeat: int
    stacks: dict
    progress: Any = None
    verdicts: dict | None = None
    limit_s: float | None = None  # set once the run's --time-limit stopped what was still out

    def __call__(self, task, outcome: CellOutcome) -> dict | None:
        if getattr(task, "warmup", None) is not None:  # a JIT warm-up: run.json, never a cell
            return _collect_warmup(self, task, outcome)
        v = (self.verdicts or {}).get(task.cell.id)  # a fallback link runs the cell in its image
        return _collect(self, task, outcome, self.stacks[fallback.stack_to_run(task.cell.stack, v)],
                        fallback.substitution(v))


def _collect_warmup(c: _Collector, task, outcome: CellOutcome) -> None:
    """A JIT warm-up task ended: its run.json `jit_warmups` entry (an interrupted one is not kept: a
    resumed run warms up again)."""
    if outcome.status == "interrupted":
        return None
    w = task.warmup
    rec = jit_warmup.record(c.rec.run, w, outcome, (outcome.runner_info or {}).get("started")
                            or files.utcnow(), c.rec.rundir)
    c.runner.say(f"jit warm-up: {w.key}: {rec['status']} in {rec['wall_s']:.1f} s (job {task.job_id}); "
                 "the stack's cells were held until it ended; not part of any measurement")
    return None


def _warmup_of(run: dict, stack: str) -> dict | None:
    """The run's JIT warm-up record of a stack (jit_warmups), for its cells' `jit_warmup_s`."""
    return next((w for w in (run.get("jit_warmups") or {}).values() if w.get("stack") == stack), None)


def _limit_skip(c: _Collector, task, outcome: CellOutcome) -> Skip | None:
    """The --time-limit record of a task the limit ended: cancelled by the driver at the run's limit
    (stopped while running, or before it started), or ended by Slurm at the job limit the run's
    limit cut (`time_limit_stop`); None for any other outcome."""
    cut = task.job_cell.get("time_limit_stop")
    if outcome.status == "timeout" and cut:
        ran = outcome.process_wall_s or None
        return Skip("while_running", limit_s=c.limit_s, left_s=task.job_cell.get("timeout_s"), needs_s=cut,
                    ran_s=ran)
    if c.limit_s is None or outcome.status != "interrupted":
        return None
    ran = _elapsed_s(outcome.runner_info.get("time_used")) or outcome.process_wall_s or 0.0
    if ran > 0:
        return Skip("while_running", limit_s=c.limit_s, left_s=ran,
                    needs_s=cut or task.job_cell.get("timeout_s"), ran_s=ran)
    return Skip("before_start", limit_s=c.limit_s, left_s=0.0)


def _elapsed_s(text: Any) -> float | None:
    """Seconds of Slurm's elapsed time '[D-]HH:MM:SS' or 'MM:SS' (None when absent or unreadable)."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?", str(text or "").strip())
    if not m:
        return None
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return float(((d * 24 + h) * 60 + mi) * 60 + s)


def _collect(c: _Collector, task, outcome: CellOutcome, stack_spec: dict,
             substitution: dict | None = None) -> dict:
    rundir = c.rec.rundir
    skip = _limit_skip(c, task, outcome)
    if skip is not None:
        outcome = replace(outcome, status="skipped", reason=skip.reason())
    res = record.finish_result(rundir, c.run_id, task.cell, outcome, stack_spec, c.runner.name,
                               c.device, task.process, substitution=substitution,
                               jit=_warmup_of(c.rec.run, task.cell.stack), skip=skip)
    info = outcome.runner_info
    if info.get("launcher") == "local":  # the local environment ran: say what it is
        subs = res.setdefault("implementation", {}).setdefault("substitutes", [])
        chosen = info.get("substitutes")  # the environment reprokit/runners/venvs.py chose, and its own
        if chosen is None:
            chosen = stack_spec.get("local", {}).get("substitutes", [])
        missing = [s for s in chosen if s not in subs]
        subs.extend(missing)
        if info.get("environment"):
            res["environment"] = info["environment"]
        if missing or info.get("environment"):
            (rundir.write_cell if task.process is None else rundir.write_process)(res)
    if probe_cache.is_probe(task.cell.workload):  # keyed by the node the task fingerprinted
        probe_cache.record_cell(res, c.rec.run.get("host_fingerprint") or {}, c.runner.name, c.device,
                                c.runner.say)
    if task.process is None:
        c.rec.record(task.cell, res["status"], res["reason"], outcome.process_wall_s, skip)
    else:
        k = c.rec.processes_of(task.cell.id, c.repeat)
        c.rec.record_merged(task.cell, record.merge_cell(rundir, task.cell.id, k, c.run_id))
    if c.progress is not None:
        c.progress.start(task.cell, process=task.process)
        c.progress.done(task.cell, res["status"], outcome.process_wall_s, res["reason"],
                        process=task.process)
    return res


def run_concurrent(h: Execution) -> bool:
    """Submit every cell of `h.by_stack`, collect them as they finish. True when detached (the run
    is left unfinished: its jobs run on)."""
    from reprokit.runners.slurm import Task, say_detached

    plan, runner, rundir, run, say = h.plan, h.runner, h.rec.rundir, h.rec.run, h.say
    run_id = rundir.path.name
    repeat = plan.options.repeat
    slurm = run.setdefault("slurm", {})
    slurm["options"] = runner.options.record()
    if getattr(runner, "probe_result", None):
        slurm["probe"] = runner.probe_result
    slurm.setdefault("jobs", [])
    tasks: dict[tuple, Task] = {}
    prepared: dict[str, dict] = {}
    models = _gpu_models(plan.suite.sources)
    for stack, items in h.by_stack.items():
        ready = h.prepare(stack, items)
        if ready is None:  # unavailable: its cells were recorded skipped
            continue
        p, _spec, job_path, job_cells = ready
        prepared[stack] = p
        for c, procs in items:
            for proc in procs:
                tasks[(c.id, proc)] = Task(c, proc, _within_limit(job_cells[c.id], plan.options),
                                           Path(job_path),
                                           rundir.log_path(c.id, proc),
                                           gpus=c.gpus_on(plan.options.device),
                                           gpu_models=models.get(c.id, ()))
    adopted = runner.adopt(rundir, slurm["jobs"], tasks) if h.resume and slurm["jobs"] else []
    for t in adopted:
        say(f"slurm: re-attached to {t.cell.id}" + (f" (process {t.process})" if t.process else "")
            + f": job {t.job_id}")
    fresh = [t for t in tasks.values() if t not in adopted]
    warm = _warmups(run, rundir, fresh, prepared, runner, say) if fresh else []
    records = warm + (runner.submit(rundir, prepared, fresh) if fresh else [])
    slurm["jobs"].extend(records)
    for r in records[len(warm):]:
        say(f"slurm: submitted {len(r['tasks'])} cell(s) of {r['stack']} as job array {r['job_id']} "
            f"({r['launcher']} launcher, {r['time_limit_min']} min each"
            + ("" if r["exclusive"] else ", nodes shared")
            + (f", after JIT warm-up job {r['after']}" if r.get("after") else "") + ")")
    for t in tasks.values():
        if t.process in (None, 1) or repeat == 1:
            h.rec.record(t.cell, "pending", f"submitted to Slurm as job {t.job_id}; not finished yet",
                         None)
    if runner.options.detach:
        slurm["detached"] = True
        record.write_run(rundir, run)
        say(say_detached(rundir, records))
        return True
    slurm["detached"] = False
    record.write_run(rundir, run)
    collect = _Collector(h.rec, run_id, runner, plan.options.device, repeat, h.stacks, h.progress,
                         run.get("preflight") or {})
    n = runner.outstanding()
    t0, cpu0, wall0 = os.times(), time.process_time(), time.monotonic()
    deadline = plan.options.deadline  # --time-limit, on the epoch clock
    try:
        follow(runner, rundir, collect,
               None if deadline is None else time.monotonic() + max(0.0, deadline - time.time()))
        if runner.outstanding():  # the run's limit passed: what still runs or waits is stopped
            collect.limit_s = plan.options.time_limit_s
            stop(runner, rundir, collect, "the run's --time-limit", run_id, plan.options.device)
    except lifecycle.Interrupted as e:
        stop(runner, rundir, collect, f"interrupted by {e.signame}", run_id, plan.options.device)
        raise
    t1 = os.times()
    # what following cost the driver (scripts/bench_slurm.py reads it): its own CPU time, and its
    # squeue/sacct children's
    slurm["driver_cost"] = {
        "tasks_followed": n, "submit_s": round(runner.stats["submit_s"], 4),
        "sbatch_calls": runner.stats["sbatch_calls"], "polls": runner.stats["polls"],
        "follow_wall_s": round(time.monotonic() - wall0, 3),
        "follow_cpu_s": round(time.process_time() - cpu0, 4),
        "follow_children_cpu_s": round((t1.children_user + t1.children_system)
                                       - (t0.children_user + t0.children_system), 4)}
    record.write_run(rundir, run)
    return False


def _within_limit(job_cell: dict, options) -> dict:
    """The job cell with its time limit cut to what is left of the run's --time-limit (the cut
    recorded as `time_limit_stop`, as the serial runners do), so Slurm ends the job at the run's
    limit even when no driver follows it; unchanged without a limit or when its own is shorter."""
    if options.deadline is None:
        return job_cell
    left = max(1.0, options.deadline - time.time())
    own = float(job_cell.get("timeout_s") or 1200)
    return job_cell if left >= own else {**job_cell, "timeout_s": round(left, 1), "time_limit_stop": own}


def _gpu_models(sources: list[str]) -> dict[str, tuple[str, ...]]:
    """{cell id: the GPU names its published numbers were measured on} (--slurm-gpu-feature)."""
    from reprokit.catalog import suites

    out: dict[str, set[str]] = {}
    for src in sources:
        for n in suites.load_published(src):
            if n.get("cell") and suites.publication_hardware(n)[0] == "gpu":
                out.setdefault(n["cell"], set()).add(n["environment"].get("gpu") or "")
    return {k: tuple(sorted(v)) for k, v in out.items()}


def follow(runner, rundir: results.RunDir, collect, until: float | None = None) -> None:
    """Poll until nothing is outstanding (or `until`, a time.monotonic() deadline)."""
    while runner.outstanding():
        for task, outcome in runner.poll(rundir):
            collect(task, outcome)
        if not runner.outstanding() or (until is not None and time.monotonic() >= until):
            return
        time.sleep(runner.poll_s)


def stop(runner, rundir: results.RunDir, collect, why: str, run_id: str, device: str,
         wait_s: float = 30.0) -> None:
    """Cancel what the driver follows, collect the cancelled tasks, placeholders for the rest."""
    ids = runner.cancel(why)
    if not ids:
        return
    end = time.monotonic() + wait_s
    while runner.outstanding() and time.monotonic() < end:
        for task, outcome in runner.poll(rundir):
            collect(task, outcome)
        time.sleep(0.5)
    for t in runner.running():  # Slurm did not confirm in time: the cell is recorded anyway
        if getattr(t, "warmup", None) is not None:  # nothing to record: a resume warms up again
            continue
        doc = record.placeholder_result(run_id, t.cell, "interrupted",
                                 f"{why}: the driver cancelled job {t.job_id} (scancel); "
                                 "--resume re-runs it", device)
        if t.process is None:
            rundir.write_cell(doc)
        collect(t, CellOutcome("interrupted", doc["reason"], 0.0, None,
                               {"launcher": runner.launcher.name, "job_id": t.job_id}))
    runner.tasks.clear()


def _warmups(run: dict, rundir: results.RunDir, fresh: list, prepared: dict, runner, say) -> list[dict]:
    """On a GPU, each stack's JIT warm-up (reprokit/run/jit_warmup.py) submitted as a
    job of its own, and the stack's cells made to wait for it (`--dependency=afterany`), so they start
    on the cache it filled instead of each paying the PTX JIT at once. The warm-ups' job records."""
    from reprokit.runners.slurm import Task

    how = jit_warmup.mode()
    device = (run.get("options") or {}).get("device", "cpu")
    if how == "off" or (device != "gpu" and how != "force"):
        return []
    todo = []
    for stack in prepared:
        first = next((t for t in fresh if t.cell.stack == stack), None)
        if first is None:
            continue
        w = jit_warmup.plan(run, first.job_path, first.job_cell, rundir, stack)
        if w is None:
            continue
        todo.append(Task(first.cell, None, w.cell, w.job_path, w.log_path, gpus=first.gpus,
                         gpu_models=first.gpu_models, warmup=w))
    if not todo:
        return []
    records = runner.submit(rundir, prepared, todo)
    for t in todo:
        array = t.job_id.split("_")[0]
        for c in fresh:
            if c.cell.stack == t.cell.stack:
                c.after = array
        say(f"jit warm-up: {t.warmup.key}: {t.cell.id} once, untimed, as Slurm job {array}; the "
            "stack's cells wait for it (--dependency=afterany)")
    for r in records:
        r["warmup"] = True
    return records


# -- re-attach: `status RUN`, `report RUN` ---------------------------------------------------------
def attach(rundir: results.RunDir, say=None, wait_s: float = 0.0) -> dict | None:
    """Collect what a detached (or orphaned) Slurm run's jobs finished since, into its results;
    finish the run when nothing is left. Returns the run record, or None when the run is not a
    Slurm run with jobs or a live driver holds it (it follows its own jobs)."""
    from reprokit.catalog import suites
    from reprokit.runners.slurm import SlurmOptions, SlurmRunner

    run = rundir.load_run()
    slurm = run.get("slurm") or {}
    if run.get("runner") != "slurm" or not slurm.get("jobs") or run.get("finished"):
        return None
    if lock.held_by_other(rundir.path):
        return None
    taken = None if lock.holds(rundir.path) else lifecycle.acquire(rundir.path)
    try:
        suite = suites.load_suite(run["suite"])
        stacks = suites.load_stacks()
        repeat = int(run.get("repeat") or 1)
        device = (run.get("options") or {}).get("device", "cpu")
        cells = {c.id: c for c in suite.cells}
        runner = SlurmRunner(SlurmOptions.from_record({**slurm.get("options", {}), "detach": True}),
                             device=device, say=say or (lambda *_: None))
        tasks = _uncollected(run, rundir, cells)
        for t in runner.adopt(rundir, slurm["jobs"], tasks, ended=True):
            if say and t.warmup is None:
                say(f"slurm: re-attached to {t.cell.id}"
                    + (f" (process {t.process})" if t.process else "") + f": job {t.job_id}")

        collect = _Collector(RunRecord(rundir, run), run["run_id"], runner, device, repeat, stacks,
                             None, run.get("preflight") or {})
        follow(runner, rundir, collect, until=time.monotonic() + wait_s)
        if not runner.outstanding() and not status_counts(run["cells"]).get("pending"):
            run = reconcile.reconcile(rundir, run, modify=True).run
            ends = []
            for job in slurm["jobs"]:
                for rt in job.get("tasks", []):
                    try:
                        rec = files.loads_bounded(rundir.path / rt["record"], "record")
                    except (OSError, ValueError, KeyError):
                        continue
                    if rec.get("ended"):
                        ends.append(rec["ended"])
            run["finished"] = max(ends) if ends else files.utcnow()
            run["wall_s"] = _seconds_between(run["started"], run["finished"])
            run["slurm"]["detached"] = False
            record.write_run(rundir, run)
        return run
    finally:
        if taken is not None:
            taken.release()


def _uncollected(run: dict, rundir: results.RunDir, cells: dict) -> dict:
    """The tasks of a Slurm run's jobs whose outcome is not in its record yet: pending cells (processes),
    and JIT warm-ups without their run.json entry (so the stack's cells get jit_warmup_s)."""
    from reprokit.runners.slurm import Task

    entries = {e["cell_id"]: e for e in run["cells"]}
    tasks = {}
    for job in run["slurm"]["jobs"]:
        for rt in job.get("tasks", []):
            cid, proc = rt["cell_id"], rt.get("process")
            if rt.get("warmup"):
                t = _warmup_task(run, rundir, rt, cells.get(cid))
                if t is not None:
                    tasks[("warmup", rt["warmup"])] = t
                continue
            if cid not in cells or entries.get(cid, {}).get("status") != "pending":
                continue
            if proc is not None and _collected(rundir, cid, proc):
                continue  # the driver collected it; a file the harness alone wrote is not:
                # its task record (node, fingerprint, job) is added now
            tasks[(cid, proc)] = Task(cells[cid], proc, {}, rundir.jobs_dir / f"{cells[cid].stack}.json",
                                      rundir.log_path(cid, proc))
    return tasks


def _warmup_task(run: dict, rundir: results.RunDir, rt: dict, cell):
    """The Task of a JIT warm-up a detached run submitted and has not recorded yet, rebuilt from its
    job file (jobs/<stack>.jit-warmup.json); None when it is recorded, or its cell or job file is gone."""
    from reprokit.runners.slurm import Task

    if cell is None or rt["warmup"] in (run.get("jit_warmups") or {}):
        return None
    job_path = rundir.jobs_dir / f"{cell.stack}.jit-warmup.json"
    try:
        job = files.read_json(job_path, "job")
    except (OSError, ValueError, UserError):
        return None
    wcell = job["cells"][0]
    out_dir = Path(job["out_dir"])
    w = jit_warmup.Warmup(rt["warmup"], cell.stack, jit_warmup.cell_device(job, wcell), wcell, job_path,
                          out_dir, out_dir / "warmup.log")
    return Task(cell, None, wcell, job_path, w.log_path, warmup=w)


def _collected(rundir: results.RunDir, cell_id: str, process: int) -> bool:
    """A process file the driver finished (it added its runner record: job, node, fingerprint);
    one the harness wrote while no driver followed the job has none yet."""
    path = rundir.cell_path(cell_id, process)
    if not path.exists():
        return False
    try:
        doc = files.loads_bounded(path, "cell_result")
    except (OSError, ValueError):
        return True  # unreadable: reconcile moves it aside; nothing to add here
    return not isinstance(doc, dict) or isinstance(doc.get("runner"), dict)


def _seconds_between(a: str, b: str) -> float | None:
    import datetime as dt

    try:
        fa = dt.datetime.fromisoformat(a.replace("Z", "+00:00"))
        fb = dt.datetime.fromisoformat(b.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None
    return max(0.0, (fb - fa).total_seconds())
