"""The ledger's store: SQLite (the standard library's sqlite3), one file, kept between builds.

Tables (each record a JSON document of reprokit/ledger/fields.py's allow-listed fields):
- `runs` (digest primary key, doc): one row per run, keyed by its content digest (run.json and its
  cell files: reprokit/ledger/read.py `run_digest`);
- `rows` (run, number_id, doc) and `claims` (run, claim_id, doc): what the run says of each published
  number and claim;
- `inputs` (key primary key, run): every input already taken: a crate by the sha256 of its file, a run
  directory by its run's digest. A build skips an input whose key is here without opening it, so
  adding one run to a folder reads only that run;
- `plots` (key primary key, svg): the views' rendered plots, each keyed by a hash of exactly the data it
  draws (reprokit/ledger/plots.py `key`): a build renders only the plots whose data changed, and keeps
  only the plots its views used (a cache: emptying it costs one build's rendering, nothing else);
- `meta`: its salt (16 bytes of os.urandom, made once when the store is
  created; the salted hashes of machines and GPUs are comparable only within one store).

The store's format version is SQLite's `user_version`; an older store is brought up to this one by
its steps (`_STEPS`, one per version), a newer one refused.

A run is added in one transaction (all of it or nothing). Refused inputs are not stored at all; they
are checked again by the next build.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from reprokit.errors import UserError

VERSION = 2


def _to_2(db: sqlite3.Connection) -> None:
    """Version 1 kept a crate's numbers as its own report.json said them, and no machine facts, claim
    ratios by device kind or number scales: its records are dropped (the salt is kept, so hashed ids
    stay), and the next build reads every input again. A run whose input is no longer in the folders
    given leaves the store."""
    for table in ("inputs", "claims", "rows", "runs"):
        db.execute(f"DELETE FROM {table}")


_STEPS = {2: _to_2}  # version: the step from the one before
_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (digest TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows (run TEXT NOT NULL REFERENCES runs(digest), number_id TEXT NOT NULL,
                                 doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (run TEXT NOT NULL REFERENCES runs(digest), claim_id TEXT NOT NULL,
                                   doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inputs (key TEXT PRIMARY KEY, run TEXT NOT NULL REFERENCES runs(digest));
CREATE TABLE IF NOT EXISTS plots (key TEXT PRIMARY KEY, svg TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS rows_by_number ON rows (number_id);
CREATE INDEX IF NOT EXISTS claims_by_claim ON claims (claim_id);
"""


class Store:
    """An open store (a context manager: closed at the end)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA foreign_keys = ON")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > VERSION:
                raise UserError(f"--store {self.path} is a ledger store of format version {version}, "
                                f"newer than this kit's ({VERSION}); use the kit that made it or "
                                "another --store")
            self.db.executescript(_TABLES)
            if version == 0:
                with self.db:
                    self.db.execute("BEGIN")
                    self.db.execute(f"PRAGMA user_version = {VERSION}")
                    self.db.execute("INSERT OR IGNORE INTO meta VALUES ('salt', ?)", (os.urandom(16).hex(),))
            for step in range(version + 1, VERSION + 1) if version else ():
                with self.db:
                    self.db.execute("BEGIN")
                    _STEPS[step](self.db)
                    self.db.execute(f"PRAGMA user_version = {step}")
            self.salt = bytes.fromhex(self._meta("salt"))
        except sqlite3.DatabaseError as e:  # not a database, or a locked or damaged one
            raise UserError(f"--store {self.path} cannot be used as the ledger's store ({e}); give another "
                            "--store, or move that file aside to start a new store") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.db.close()

    def _meta(self, key: str) -> str:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise sqlite3.DatabaseError(f"its meta table has no {key}")
        return row[0]

    def known_input(self, key: str) -> bool:
        return self.db.execute("SELECT 1 FROM inputs WHERE key = ?", (key,)).fetchone() is not None

    def has_run(self, digest: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE digest = ?", (digest,)).fetchone() is not None

    def note_input(self, key: str, digest: str) -> None:
        """An input whose run is stored already (the same run as a directory and as a crate)."""
        self.db.execute("INSERT OR IGNORE INTO inputs VALUES (?, ?)", (key, digest))

    def add(self, key: str, record: dict, rows: list[dict], claims: list[dict]) -> None:
        """One run, with its rows and claims and the input it came from, in one transaction."""
        digest = record["digest"]
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("INSERT INTO runs VALUES (?, ?)", (digest, _dump(record)))
            self.db.executemany("INSERT INTO rows VALUES (?, ?, ?)",
                                [(digest, r["number_id"], _dump(r)) for r in rows])
            self.db.executemany("INSERT INTO claims VALUES (?, ?, ?)",
                                [(digest, c["claim_id"], _dump(c)) for c in claims])
            self.db.execute("INSERT OR IGNORE INTO inputs VALUES (?, ?)", (key, digest))

    def runs(self) -> list[dict]:
        return [json.loads(d) for (d,) in self.db.execute("SELECT doc FROM runs ORDER BY digest")]

    def rows(self) -> list[tuple[str, dict]]:
        return [(run, json.loads(d)) for run, d in
                self.db.execute("SELECT run, doc FROM rows ORDER BY number_id, run")]

    def claims(self) -> list[tuple[str, dict]]:
        return [(run, json.loads(d)) for run, d in
                self.db.execute("SELECT run, doc FROM claims ORDER BY claim_id, run")]

    def plots(self, keys: list[str]) -> dict[str, str]:
        """The rendered plots kept under these keys (those not kept are missing)."""
        out: dict[str, str] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            marks = ",".join("?" * len(part))
            out.update(self.db.execute(f"SELECT key, svg FROM plots WHERE key IN ({marks})", part).fetchall())
        return out

    def keep_plots(self, used: dict[str, str]) -> None:
        """The plots one build's views used (key: svg), in one transaction: new ones added, every other
        one removed."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS used (key TEXT PRIMARY KEY)")
            self.db.execute("DELETE FROM used")
            self.db.executemany("INSERT OR IGNORE INTO used VALUES (?)", [(k,) for k in used])
            self.db.execute("DELETE FROM plots WHERE key NOT IN (SELECT key FROM used)")
            self.db.executemany("INSERT OR IGNORE INTO plots VALUES (?, ?)", list(used.items()))


def _dump(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, allow_nan=False)
