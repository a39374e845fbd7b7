"""Execute a plan with a runner: job files out, cell results in, run record kept current.

The run record is rewritten atomically after every cell, so a crash of the driver loses nothing
already measured, and `--resume RUN` skips every cell that already has an ok result.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from reprokit import cpu_peak, fingerprint, preflight, results
from reprokit.plan import Plan, make_job
from reprokit.progress import Progress
from reprokit.runners.base import CellOutcome, Runner, StackUnavailable
from reprokit.suites import Cell, load_stacks


def placeholder_result(run_id: str, cell: Cell, status: str, reason: str, device: str) -> dict:
    """A result file for a cell that produced none itself (not run, crashed, timed out)."""
    return {
        "schema_version": 1, "kind": "cell_result", "run_id": run_id, "cell_id": cell.id,
        "source": cell.source, "stack": cell.stack, "workload": cell.workload,
        "variant": cell.variant, "params": cell.params, "status": status, "reason": reason,
        "started": None, "finished": results.utcnow(), "wall_s": None, "device": device,
        "metrics": {}, "implementation": {}, "stack_fingerprint": {}, "kit": results.kit_info(),
    }


def _finish_result(rundir: results.RunDir, run_id: str, cell: Cell, outcome: CellOutcome,
                   stack_spec: dict, runner_name: str, device: str) -> dict:
    """Merge what the runner saw into the harness's result (or make one if there is none)."""
    existing = None
    try:
        existing = rundir.load_cell(cell.id)
    except Exception as e:  # an unreadable partial file is itself a crash
        outcome = CellOutcome("crashed", f"result file unreadable: {e}", outcome.process_wall_s,
                              outcome.log_file, outcome.runner_info)
    if existing is not None and existing.get("run_id") != run_id:
        existing = None
    if existing is None or outcome.status in ("timeout", "oom", "crashed"):
        reason = outcome.reason or "no result written"
        result = placeholder_result(run_id, cell, outcome.status, reason, device)
    else:
        result = existing
    impl = result.setdefault("implementation", {})
    subs = impl.setdefault("substitutes", [])
    for s in stack_spec.get("local", {}).get("substitutes", []) if runner_name == "local" else []:
        if s not in subs:
            subs.append(s)
    result["log_file"] = outcome.log_file and str(Path(outcome.log_file).relative_to(rundir.path))
    result["runner"] = {"name": runner_name, "process_wall_s": outcome.process_wall_s,
                        **outcome.runner_info}
    rundir.write_cell(result)
    return result


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
        say(f"cpu peak probe: {peak['gflops']:.1f} GFLOP/s ({peak['library']}; all: {peak['probes']})")
        return peak
    say(f"cpu peak probe failed: {probes}")
    return {"error": str(probes)}


def execute(plan: Plan, runner: Runner, rundir: results.RunDir, argv: list[str],
            resume: bool = False, say=print) -> dict:
    stacks = load_stacks()
    run_id = rundir.path.name
    started = time.time()
    if resume and rundir.run_file.exists():
        run = rundir.load_run()
        run["finished"] = None
    else:
        run = {
            "schema_version": 1, "kind": "run", "run_id": run_id, "suite": plan.suite.name,
            "argv": argv, "runner": runner.name, "protocol": plan.options.protocol,
            "quick": plan.options.quick, "started": results.utcnow(), "finished": None,
            "wall_s": None, "host_fingerprint": fingerprint.host_fingerprint(),
            "kit": results.kit_info(), "stacks": {}, "cells": [],
            "cpu_peak": _cpu_peak(say),
        }
    if plan.options.data:
        run["data"] = plan.options.data
    prior_wall = run.get("wall_s") or 0.0
    entries = {e["cell_id"]: e for e in run["cells"]}

    def record(cell: Cell, status: str, reason: str | None, wall: float | None) -> None:
        entries[cell.id] = {"cell_id": cell.id, "stack": cell.stack, "status": status,
                            "reason": reason, "process_wall_s": wall,
                            "result_file": str(Path("cells") / results.cell_filename(cell.id))}
        run["cells"] = list(entries.values())
        run["wall_s"] = prior_wall + time.time() - started
        rundir.write_run(run)

    for cell, status, reason in plan.not_runnable:
        rundir.write_cell(placeholder_result(run_id, cell, status, reason, plan.options.device))
        record(cell, status, reason, None)

    verdicts = preflight.suite_verdicts(plan.runnable, run["host_fingerprint"], runner.name,
                                        plan.options.device)
    run["preflight"] = verdicts
    todo = []
    for c in plan.runnable:
        if resume and entries.get(c.id, {}).get("status") == "ok":
            say(f"resume: {c.id} already measured, kept")
            continue
        v = verdicts[c.id]
        if not v["runnable"]:
            reason = "preflight: " + "; ".join(v["reasons"])
            rundir.write_cell(placeholder_result(run_id, c, "skipped", reason, plan.options.device))
            record(c, "skipped", reason, None)
            continue
        if v["status"] == "jit":
            say(f"preflight: {c.id}: {'; '.join(v['reasons'])}")
        todo.append(c)
    history = results.past_cell_times(rundir.path.parent, runner.name, plan.options.quick,
                                      plan.options.protocol, exclude=rundir.path)
    progress = Progress(todo, say=say, history=history)
    by_stack: dict[str, list[Cell]] = {}
    for c in todo:
        by_stack.setdefault(c.stack, []).append(c)
    for stack, cells in by_stack.items():
        spec = stacks[stack]
        run["stacks"][stack] = {"framework": spec["framework"], "original": spec["original"],
                                "image": spec["image"]}
        try:
            prepared = runner.prepare(stack, spec, say)
        except StackUnavailable as e:
            for c in cells:
                rundir.write_cell(placeholder_result(run_id, c, "skipped", str(e),
                                                     plan.options.device))
                record(c, "skipped", str(e), None)
                progress.done(c, "skipped", 0.0)
            continue
        job = make_job(plan, stack, run_id, run["kit"], str(rundir.cells_dir.resolve()))
        job["cells"] = [jc for jc in job["cells"] if jc["id"] in {c.id for c in cells}]
        job_path = rundir.jobs_dir / f"{stack}.json"
        results.write_json_atomic(job_path, job, "job")
        for c, jc in zip(cells, job["cells"]):
            progress.start(c)
            try:
                outcome = runner.run_cell(prepared, job_path, jc, rundir.cells_dir,
                                          rundir.log_path(c.id))
            except Exception as e:  # a runner bug must not end the suite either
                outcome = CellOutcome("crashed", f"runner error: {type(e).__name__}: {e}", 0.0,
                                      None, {"traceback": traceback.format_exc()[-2000:]})
            res = _finish_result(rundir, run_id, c, outcome, spec, runner.name,
                                 plan.options.device)
            record(c, res["status"], res["reason"], outcome.process_wall_s)
            progress.done(c, res["status"], outcome.process_wall_s, res["reason"])
    runner.cleanup()
    run["finished"] = results.utcnow()
    run["wall_s"] = prior_wall + time.time() - started
    rundir.write_run(run)
    progress.close()
    return run


def exit_code(run: dict) -> int:
    bad = [c for c in run["cells"] if c["status"] not in ("ok", "not_implemented", "skipped")]
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use reproduce.py")
