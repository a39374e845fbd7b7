"""The record of a run: run.json's per-cell entries and the cell result files the driver writes.

One place each for what both ways of executing a run (one cell at a time: reprokit/run/execute.py; many
at once: reprokit/run/execute_concurrent.py), `reconcile`, `status`, `report` and the exit status use:

- `cell_entry` / `set_entry`: a cell's entry in run.json `cells` (cell_id, stack, status, reason,
  process_wall_s, result_file), replaced in place so the cells keep the plan's order;
- `placeholder_result`: the result file of a cell that produced none itself (not run, skipped,
  crashed, timed out, interrupted);
- `check_result`, `valid_processes`, `move_aside`: whether a result file on disk is a valid result of
  this run (and cell and process); a bad one is kept aside, never deleted;
- `finish_result`: what the runner saw merged into the harness's result (or a placeholder);
- `status_counts`, `not_ok_cells`, `exit_code`: the statuses of a run's cells counted, and the exit
  status of `run` and `report`;
- `RunRecord`: run.json while a driver writes it (its cell entries, the running cell, wall_s);
- `Execution`: what the driver hands either way of running the cells.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprokit import files, results, validate
from reprokit.probes import cell_gpus, gpu_state
from reprokit.run import jit_warmup, lifecycle
from reprokit.runners.base import CellOutcome

# statuses that are not failures: `run` and `report` exit 0 when every cell has one of them
NOT_FAILED = ("ok", "not_implemented", "skipped")


# -- run.json `cells` -------------------------------------------------------------------------------
def cell_entry(cell_id: str, stack: str, status: str, reason: str | None,
               wall: float | None) -> dict:
    """A cell's entry in run.json `cells`."""
    return {"cell_id": cell_id, "stack": stack, "status": status, "reason": reason,
            "process_wall_s": wall, "result_file": f"cells/{results.cell_filename(cell_id)}"}


def set_entry(run: dict, cell: Any, status: str, reason: str | None, wall: float | None) -> dict:
    """Put `cell`'s entry (a suites.Cell: its id and stack) into run["cells"]: in its place when
    listed, else last. Returns the entry."""
    entries = {e["cell_id"]: e for e in run["cells"]}
    entry = entries[cell.id] = cell_entry(cell.id, cell.stack, status, reason, wall)
    run["cells"] = list(entries.values())
    return entry


def status_counts(entries: Iterable[dict]) -> dict[str, int]:
    """{status: how many cells have it}, by status name."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return dict(sorted(counts.items()))


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

    def record(self, cell: Any, status: str, reason: str | None, wall: float | None) -> None:
        set_entry(self.run, cell, status, reason, wall)
        if self.started is not None:
            self.run["current"] = None
            self.current = None
            self.run["wall_s"] = self.wall()
        self.rundir.write_run(self.run)

    def record_merged(self, cell: Any, merged: dict) -> None:
        """A `--repeat K` cell's entry from its merged result (reprokit/run/merge_processes.py)."""
        self.record(cell, merged["status"], merged["reason"], processes_wall(merged))

    def start(self, cell: Any, process: int | None) -> None:
        """The cell about to run, on record first: a driver killed now leaves it in run.json."""
        self.run["current"] = {"cell_id": cell.id, "process": process, "started": files.utcnow(),
                               "driver": self.run["driver"]}
        self.rundir.write_run(self.run)
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
    # a design by role's stopping rule: (run, {cell id: merged result}, cell ids) -> {cell id: what is
    # still open} (reprokit/analysis/decidability.py sequential_status, passed down by the command)
    sequential: Callable[[dict, dict, list], dict] | None = None


# -- cell result files ------------------------------------------------------------------------------
def placeholder_result(run_id: str, cell: Any, status: str, reason: str, device: str) -> dict:
    """A result file for a cell that produced none itself (not run, crashed, timed out)."""
    return {
        "schema_version": files.version("cell_result"), "kind": "cell_result", "run_id": run_id,
        "cell_id": cell.id, "source": cell.source, "stack": cell.stack, "workload": cell.workload,
        "variant": cell.variant, "params": cell.params, "status": status, "reason": reason,
        "started": None, "finished": files.utcnow(), "wall_s": None, "device": device,
        "metrics": {}, "implementation": {}, "stack_fingerprint": {}, "kit": files.kit_info(),
    }


def check_result(path: Path, run_id: str, cell_id: str | None = None,
                 process: int | None = None) -> tuple[dict | None, str | None]:
    """(the result, None) when `path` is a valid cell result of this run (and cell and process),
    else (None, why not) in one line."""
    try:
        text = files.read_text_bounded(path, "cell_result")
    except FileNotFoundError:
        return None, "the file is missing"
    except (OSError, UnicodeDecodeError) as e:
        return None, f"unreadable ({e})"
    if not text.strip():
        return None, "the file is empty"
    try:
        doc = files.loads_strict(text)
    except ValueError as e:
        return None, f"not valid JSON: truncated or corrupted ({e})"
    errs = validate.errors("cell_result", doc)
    if errs:
        more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
        return None, f"does not match the cell_result schema: {errs[0]}{more}"
    if doc.get("run_id") != run_id:
        return None, f"belongs to run {doc.get('run_id')!r}, not {run_id!r}"
    if cell_id is not None and doc.get("cell_id") != cell_id:
        return None, f"holds cell {doc.get('cell_id')!r}, not {cell_id!r}"
    if doc.get("process") != process:
        return None, (f"is process file {doc.get('process')}" if doc.get("process")
                      else "is a main result, not a process file") + f" (expected {process})"
    return doc, None


def valid_processes(rundir: results.RunDir, cell_id: str, repeat: int,
                    run_id: str) -> dict[int, dict]:
    """{index: result} of the cell's valid process files (run --repeat K) of this run."""
    out = {}
    for i in range(1, repeat + 1):
        doc, _ = check_result(rundir.cell_path(cell_id, i), run_id, cell_id, i)
        if doc is not None:
            out[i] = doc
    return out


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


def finish_result(rundir: results.RunDir, run_id: str, cell: Any, outcome: CellOutcome,
                  stack_spec: dict, runner_name: str, device: str,
                  process: int | None = None, prepared: dict | None = None,
                  substitution: dict | None = None, host: dict | None = None,
                  jit: dict | None = None) -> dict:
    """Merge what the runner saw into the harness's result (or make one if there is none).

    With `process` N (run --repeat K) this is the process file cells/<stem>.p<N>.json; the
    cell's main result is then merged from the process files (merge_processes.merge_cell)."""
    existing, outcome = _existing_result(rundir, run_id, cell, outcome, process)
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
    if "gpus" not in result:  # the GPUs the cell had, from its runner (reprokit/probes/cell_gpus.py)
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
