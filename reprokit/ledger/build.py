"""One build of the ledger: find the inputs, take the new ones into the store, write the views.

An input already in the store (a crate by its file's sha256, a run directory by its run's digest) is
skipped without being opened or checked again; a new one is checked and read (reprokit/ledger/read.py),
then stored unless its run is there already (the same run as a directory and as a crate). A refused
input is one line on `warn` and a row of ledger.json's `build.refused`; nothing of it is stored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from reprokit.crate import export
from reprokit.ledger import fields, read, store, views


@dataclass
class Outcome:
    """What a build did: inputs found, read, known, same run as one stored, refused; runs in the store."""
    inputs: int = 0
    read: int = 0
    known: int = 0
    same_run: int = 0
    refused: list[dict] = field(default_factory=list)
    stored_runs: int = 0
    written: list[Path] = field(default_factory=list)

    def counts(self) -> dict:
        return {"inputs": self.inputs, "read": self.read, "known": self.known, "same_run": self.same_run,
                "refused": self.refused}


def _key(item: read.Input) -> str:
    """The input's key in the store: a crate by its file's bytes (a crate changed in any byte is a new
    input, and is verified), a run directory by its run's digest."""
    if item.form == "crate":
        return "crate:" + export.sha256_file(item.path)
    return "run:" + read.run_digest(item.path)


def build(dirs: Iterable[Path], out: Path, store_path: Path,
          warn: Callable[[str], None] = lambda line: None) -> Outcome:
    """Build the ledger of `dirs` into `out` with the store at `store_path`."""
    done = Outcome()
    with store.Store(store_path) as st:
        for item in read.find(dirs):
            done.inputs += 1
            try:
                key = _key(item)
            except OSError as e:
                _refuse(done, item, f"unreadable ({e.strerror or type(e).__name__})", warn)
                continue
            if st.known_input(key):
                done.known += 1
                continue
            try:
                got = read.read(item)
            except read.Refused as e:
                _refuse(done, item, str(e), warn)
                continue
            done.read += 1
            if st.has_run(got.digest):
                st.note_input(key, got.digest)
                done.same_run += 1
                continue
            record, rows, claims = fields.extract(got, st.salt, item.form)
            st.add(key, record, rows, claims)
        doc = views.document(st, done.counts())
        done.stored_runs = len(doc["runs"])
    done.written = views.write(doc, out)
    return done


def _refuse(done: Outcome, item: read.Input, why: str, warn: Callable[[str], None]) -> None:
    """One line on `warn` (with the input's path as given), and a row for ledger.json (with its name
    relative to the folder it was found under, every path in the reason withheld)."""
    why = " ".join(why.split())
    warn(f"ledger: refused {item.path}: {why}")
    private = fields.Private()
    reason = why.replace(str(item.path), item.name).replace(os.fspath(item.path.resolve()), item.name)
    done.refused.append({"input": item.name, "form": item.form, "reason": private.clean(reason)})
