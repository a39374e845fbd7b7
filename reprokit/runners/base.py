"""The runner interface: prepare a stack, run one cell of a job, clean up.

Everything above it (plan, results, report) is runner-agnostic, so a new runner (Docker, Slurm) is a
new module, not a rewrite.

Two kinds of runner. The local and Docker runners run one cell at a time on this machine
(`run_cell`, below: timing integrity, nothing else runs beside a cell). A runner whose `concurrent`
attribute is true (the Slurm runner, reprokit/runners/slurm.py) is handed every cell at once:
reprokit/run/execute_concurrent.py calls its `submit(rundir, prepared, tasks)`, then `poll(rundir)` for
the (task, CellOutcome) pairs that ended since, `cancel(why)` on an interruption, and `adopt(...)` to
re-attach to the jobs of an earlier driver; the executor writes each outcome as it comes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class StackUnavailable(Exception):
    """The stack cannot be provided here; the message is the one-line reason."""


@dataclass
class CellOutcome:
    """What the runner saw of one cell's process."""

    status: str  # ok / failed / crashed / timeout / oom
    reason: str | None
    process_wall_s: float
    log_file: str | None = None
    runner_info: dict = field(default_factory=dict)


class Runner(Protocol):
    name: str

    def prepare(self, stack: str, stack_spec: dict, say) -> dict:
        """Make the stack ready; return what run_cell needs. Raise StackUnavailable."""

    def run_cell(self, prepared: dict, job_path: Path, cell: dict, results_dir: Path,
                 log_path: Path, process: int | None = None) -> CellOutcome:
        """Run one cell in isolation (its own process or container) with a hard timeout.

        `process` N (run --repeat K, K > 1; given for every N including 1) is passed to the
        harness as `--process N`: the result goes to cells/<stem>.p<N>.json. The executor passes
        it only when K > 1, so a runner of its own that predates it still runs K = 1 suites."""

    def cleanup(self) -> None:
        """Release anything left (containers, temp files)."""
