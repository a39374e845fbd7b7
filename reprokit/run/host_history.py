"""This host's history of earlier runs, recorded into a new run (run.json `history`) when it starts.

The runs beside the new one under its results directory (`--results`) that ran on this machine (the
fingerprint's host id, CPU model and GPUs: reprokit/probes/fingerprint.py `machine_identity`; a host
name alone is shared by many machines) and finished are read, newest first, at most `MAX_RUNS` of
them; for every cell of the new plan that one of them measured, each timed metric's central value
(not a compile time's: one sample per process) is kept with the spread of its process medians and
the cell's code version: {"host_id", "runs": [run ids], "cells": {key: [{"run", "median",
"processes", "sd_log", "code"}]}}, key "cell id | metric | stack | precision", "code" the sha256 of
the bench files the cell ran (reprokit/plan/code_version.py; null: a kit that recorded none). The
report reads it from run.json, never from the directory again, so a run re-renders the same wherever
it is copied and however many runs come after it; reprokit/analysis/run_level.py turns it into the
between-run term.
A run that cannot be read is passed over (said in `skipped`), never an error: history is context.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from pathlib import Path

from reprokit import results
from reprokit.analysis import devices, run_level, stats
from reprokit.errors import UserError
from reprokit.probes.fingerprint import machine_identity
from reprokit.reader.frozen import thaw

MAX_RUNS = 20  # the newest earlier runs of this host read: the history's cost stays bounded


def _record(run_id: str, metric: dict, code: str | None) -> dict | None:
    s = stats.summarize_metric(metric)
    if not s.get("median") or s["median"] <= 0:
        return None
    medians = (s.get("between") or {}).get("medians") or []
    sd = (statistics.stdev(math.log(m) for m in medians)
          if len(medians) >= 2 and all(m > 0 for m in medians) else None)
    return {"run": run_id, "median": s["median"], "processes": max(1, len(medians)), "sd_log": sd,
            "code": code}


def collect(root: Path, fingerprint: Mapping, cell_ids: set[str], exclude: str) -> dict:
    """The history for a new run `exclude` of cells `cell_ids` on the machine of host `fingerprint`
    (module doc)."""
    if not fingerprint.get("host_id") or not root.is_dir():
        return {"host_id": fingerprint.get("host_id"), "runs": [], "cells": {}, "skipped": []}
    candidates = sorted((p for p in root.iterdir() if p.is_dir() and p.name != exclude
                         and not p.name.startswith(".") and (p / "run.json").is_file()),
                        key=lambda p: p.name, reverse=True)
    return from_runs(candidates, fingerprint, cell_ids)


def from_runs(paths: list[Path], fingerprint: Mapping, cell_ids: set[str] | None,
              limit: int = MAX_RUNS) -> dict:
    """The history `paths` (newest first) give: the finished runs of the machine of host `fingerprint`,
    at most `limit`, their cells of `cell_ids` (None: all)."""
    from reprokit.analysis.verdicts import load_policy
    from reprokit.reader.load import load

    compile_metrics = set(load_policy()["claims"]["compile_metrics"])  # one sample per process
    machine = machine_identity(fingerprint)
    out: dict = {"host_id": fingerprint.get("host_id"), "runs": [], "cells": {}, "skipped": []}
    for path in paths:
        if len(out["runs"]) >= limit:
            break
        try:
            run = load(results.RunDir(path))
        except (UserError, OSError, ValueError, KeyError) as e:
            out["skipped"].append(f"{path.name}: {str(e).splitlines()[0][:160]}")
            continue
        if machine_identity(run.host) != machine or not run.finished:
            continue
        added = False
        for cell in run.cell_results():
            if (cell_ids is not None and cell.cell_id not in cell_ids) or not cell.measured:
                continue
            entry = run.entry(cell.cell_id)
            precision = devices.cell_precision(cell)[0]
            for name, metric in cell.metrics.items():
                if name in compile_metrics or not metric.get("samples") or len(metric["samples"]) < 2:
                    continue
                rec = _record(run.run_id, thaw(metric), cell.code)
                if rec is not None:
                    k = run_level.key(cell.cell_id, name, entry.stack if entry else None, precision)
                    out["cells"].setdefault(k, []).append(rec)
                    added = True
        if added:
            out["runs"].append(run.run_id)
    return out
