"""The frozen model of a run (reprokit/reader/model.py, result.py) built from the partial documents tests
write by hand: what a test does not say gets a neutral value (an ok cell with no metrics, a local CPU
run of the `test` suite), and the document goes through its format's steps as a stored one would."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reprokit import formats
from reprokit.reader.model import Machine, Run
from reprokit.reader.result import CellResult

CELL_DEFAULTS = {"run_id": "r", "cell_id": "c", "stack": "s", "workload": "w", "status": "ok",
                 "reason": None, "metrics": {}}
RUN_DEFAULTS = {"run_id": "r", "suite": "test", "runner": "local", "protocol": "budget",
                "started": "2026-11-28T00:00:00Z", "cells": []}


def cell(doc: Mapping[str, Any] | CellResult | None = None, **fields: Any) -> CellResult:
    """A cell result from a partial document (and keyword fields over it)."""
    if isinstance(doc, CellResult):
        return doc
    full = {**CELL_DEFAULTS, **(doc or {}), **fields}
    full.setdefault("schema_version", formats.version("cell_result"))
    return CellResult.from_doc(formats.upgrade("cell_result", full, "test cell"))


def run(doc: Mapping[str, Any] | None = None, cells: Iterable[Any] | Mapping[str, Any] = (),
        path: Path | None = None, **fields: Any) -> Run:
    """A run from a partial run.json (and keyword fields over it) with `cells` as its results (cell
    documents or CellResults, a list or {cell id: cell}); a host fingerprint may be given as `host`."""
    full = {**RUN_DEFAULTS, **(doc or {}), **fields}
    if "host" in full:
        full["host_fingerprint"] = full.pop("host")
    full.setdefault("host_fingerprint", {})
    full.setdefault("kit", {"version": "test", "git_commit": None})
    full.setdefault("schema_version", formats.version("run"))
    full = formats.upgrade("run", full, "test run")
    values = cells.values() if isinstance(cells, Mapping) else cells
    results = {c.cell_id: c for c in (cell(x) for x in values if x is not None)}
    return Run.from_doc(full, results, path=path)


def write_detached_run(rundir: Any, suite: str, runner: str) -> dict:
    """Write and return the run.json of a run whose jobs were submitted and left (a detached Slurm run):
    what a test's stand-in for the executor leaves behind, for the command that reads the run back."""
    from reprokit.run import record

    run = {"schema_version": formats.version("run"), "kind": "run", "run_id": rundir.path.name,
           "suite": suite, "runner": runner, "protocol": "budget", "started": "2026-11-28T00:00:00Z",
           "host_fingerprint": {}, "kit": {"version": "test", "git_commit": None}, "cells": [],
           "slurm": {"options": {}, "jobs": [], "detached": True}}
    record.write_run(rundir, run)
    return run


def machine(host: Mapping[str, Any] | None = None, cpu_peak: Mapping[str, Any] | None = None) -> Machine:
    """The machine of a run: a host fingerprint and the CPU probe."""
    return Machine.of(host, cpu_peak)


def of(run_doc: Mapping[str, Any] | None) -> Machine | None:
    """The machine of a partial run.json as tests wrote it ({"host_fingerprint", "cpu_peak"}); None
    for None."""
    if run_doc is None:
        return None
    return Machine.of(run_doc.get("host_fingerprint"), run_doc.get("cpu_peak"))
