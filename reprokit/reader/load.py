"""`load(run)`: a run directory read once into the frozen model (reprokit/reader/model.py).

run.json and every result file are read through their formats' steps (reprokit/formats/: an older
version upgraded, a newer one refused in one line), validated, reconciled with each other in memory
(reprokit/reader/reconcile.py: a deleted or invalid result is listed as such, an unlisted one adopted)
and built into a `Run`. Nothing is written, moved or locked: a run another driver is writing is read
as its files are now. A crate is loaded by reprokit/crate/ (`crate.load`), which checks and unpacks
it first.
"""

from __future__ import annotations

from pathlib import Path

from reprokit import files, results
from reprokit.errors import UserError
from reprokit.reader import reconcile
from reprokit.reader.model import Run
from reprokit.reader.result import CellResult


def load(run: results.RunDir | Path | str) -> Run:
    """The run at `run` (a run directory), as the model."""
    rundir = run if isinstance(run, results.RunDir) else results.RunDir(Path(run))
    rec = reconcile.reconcile(rundir, modify=False)
    cells = {cid: CellResult.from_doc(doc) for cid, doc in rec.cells.items()}
    nodes = node_records(rundir) if rec.run.get("runner") == "slurm" else {}
    return Run.from_doc(rec.run, cells, nodes, rec.changes, rundir.path)


def node_records(rundir: results.RunDir) -> dict[str, dict]:
    """{node: its record of the run} (slurm/nodes/<node>.json, written by the Slurm task: the node's
    fingerprint and CPU peak); unreadable ones are left out."""
    out = {}
    for f in sorted((rundir.path / "slurm" / "nodes").glob("*.json")):
        try:
            doc = files.loads_bounded(f, "record")
        except (OSError, ValueError, UserError):
            continue
        if isinstance(doc, dict):
            out[str(doc.get("node") or f.stem)] = doc
    return out
