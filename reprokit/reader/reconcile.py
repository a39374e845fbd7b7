"""A run's record (run.json) reconciled with the result files on disk, in memory: reconcile's reading side.

`reconcile` is used by `run --resume` before it plans, by the executor at the end of every run, by
`status` and by the report. The result files are the measurements; run.json is their index:

- a valid result file of this run that run.json does not list, or lists with another status
  (a cell that finished after its driver died, say), is adopted into run.json: never overwritten,
  never re-measured;
- a result file that is unreadable (truncated, not JSON, NaN or Infinity in it), does not match
  the cell_result schema (a negative sample, one above results.PLAUSIBLE_MAX), or belongs to another
  run or cell is moved aside to cells/.invalid/<name>.<UTC stamp> (kept, never deleted) and its cell
  gets status `invalid` with the reason; `--resume` re-measures it;
- a `--repeat K` cell whose main result is gone or bad is merged again from its process files;
- a cell run.json lists as measured whose file is gone gets status `missing`; `--resume`
  re-measures it;
- a run whose driver ended without finishing it (run.json `finished` null, nobody holds the lock)
  gets its running cell (`current`) recorded as `interrupted`, and an entry in `incidents`.

Here nothing is written or moved: the returned record says it all in memory (what the report and
`status` read, and what is read while a live driver holds the run's lock). With `modify` and a
`writer` (reprokit/run/reconcile.py passes reprokit/run/record.py's) the changes are written too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reprokit import files, results
from reprokit.probes import processes
from reprokit.reader import lock, merge
from reprokit.reader.cells import cell_entry, check_result, valid_processes
from reprokit.reader.model import Design, processes_of

PROCESS_FILE = re.compile(r"(?P<stem>.+)\.p(?P<n>\d+)\.json")  # a whole file name: fullmatch


@dataclass
class Reconciled:
    run: dict
    cells: dict[str, dict]  # cell id -> its valid main result
    changes: list[str] = field(default_factory=list)  # what was adopted, moved aside, marked
    modified: bool = False  # whether files were moved or run.json written


def cell_id_of(filename: str, known: dict[str, str] | None = None) -> str:
    """The cell id of a main result file name. results.cell_filename is not reversible when an id
    holds '__' itself, so the ids run.json knows come first (`known`: file name -> cell id)."""
    if known and filename in known:
        return known[filename]
    return filename[:-5].replace("__", "/")


def _rel(rundir: results.RunDir, p: Path) -> str:
    try:
        return str(p.relative_to(rundir.path))
    except ValueError:
        return str(p)


class Writer(Protocol):
    """What reconcile writes with `modify` (reprokit/run/record.py `RecordWriter`)."""

    def move_aside(self, path: Path) -> Path: ...

    def write_cell(self, result: dict) -> object: ...

    def write_run(self, run: dict) -> None: ...


def reconcile(rundir: results.RunDir, run: dict | None = None, stacks: dict[str, str] | None = None,
              modify: bool = False, say=None, writer: Writer | None = None) -> Reconciled:
    """run.json in line with cells/ (see the module doc). `stacks` maps cell ids to their stack for
    files run.json does not list (else the stack recorded in the file, or 'unknown'). With `modify`
    the changes go through `writer`, unless a live driver holds the run's lock (then nothing is)."""
    if modify and writer is None:
        raise ValueError("reconcile writes through a writer: call reprokit/run/reconcile.py's")
    run = run if run is not None else rundir.load_run()
    holder = lock.held_by_other(rundir.path)
    r = _Reconciler(rundir, run, stacks or {}, writer if modify and not holder else None, say=say)
    r.read_files()
    r.merge_again(int(run.get("repeat") or 1))
    r.adopt()
    if not holder:  # a live driver writes this run: look, do not touch
        r.driver_lost()
    r.mark_missing()
    return r.finish()


