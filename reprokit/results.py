"""Results on disk: results/<run-id>/{run.json, cells/*.json, jobs/*.json, logs/*}.

With `run --repeat K` (K > 1) each cell's processes write cells/<stem>.p<N>.json and the cell's
main result cells/<stem>.json is merged from them (reprokit/merge_processes.py); only main results
are cells here: the process files are never loaded as cells of their own.

Every write is atomic (temp file in the same directory, fsync, rename) and validated against its
schema first; every load validates too. `cells_frame` / `samples_frame` give pandas tables in one call.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd

from reprokit.errors import UserError

# Atomic writes, strict reads, time stamps and kit identity live in reprokit/files.py; re-exported
# here for the modules that still import them from results.
from reprokit.files import (  # noqa: F401
    REPO,
    kit_info,
    loads_strict,
    read_json,
    utcnow,
    write_json_atomic,
    write_text_atomic,
)


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

    def write_run(self, run: dict) -> None:
        write_json_atomic(self.run_file, run, "run")

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


def past_cell_times(root: Path, runner: str, quick: bool, protocol: str,
                    exclude: Path | None = None) -> dict[str, float]:
    """{cell id: process seconds} of the newest earlier run under root that measured that cell
    with the same runner, --quick and protocol (for the ETA only: unreadable runs are ignored).
    Seconds of one process: a `--repeat K` run's time of a cell (all K processes) is divided by K."""
    found: dict[str, tuple[str, float]] = {}
    for f in Path(root).glob("*/run.json"):
        if exclude is not None and f.parent.resolve() == Path(exclude).resolve():
            continue
        try:
            run = json.loads(f.read_text())
            if (run.get("runner"), bool(run.get("quick")), run.get("protocol")) != \
                    (runner, quick, protocol):
                continue
            started = str(run.get("started") or "")
            repeat = int(run.get("repeat") or 1)
            for e in run.get("cells") or []:
                wall = e.get("process_wall_s")
                if e.get("status") == "ok" and isinstance(wall, (int, float)) and wall > 0:
                    if e["cell_id"] not in found or found[e["cell_id"]][0] < started:
                        found[e["cell_id"]] = (started, float(wall) / repeat)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
    return {cid: wall for cid, (_, wall) in found.items()}


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
    return RunDir(p)


def sample_processes(metric: dict, cell: dict | None = None) -> list[int]:
    """The process index (1..K) of each of a metric's samples: 1 for all of them unless the
    result was merged from `run --repeat K` processes (metric `processes` = samples per ok
    process, in index order; the cell's `processes` entries say which indices were ok)."""
    counts = metric.get("processes")
    if not counts:
        return [1] * len(metric["samples"])
    ok = [e["index"] for e in (cell or {}).get("processes", []) if e.get("status") == "ok"]
    indices = ok if len(ok) == len(counts) else list(range(1, len(counts) + 1))
    return [i for i, n in zip(indices, counts) for _ in range(n)]


def cells_frame(run: RunDir) -> pd.DataFrame:
    """One row per (cell, metric): median, sample count, unit, status; `repeat` is the number of
    processes the cell ran in (`run --repeat K`, else 1)."""
    rows = []
    for c in run.load_cells():
        base = {"cell_id": c["cell_id"], "stack": c["stack"], "status": c["status"],
                "reason": c["reason"], "wall_s": c.get("wall_s"), "repeat": c.get("repeat", 1)}
        if not c["metrics"]:
            rows.append({**base, "metric": None})
        for name, m in c["metrics"].items():
            s = pd.Series(m["samples"], dtype=float)
            rows.append({**base, "metric": name, "unit": m["unit"], "n": len(s),
                         "median": s.median(), "mean": s.mean(), "min": s.min(), "max": s.max()})
    return pd.DataFrame(rows)


def samples_frame(run: RunDir) -> pd.DataFrame:
    """One row per raw sample: cell, metric, index, value, raw seconds, and the process it came
    from (`run --repeat K`: 1..K; 1 for a single-process cell)."""
    rows = []
    for c in run.load_cells():
        for name, m in c["metrics"].items():
            raw = m["raw_seconds"] or [None] * len(m["samples"])
            procs = sample_processes(m, c)
            for i, (v, r, p) in enumerate(zip(m["samples"], raw, procs)):
                rows.append({"cell_id": c["cell_id"], "metric": name, "i": i, "value": v,
                             "raw_seconds": r, "unit": m["unit"], "process": p})
    return pd.DataFrame(rows)
