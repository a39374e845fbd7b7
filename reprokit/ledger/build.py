"""One build of the ledger: find the inputs, take the new ones into the store, write the views.

An input already in the store (a crate by its file's sha256, a run directory by its run's digest) is
skipped without being opened or checked again; a new one is checked and read (reprokit/ledger/read.py),
then stored unless its run is there already (the same run as a directory and as a crate). A refused
input is one line on `warn` and a row of ledger.json's `build.refused`; nothing of it is stored.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from reprokit import files
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
          warn: Callable[[str], None] = lambda line: None, jobs: int = 1) -> Outcome:
    """Build the ledger of `dirs` into `out` with the store at `store_path`; the new inputs are
    checked and read by `jobs` processes (each result is stored by this one, in the inputs' order)."""
    done = Outcome()
    with store.Store(store_path) as st, files.temporary_directory("reprokit-ledger-") as tmp:
        new: list[tuple[read.Input, str]] = []
        for item in read.find(dirs):
            done.inputs += 1
            try:
                key = _key(item)
            except OSError as e:
                _refuse(done, item, f"unreadable ({e.strerror or type(e).__name__})", warn)
                continue
            if st.known_input(key):
                done.known += 1
            else:
                new.append((item, key))
        for (item, key), got in zip(new, _taken([i for i, _ in new], st.salt, Path(tmp), jobs)):
            if isinstance(got, str):
                _refuse(done, item, got, warn)
                continue
            done.read += 1
            if st.has_run(got.digest):
                st.note_input(key, got.digest)
                done.same_run += 1
                continue
            st.add(key, got.record, got.rows, got.claims)
        doc = views.document(st, done.counts())
        done.stored_runs = len(doc["runs"])
        done.written = views.write(doc, out, st)
    return done


@dataclass(frozen=True)
class Taken:
    """What the ledger keeps of one checked input (reprokit/ledger/fields.py), as plain documents
    (they cross from a reading process to the one that stores them)."""
    digest: str
    record: dict
    rows: list[dict]
    claims: list[dict]


_CACHE: read.Cache | None = None  # one per reading process


def _take(item: read.Input, salt: bytes, tmp: Path) -> Taken | str:
    """One input checked, read and reduced to what the ledger keeps; the one-line reason when it is
    refused."""
    global _CACHE
    if _CACHE is None or _CACHE.root != tmp:
        _CACHE = read.Cache(tmp)
    try:
        got = read.read(item, _CACHE)
    except read.Refused as e:
        return str(e)
    record, rows, claims = fields.extract(got, salt, item.form)
    return Taken(got.digest, record, rows, claims)


def _taken(items: list[read.Input], salt: bytes, tmp: Path, jobs: int) -> Iterator[Taken | str]:
    """`_take` of each input, in order: in this process when one job or one input, else in a pool of
    `jobs` processes."""
    if jobs <= 1 or len(items) <= 1:
        yield from (_take(item, salt, tmp) for item in items)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        yield from pool.map(_take, items, [salt] * len(items), [tmp] * len(items), chunksize=4)


def _refuse(done: Outcome, item: read.Input, why: str, warn: Callable[[str], None]) -> None:
    """One line on `warn` (with the input's path as given), and a row for ledger.json (with its name
    relative to the folder it was found under, every path in the reason withheld)."""
    why = " ".join(why.split())
    warn(f"ledger: refused {item.path}: {why}")
    private = fields.Private()
    reason = why.replace(str(item.path), item.name).replace(os.fspath(item.path.resolve()), item.name)
    done.refused.append({"input": item.name, "form": item.form, "reason": private.clean(reason)})
