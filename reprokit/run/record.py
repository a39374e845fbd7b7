"""The record of a run: run.json and the cell result files the driver writes; the one writer of run.json.

One place each for what both ways of executing a run (one cell at a time: reprokit/run/execute.py; many
at once: reprokit/run/execute_concurrent.py), `reconcile`, `status`, `report` and the exit status use:

- `write_run`: run.json written (atomically, validated): every write of a run's record in the kit is
  this function's (RunRecord's, the driver's, the concurrent runner's, reconcile's through
  `RecordWriter`, the JIT warm-up's); tests/core/test_import_cycles.py checks that no other module
  writes it;
- `set_entry`: a cell's entry in run.json `cells` (reprokit/reader/cells.py `cell_entry`), replaced
  in place so the cells keep the plan's order;
- `placeholder_result`: the result file of a cell that produced none itself (not run, skipped,
  crashed, timed out, interrupted);
- `move_aside`: a result file that is not a valid result of this run (reprokit/reader/cells.py
  `check_result`) is kept aside, never deleted;
- `finish_result`: what the runner saw merged into the harness's result (or a placeholder);
  `merge_cell`: a `--repeat K` cell's main result merged from its process files (reader/merge.py);
- `not_ok_cells`, `exit_code`: the exit status of `run` and `report` (the counts by status are
  reprokit/reader/cells.py's `status_counts`);
- `RunRecord`: run.json while a driver writes it (its cell entries, the running cell, wall_s);
- `Execution`: what the driver hands either way of running the cells.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprokit import files, formats, results
from reprokit.probes import cell_gpus, gpu_state, jit_cache
from reprokit.reader import merge
from reprokit.reader.cells import NOT_FAILED, cell_entry, check_result
from reprokit.reader.model import Design, processes_of
from reprokit.reader.status import Skip, Stop
from reprokit.run import lifecycle
from reprokit.runners.base import CellOutcome


# -- run.json ---------------------------------------------------------------------------------------
def write_run(rundir: results.RunDir, run: dict) -> None:
    """Write run.json (validated against the run schema, atomically): the kit's one writer of it."""
    files.write_json_atomic(rundir.run_file, run, "run")


@dataclass
class RecordWriter:
    """What reconcile writes when it may (reprokit/reader/reconcile.py `Writer`): a bad result file
    moved aside, a re-merged result, run.json."""
    rundir: results.RunDir

    def move_aside(self, path: Path) -> Path:
        return move_aside(self.rundir, path)

    def write_cell(self, result: dict) -> Path:
        return self.rundir.write_cell(result)

    def write_run(self, run: dict) -> None:
        write_run(self.rundir, run)


def set_entry(run: dict, cell: Any, status: str, reason: str | None, wall: float | None,
              skip: Skip | None = None) -> dict:
    """Put `cell`'s entry (a suites.Cell: its id and stack) into run["cells"]: in its place when
    listed, else last. Returns the entry."""
    entries = {e["cell_id"]: e for e in run["cells"]}
    entry = entries[cell.id] = cell_entry(cell.id, cell.stack, status, reason, wall, skip)
    run["cells"] = list(entries.values())
    return entry


def not_ok_cells(run: dict) -> list[dict]:
    """The run's cell entries that did not finish ok (`pending`, `interrupted`, `missing`, `invalid`
    too; a cell not implemented or skipped by preflight is not a failure)."""
    return [c for c in run["cells"] if c["status"] not in NOT_FAILED]


def exit_code(run: dict) -> int:
    """1 when some cell did not finish ok, else 0: `run` and `report` exit with it."""
    return 1 if not_ok_cells(run) else 0


def processes_wall(merged: dict) -> float | None:
    """The process wall time of a `--repeat K` cell: the sum over its processes that recorded one."""
    walls = [p["process_wall_s"] for p in merged["processes"]
             if isinstance(p.get("process_wall_s"), (int, float))]
    return sum(walls) if walls else None