class _Reconciler:
    """The steps of `reconcile`, in order, over one run: each reads and updates `entries` (run.json's
    cell entries by id) and `out`; `changed` says whether run.json must be written (by `writer`,
    when there is one)."""

    def __init__(self, rundir: results.RunDir, run: dict, stacks: dict[str, str],
                 writer: Writer | None, say) -> None:
        self.rundir, self.run, self.stacks, self.writer, self.say = rundir, run, stacks, writer, say
        self.out = Reconciled(run=run, cells={})
        self.entries: dict[str, dict] = {e["cell_id"]: e for e in run.get("cells") or []}
        self.changed = False
        self.bad: dict[str, str] = {}  # cell id -> reason its main result is unusable
        self.remerge: set[str] = set()  # cells whose merged result must be made again

    def note(self, msg: str) -> None:
        self.out.changes.append(msg)
        if self.say:
            self.say(f"reconcile: {msg}")

    def set_entry(self, cid: str, status: str, reason: str | None, doc: dict | None = None) -> None:
        e = self.entries.get(cid)
        if e is None:
            stack = (doc or {}).get("stack") or self.stacks.get(cid) or "unknown"
            e = self.entries[cid] = cell_entry(cid, stack, status, reason, None)
            self.changed = True
        if e.get("status") != status or e.get("reason") != reason:
            e["status"], e["reason"] = status, reason
            self.changed = True
        skip = doc.get("skip") if doc is not None else None
        if e.get("skip") != skip and (doc is not None or "skip" in e):  # the file says why it was left
            if skip is None:
                e.pop("skip", None)
            else:
                e["skip"] = skip
            self.changed = True
        if doc is not None:
            wall = (doc.get("runner") or {}).get("process_wall_s")
            if isinstance(wall, (int, float)) and e.get("process_wall_s") != wall:
                e["process_wall_s"] = wall
                self.changed = True

    def aside(self, path: Path, why: str) -> str:
        """Move a bad file aside (when allowed); the words for the reason."""
        where = _rel(self.rundir, path)
        if self.writer is None:
            return f"{where} is invalid: {why}"
        try:
            dest = self.writer.move_aside(path)
        except OSError as e:
            return f"{where} is invalid: {why} (could not move it aside: {e.strerror or e})"
        self.out.modified = self.changed = True
        return f"{where} was invalid: {why}; moved to {_rel(self.rundir, dest)}"

    def read_files(self) -> None:
        """Check every result file; bad ones go aside. Process files (run --repeat K) first: a bad
        one is moved aside and its cell merged again."""
        cells_dir = self.rundir.cells_dir
        files = sorted(p for p in cells_dir.glob("*.json") if not p.name.startswith(".")) \
            if cells_dir.is_dir() else []
        run_id = self.run["run_id"]
        known = {results.cell_filename(cid): cid for cid in self.entries}
        for p in files:
            m = PROCESS_FILE.fullmatch(p.name)
            if m:
                cid = cell_id_of(m["stem"] + ".json", known)
                _, problem = check_result(p, run_id, cid, int(m["n"]))
                if problem:
                    self.note(self.aside(p, problem))
                    self.remerge.add(cid)
        for p in files:
            if PROCESS_FILE.fullmatch(p.name):
                continue
            cid = cell_id_of(p.name, known)
            doc, problem = check_result(p, run_id, cid, None)
            if problem:
                why = self.aside(p, problem)
                self.note(why)
                self.bad[cid] = why
                self.remerge.add(cid)
            else:
                self.out.cells[cid] = doc

    def merge_again(self, repeat: int) -> None:
        """A --repeat K cell whose main result is gone or bad is merged again from its process files."""
        if repeat <= 1:
            return
        for cid in set(self.entries) | self.remerge:
            if cid in self.out.cells and cid not in self.remerge:
                continue
            k = processes_of(Design.from_doc(self.run.get("design")), cid, repeat)
            procs = valid_processes(self.rundir, cid, k, self.run["run_id"])
            if not procs:
                continue
            merged = merge.merge(procs, k)
            if self.writer is not None:
                try:
                    self.writer.write_cell(merged)
                    self.out.modified = True
                except OSError:
                    pass
            self.out.cells[cid] = merged
            self.bad.pop(cid, None)
            self.note(f"{cid}: merged again from its {len(procs)} process file(s)")

    def adopt(self) -> None:
        """Adopt every valid file: it is the measurement, run.json only its index."""
        for cid, doc in self.out.cells.items():
            e = self.entries.get(cid)
            if e is None:
                self.note(f"adopted cells/{results.cell_filename(cid)} ({doc['status']}), which "
                          "run.json did not list")
            elif e.get("status") != doc["status"]:
                self.note(f"{cid}: run.json said {e.get('status')}, its result file says "
                          f"{doc['status']}: kept the file's")
            self.set_entry(cid, doc["status"], doc.get("reason"), doc)

    def driver_lost(self) -> None:
        """The driver ended without finishing the run: its running cell (if any) was interrupted."""
        run = self.run
        current = run.get("current")
        drv = (current or {}).get("driver") or run.get("driver") or {}
        me = drv.get("pid") == os.getpid() and drv.get("host") == processes.host_name()
        detached = (run.get("slurm") or {}).get("detached")  # its jobs run on: nobody died
        if run.get("finished") is not None or me or detached:
            return
        cid = (current or {}).get("cell_id")
        what = (f"the driver (pid {drv.get('pid')} on {drv.get('host')}) ended without finishing "
                "the run" + (f" while {cid} was running" if cid else "") + " (killed outright, e.g. "
                "by SIGKILL or a reboot, or it could not write run.json any more: a full or "
                "read-only disk)")
        if cid in self.entries and cid not in self.out.cells and cid not in self.bad:
            self.set_entry(cid, "interrupted", f"{what}; no result was written; --resume RUN "
                                               "re-measures it")
        incidents = run.setdefault("incidents", [])
        if not any(i.get("kind") == "driver_lost" and i.get("driver_pid") == drv.get("pid")
                   for i in incidents):
            incidents.append({"kind": "driver_lost", "at": files.utcnow(), "cell_id": cid,
                              "started": (current or {}).get("started"),
                              "driver_pid": drv.get("pid"), "text": what})
            self.note(what)
            self.changed = True
        if current:
            run["current"] = None
            self.changed = True

    def mark_missing(self) -> None:
        """Listed as measured, but no usable file."""
        for cid, e in self.entries.items():
            if cid in self.out.cells:
                continue
            if cid in self.bad:
                self.set_entry(cid, "invalid", f"{self.bad[cid]}; --resume RUN re-measures it")
            elif e.get("status") not in ("pending", "interrupted", "missing", "invalid"):
                why = (f"cells/{results.cell_filename(cid)} is missing (deleted, or never written), "
                       f"though run.json recorded {e.get('status')}; --resume RUN re-measures it")
                self.note(why)
                self.set_entry(cid, "missing", why)

    def finish(self) -> Reconciled:
        self.run["cells"] = list(self.entries.values())
        if self.changed and self.writer is not None:
            try:
                self.writer.write_run(self.run)
                self.out.modified = True
            except OSError:
                pass
        return self.out
