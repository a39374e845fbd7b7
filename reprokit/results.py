"""Results on disk: results/<run-id>/{run.json, cells/*.json, jobs/*.json, logs/*}.

With `run --repeat K` (K > 1) each cell's processes write cells/<stem>.p<N>.json and the cell's
main result cells/<stem>.json is merged from them (reprokit/reader/merge.py); only main results
are cells here: the process files are never loaded as cells of their own.

Every write is atomic (temp file in the same directory, fsync, rename; reprokit/files.py) and
validated against its schema first; every load validates too. run.json is read here (`load_run`)
and written by reprokit/run/record.py `write_run` only; a run read back whole, reconciled with its
result files, is the model reprokit/reader/load.py builds.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from reprokit.errors import UserError
from reprokit.files import read_json, write_json_atomic

# -- the data a run's verdicts use --------------------------------------------------------------
DATA_SNAPSHOT = "kit-data"  # results/<run>/kit-data/: reprokit/data as it was when the run started


def snapshot_data(rundir: RunDir) -> dict:
    """Copy the kit's data files (reprokit/data: suites, published numbers, claims, peaks, policies,
    ...) into the run, so its report is made from the data its verdicts were planned with, after any
    later change of reprokit/data and from any checkout. Returns run.json's `data_snapshot`:
    {"dir", "files": {relative path: sha256}}. Written into a temporary directory, then renamed."""
    import hashlib
    import shutil

    from reprokit import files, kitdata

    dst = rundir.path / DATA_SNAPSHOT
    part = rundir.path / f".{DATA_SNAPSHOT}.part"
    shutil.rmtree(part, ignore_errors=True)
    digests = {}
    for src in sorted(kitdata.PACKAGED.rglob("*")):
        rel = src.relative_to(kitdata.PACKAGED).as_posix()
        if not src.is_file() or src.suffix not in (".yaml", ".json") or "__pycache__" in rel:
            continue
        raw = files.read_bounded(src, "data")
        (part / rel).parent.mkdir(parents=True, exist_ok=True)
        (part / rel).write_bytes(raw)
        digests[rel] = hashlib.sha256(raw).hexdigest()
    shutil.rmtree(dst, ignore_errors=True)
    part.rename(dst)
    return {"dir": DATA_SNAPSHOT, "files": digests}


def snapshot_root(rundir: RunDir, run: dict) -> Path | None:
    """The run's data snapshot directory, each file checked against the sha256 run.json recorded
    (one line, exit 2, when one differs or is missing); None for a run that kept none (its report
    uses reprokit/data as it is now)."""
    import hashlib

    from reprokit import files

    snap = run.get("data_snapshot")
    if not snap:
        return None
    root = rundir.path / snap["dir"]
    for rel, digest in sorted(snap["files"].items()):
        try:
            raw = files.read_bounded(root / rel, "data")
        except OSError as e:
            raise UserError(f"{root / rel}: the run's data snapshot is incomplete ({e.strerror}); "
                            "restore the run directory from a copy (its report needs the data its "
                            "verdicts used)") from None
        if hashlib.sha256(raw).hexdigest() != digest:
            raise UserError(f"{root / rel} is not the file this run recorded (sha256 differs from "
                            "run.json data_snapshot); restore the run directory from a copy")
    return root


def run_data(rundir: RunDir, run: dict | None = None):
    """The kit data a run is judged with: its snapshot (each file checked against run.json), or the
    packaged reprokit/data as it is for a run that kept none (reprokit/kitdata.py KitData)."""
    from reprokit import kitdata

    root = snapshot_root(rundir, run if run is not None else rundir.load_run())
    return kitdata.KitData(root) if root is not None else kitdata.KitData.packaged()


def new_run_id(suite: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{suite}"


def cell_filename(cell_id: str, process: int | None = None) -> str:
    """Same rule as bench/harness.py: '/' becomes '__'; a process file (run --repeat K) of process
    N is '<stem>.p<N>.json'."""
    stem = cell_id.replace("/", "__")
    return f"{stem}.json" if process is None else f"{stem}.p{process}.json"


# The largest sample value a cell result may hold: above it a number is a corruption (1e308), not
# a measurement (the fastest rates measured are ~1e7 words/s; a GPU's FLOP/s stays below 1e15).
PLAUSIBLE_MAX = 1e15


class RunDir:
    """One run's directory."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @property
    def run_file(self) -> Path:
        return self.path / "run.json"

    @property
    def cells_dir(self) -> Path:
        return self.path / "cells"

    @property
    def jobs_dir(self) -> Path:
        return self.path / "jobs"

    @property
    def logs_dir(self) -> Path:
        return self.path / "logs"

    @property
    def invalid_dir(self) -> Path:
        """Where unreadable or invalid result files are moved aside (kept, never deleted)."""
        return self.cells_dir / ".invalid"

    def cell_path(self, cell_id: str, process: int | None = None) -> Path:
        """The cell's main result, or with `process` N its process file (run --repeat K)."""
        return self.cells_dir / cell_filename(cell_id, process)

    def log_path(self, cell_id: str, process: int | None = None) -> Path:
        return self.logs_dir / (cell_filename(cell_id, process)[:-5] + ".log")

    def load_run(self) -> dict:
        return read_json(self.run_file, "run")

    def write_cell(self, result: dict) -> Path:
        p = self.cell_path(result["cell_id"])
        write_json_atomic(p, result, "cell_result")
        return p

    def write_process(self, result: dict) -> Path:
        """A process file (run --repeat K): the result carries its `process` index."""
        p = self.cell_path(result["cell_id"], result["process"])
        write_json_atomic(p, result, "cell_result")
        return p

    def load_cell(self, cell_id: str, process: int | None = None) -> dict | None:
        p = self.cell_path(cell_id, process)
        return read_json(p, "cell_result") if p.exists() else None

    def load_cells(self) -> list[dict]:
        """Every cell's main result (merged ones included); process files are left out."""
        if not self.cells_dir.is_dir():
            return []
        docs = [read_json(p, "cell_result") for p in sorted(self.cells_dir.glob("*.json"))
                if not p.name.startswith(".")]  # .tmp-* of a write cut short
        return [d for d in docs if "process" not in d]


def resolve_run(arg: str, root: Path | None = None) -> RunDir:
    """A run given as a path or as a run id under results/ ('latest' picks the newest)."""
    root = root or Path("results")
    p = Path(arg)
    if arg == "latest":
        runs = sorted((d for d in root.glob("*") if (d / "run.json").exists()),
                      key=lambda d: d.stat().st_mtime)
        if not runs:
            raise UserError(f"no runs under {root}/; run a suite first")
        p = runs[-1]
    elif not (p / "run.json").exists() and (root / arg / "run.json").exists():
        p = root / arg
    if not (p / "run.json").exists():
        raise UserError(f"'{arg}' is not a run: no run.json there; give results/<run-id> or a run id")
    rundir = RunDir(p)
    for sub in (rundir.cells_dir, rundir.jobs_dir, rundir.logs_dir):  # made by the kit as directories
        if os.path.lexists(sub) and not sub.is_dir():
            what = ("a symbolic link that leads to no directory (a loop, or its target is gone)"
                    if sub.is_symlink() else "not a directory")
            raise UserError(f"{sub} is {what}; move it aside (mv {sub} {sub}.bad) and try again: the "
                            "cells whose results it held are then measured again by --resume")
    return rundir