@dataclass
class RunRecord:
    """run.json of a run while a driver writes it: every change to a cell's entry goes through
    `record`, which writes run.json at once. With `started` (this driver's time.time() at its start)
    the run's `wall_s` is kept current and the running cell cleared; without (`status`/`report`
    re-attaching to a detached Slurm run) only the entry changes."""
    rundir: results.RunDir
    run: dict
    started: float | None = None
    prior_wall: float = 0.0  # the wall time of the run's earlier drivers (a resumed run)
    current: tuple | None = None  # (cell, process, time.monotonic() at its start): running now

    def wall(self) -> float:
        return self.prior_wall + time.time() - (self.started or time.time())

    def record(self, cell: Any, status: str, reason: str | None, wall: float | None,
               skip: Skip | None = None) -> None:
        set_entry(self.run, cell, status, reason, wall, skip)
        if self.started is not None:
            self.run["current"] = None
            self.current = None
            self.run["wall_s"] = self.wall()
        write_run(self.rundir, self.run)

    def record_merged(self, cell: Any, merged: dict) -> None:
        """A `--repeat K` cell's entry from its merged result (reprokit/reader/merge.py)."""
        self.record(cell, merged["status"], merged["reason"], processes_wall(merged),
                    Skip.from_doc(merged.get("skip")))

    def design(self) -> Design | None:
        """The run's design as it runs now (a sequential cell that stopped has its own count)."""
        return Design.from_doc(self.run.get("design"))

    def processes_of(self, cell_id: str, repeat: int | None = None) -> int:
        """How many processes the cell runs, as run.json's design says now (a cell it does not list:
        `repeat`, else the run's K)."""
        return processes_of(self.design(), cell_id, repeat or int(self.run.get("repeat") or 1))

    def record_stop(self, cell: Any, stop: Stop) -> None:
        """A sequential cell stopped after `stop.after` processes: run.json's design says so (its
        processes become those it ran). The plan's design is left as planned."""
        entry = self.run["design"]["cells"][cell.id]
        entry["processes"], entry["stop"] = stop.after, stop.to_doc()
        entry.pop("stopped", None)
        write_run(self.rundir, self.run)

    def start(self, cell: Any, process: int | None) -> None:
        """The cell about to run, on record first: a driver killed now leaves it in run.json."""
        self.run["current"] = {"cell_id": cell.id, "process": process, "started": files.utcnow(),
                               "driver": self.run["driver"]}
        write_run(self.rundir, self.run)
        self.current = (cell, process, time.monotonic())


@dataclass
class Execution:
    """A run being executed, as the driver (reprokit/run/execute.py) hands it, once run.json is written
    and the cells to run are known, to one of the two ways of running them over its record: one
    cell process at a time (serial.run_serial) or all at once (execute_concurrent.run_concurrent,
    a runner with `concurrent`)."""
    plan: Any  # the plan, decided for this runner (plan.Plan)
    runner: Any
    rec: RunRecord
    by_stack: dict[str, list[tuple]]  # stack whose image runs them -> [(cell, process indices)]
    prepare: Callable[[str, list], tuple | None]  # the stack prepared once: (prepared, spec, job
    # path, job cells by id), None when unavailable (its cells recorded skipped): execute.StackJobs
    progress: Any  # progress.Progress
    stacks: dict  # the stacks' data (suites.load_stacks)
    say: Callable[[str], None]
    resume: bool


# -- cell result files ------------------------------------------------------------------------------
def placeholder_result(run_id: str, cell: Any, status: str, reason: str, device: str,
                       skip: Skip | None = None) -> dict:
    """A result file for a cell that produced none itself (not run, crashed, timed out, left)."""
    doc = {
        "schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": run_id,
        "cell_id": cell.id, "source": cell.source, "stack": cell.stack, "workload": cell.workload,
        "variant": cell.variant, "params": cell.params, "status": status, "reason": reason,
        "started": None, "finished": files.utcnow(), "wall_s": None, "device": device,
        "metrics": {}, "implementation": {}, "stack_fingerprint": {}, "kit": files.kit_info(),
    }
    if skip is not None:
        doc["skip"] = skip.to_doc()
    return doc


def move_aside(rundir: results.RunDir, path: Path) -> Path:
    """Move a bad result file to cells/.invalid/<name>.<UTC stamp> (never overwriting one)."""
    rundir.invalid_dir.mkdir(parents=True, exist_ok=True)
    stamp = lifecycle.utcnow().replace("-", "").replace(":", "")
    dest = rundir.invalid_dir / f"{path.name}.{stamp}"
    n = 2
    while dest.exists():
        dest = rundir.invalid_dir / f"{path.name}.{stamp}-{n}"
        n += 1
    path.rename(dest)
    return dest


