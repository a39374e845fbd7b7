"""What one `reproduce.py run` asks for: the options as given, typed, before any check.

The driver (reprokit/run/driver.py) takes a RunRequest, so a run can be asked for from code
(`drive(RunRequest(suite="smoke", cells=("smoke/*",)), ...)`) as well as from the command line
(`RunRequest.from_args`, reprokit/commands/run.py). None / False / () means "not given": the
defaults are decided where the choice is made (the runner and device in runners/select.py, the
design in plan/design.py), not here."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from reprokit.runners.slurm_setup import SlurmRequest


@dataclass(frozen=True)
class RunRequest:
    suite: str
    quick: bool = False
    protocol: str = "budget"  # budget | published
    runner: str = "auto"  # auto | local | docker | slurm
    device: str = "auto"  # auto | cpu | gpu
    gpus: str | None = None  # the docker runner's --gpus
    cells: tuple[str, ...] = ()  # glob patterns of cell ids
    min_samples: int | None = None
    time_budget: float | None = None  # seconds per metric
    results: Path = Path("results")  # the results root
    repeat: int | None = None  # K processes per cell; None: the default design
    design: str | None = None  # auto (None: the default, or a resumed run's own): by what each cell
    # can decide here (plan/design.py); full: fixed K
    time_limit: float | None = None  # seconds for the whole run (--time-limit): the plan fits cells
    resume: str | None = None  # a run id or directory to continue
    allow_changed_data: bool = False
    data: str | None = None  # a directory of real data files
    data_lock: str | None = None
    data_subset: bool = False  # --data-subset: the --data files are a deliberate subset
    python: tuple[tuple[str, str], ...] = ()  # (stack, interpreter path)
    python_config: str | None = None
    slurm: SlurmRequest = field(default_factory=SlurmRequest)

    @classmethod
    def from_args(cls, args) -> RunRequest:
        """From `run`'s parsed options (reprokit/commands/run.py add_arguments)."""
        values = {f.name: getattr(args, f.name) for f in fields(cls) if f.name != "slurm"}
        values.update(cells=tuple(args.cells or ()), python=tuple(args.python or ()),
                      results=Path(args.results))
        return cls(**values, slurm=SlurmRequest.from_args(args))