def _existing_result(rundir: results.RunDir, run_id: str, cell: Any, outcome: CellOutcome,
                     process: int | None) -> tuple[dict | None, CellOutcome]:
    """The harness's result of this run, cell and process, if it wrote a valid one; an invalid
    file is itself a crash: it is kept aside, never overwritten."""
    path = rundir.cell_path(cell.id, process)
    if not path.exists():
        return None, outcome
    existing, problem = check_result(path, run_id, cell.id, process)
    if problem:
        try:
            where = f"moved to {move_aside(rundir, path).relative_to(rundir.path)}"
        except OSError as e:
            if lifecycle.is_storage_error(e):
                raise
            where = f"could not move it aside: {e}"
        outcome = CellOutcome("crashed", f"result file invalid: {problem} ({where})",
                              outcome.process_wall_s, outcome.log_file, outcome.runner_info)
    if existing is not None and (existing.get("run_id") != run_id
                                 or existing.get("process") != process):
        existing = None
    return existing, outcome


PARTIAL_DIR = ".partial"  # bench/harness.py PARTIAL_DIR: cells/.partial/<result file name>


def adopt_cut(rundir: results.RunDir, run_id: str, cell_id: str, process: int | None) -> dict | None:
    """What a process stopped before its result had measured (bench/harness.py keep_so_far), as the
    result's `cut`: read from cells/.partial/ when it is this run's, cell's and process's, then the
    file is removed (the result holds it now); None when there is none or it does not check."""
    path = rundir.cells_dir / PARTIAL_DIR / results.cell_filename(cell_id, process)
    if not path.is_file():
        return None
    try:
        doc = files.loads_bounded(path, "cell_result")
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or (doc.get("run_id"), doc.get("cell_id"), doc.get("process")) != \
            (run_id, cell_id, process) or not isinstance(doc.get("finished"), dict):
        return None
    cut = {"at": doc.get("at"), "finished": doc["finished"], "sampling": doc.get("sampling")}
    with contextlib.suppress(OSError):
        path.unlink()
    return cut


def finish_result(rundir: results.RunDir, run_id: str, cell: Any, outcome: CellOutcome,
                  stack_spec: dict, runner_name: str, device: str,
                  process: int | None = None, prepared: dict | None = None,
                  substitution: dict | None = None, host: dict | None = None,
                  jit: dict | None = None, skip: Skip | None = None) -> dict:
    """Merge what the runner saw into the harness's result (or make one if there is none).

    With `process` N (run --repeat K) this is the process file cells/<stem>.p<N>.json; the
    cell's main result is then merged from the process files (merge_cell)."""
    existing, outcome = _existing_result(rundir, run_id, cell, outcome, process)
    # a process stopped (by --time-limit, or ended otherwise) is said by this sitting's outcome, never
    # by a file an earlier sitting of a resumed run left
    if existing is None or skip is not None or outcome.status in ("timeout", "oom", "crashed"):
        reason = outcome.reason or "no result written"
        result = placeholder_result(run_id, cell, outcome.status, reason, device, skip)
        if process is not None:
            result["process"] = process
        cut = adopt_cut(rundir, run_id, cell.id, process)
        if cut is not None:
            result["cut"] = cut
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
    if "gpus" not in result:  # the GPUs the cell had, from its runner (reprokit/probes/cell_gpus.py)
        result["gpus"], result["gpus_source"] = cell_gpus.for_cell(
            result, runner_name, outcome.runner_info, cell.gpus_on(device), host,
            (prepared or {}).get("env"))
    annotate_jit(result, jit)  # jit_warmup_s: its key's untimed first start; jit_cache
    result["runner"] = gpu_state.attach(result, result["runner"])  # NVML around a GPU cell
    if process is None:
        rundir.write_cell(result)
    else:
        rundir.write_process(result)
    return result


def annotate_jit(result: dict, warmup: dict | None) -> None:
    """A cell result's `jit_warmup_s` (the warm-up of its key, run.json `jit_warmups`: null when none
    ran; reprokit/run/jit_warmup.py) and `jit_cache` (bench/harness.py writes it; a placeholder gets
    it from what it has: reprokit/probes/jit_cache.py)."""
    result["jit_warmup_s"] = warmup["wall_s"] if warmup else None
    result["jit_cache"] = jit_cache.state(result)


def merge_cell(rundir: results.RunDir, cell_id: str, repeat: int,
               run_id: str | None = None) -> dict:
    """Rebuild cells/<stem>.json from the cell's process files (atomically; reprokit/reader/merge.py);
    return it."""
    merged = merge.merge(merge.load_processes(rundir, cell_id, repeat, run_id), repeat)
    rundir.write_cell(merged)
    return merged
