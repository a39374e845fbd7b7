"""The ledger's inputs, found and checked: crates (*.zip) and run directories (a folder holding run.json).

What is checked, and where each input's numbers come from. Every input's numbers are computed again by
this kit from its samples, with the data it was judged with (its data snapshot), so that every number of
the ledger is of one analysis whatever kit recorded the run, and a run of any older kit enters through
its formats' steps (a newer one is refused):

- a crate: the checks of the kit's `verify` (reprokit/crate/checks.py) that bear on its numbers: the
  zip and its members, every file's sha256 and size, every schema (after its format's steps), the kit's
  own profile checks. Left out: verify's byte-for-byte rendering of report.md, report.html and the
  plots (the ledger reads none of them; matplotlib takes most of verify's time), roc-validator (an
  external profile validator) and the notices about this machine's Docker store. In their place the
  crate's report.json is compared with the one computed again (`report_json_difference`): when this
  very kit exported the crate, a difference means its files were altered consistently with their
  checksums, and the crate is refused; when another kit did, a difference is that kit's analysis, and
  is recorded beside the run (`stored_report_matches`).
  What many crates share is checked once per process (`Cache`): a file whose checked sha256 was found
  valid against its schema is not validated again (nor a cell result the reader has just read through
  its schema), and one data snapshot (by its files' digests) is read once.
- a run directory: it carries no digests (the kit writes none for one; only a crate has them), so
  nothing can tell an edited file from an original. What is checked: it is not being written (its lock
  is not held), every cell result is read through its format's steps and schema
  (`RunDir.load_cells`) and holds only finite samples (checks.samples_ok), and the run loads into the
  model. Whether its stored report.json, which nothing binds to the samples, says the same as the one
  computed again is recorded beside the run.

A failing input is `Refused` with one line naming why; nothing of it is kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from reprokit import checks, kitdata, results, validate
from reprokit.errors import UserError
from reprokit.reader.model import Run

CRATE_SUFFIX = ".zip"
RECOMPUTED = "recomputed from the samples"


class Refused(Exception):
    """An input the ledger does not take: one line naming why."""


@dataclass(frozen=True)
class Input:
    """One input: its path, the folder given on the command line it was found under (and that
    folder's place among them, from 1, or 0 when one was given), and its form."""
    path: Path
    root: Path
    form: str  # "crate" | "run directory"
    given: int = 0

    @property
    def name(self) -> str:
        """The input's path relative to the folder it was found under, after `DIR<k>/` when several
        were given: never an absolute path, nor the folder's own name (a home directory's name is a
        user name), since this name reaches ledger.json."""
        rel = self.path.relative_to(self.root).as_posix()
        if not self.given:
            return rel
        return f"DIR{self.given}" + ("" if rel == "." else f"/{rel}")


@dataclass(frozen=True)
class Read:
    """A checked input: the run's content digest, the model, its report context and how it was had."""
    digest: str
    run: Run
    context: dict
    basis: str  # RECOMPUTED
    stored_report_matches: bool | None  # a run directory's stored report.json against the recomputed


def find(dirs: Iterable[Path]) -> list[Input]:
    """Every crate and run directory under `dirs`, in a stable order (sorted paths). A run directory's
    own folders are not searched further; hidden files and folders are left out, and links are not
    followed."""
    out: list[Input] = []
    dirs = [Path(d) for d in dirs]
    for k, root in enumerate(dirs, 1):
        given = k if len(dirs) > 1 else 0
        for here, subdirs, names in os.walk(root, followlinks=False):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
            if "run.json" in names:
                out.append(Input(Path(here), root, "run directory", given))
                subdirs[:] = []
                continue
            out += [Input(Path(here) / n, root, "crate", given) for n in sorted(names)
                    if n.endswith(CRATE_SUFFIX) and not n.startswith(".")
                    and (Path(here) / n).is_file() and not (Path(here) / n).is_symlink()]
    return out


def _run_files(run_dir: Path) -> Iterator[tuple[str, Path]]:
    yield "run.json", run_dir / "run.json"
    cells = run_dir / "cells"
    if cells.is_dir():
        for p in sorted(cells.glob("*.json")):
            if not p.name.startswith(".") and p.is_file():
                yield f"cells/{p.name}", p


def run_digest(run_dir: Path) -> str:
    """The run's content digest: sha256 over run.json and every cells/*.json (process files of
    `--repeat K` too), each as its relative name, its length and its bytes, in name order. The same
    run as a directory and as a crate has one digest."""
    h = hashlib.sha256()
    for rel, p in _run_files(run_dir):
        data = p.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


class Cache:
    """What one process learned from the crates it read, for the next ones: the (sha256, schema)
    pairs found valid, and each data snapshot (by `checks.snapshot_digest`) as one KitData, its
    files copied under `root` (a folder the build owns and removes; processes that share it share
    the copies)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.valid: set[tuple[str, str]] = set()
        self.snapshots: dict[str, kitdata.KitData] = {}

    def data(self, crate) -> kitdata.KitData:
        from reprokit.crate import DATA_DIR
        from reprokit.crate import checks as crate_checks

        digest = crate_checks.snapshot_digest(crate)
        if digest not in self.snapshots:
            kept = self.root / digest
            if not kept.is_dir():
                part = self.root / f".{digest}.{os.getpid()}"
                shutil.copytree(crate.root / DATA_DIR, part)
                try:
                    os.rename(part, kept)  # another process's copy, complete, may be there first
                except OSError:
                    shutil.rmtree(part, ignore_errors=True)
            self.snapshots[digest] = kitdata.KitData(kept)
        return self.snapshots[digest]


def read(item: Input, cache: Cache) -> Read:
    """The input checked and read (module docstring); `Refused` with one line when it fails."""
    try:
        return _read_crate(item.path, cache) if item.form == "crate" else _read_dir(item.path)
    except Refused:
        raise
    except UserError as e:  # CrateInvalid included: every check's one line
        raise Refused(_one_line(e)) from None
    except (OSError, ValueError, TypeError, KeyError) as e:  # a reader's own error on a damaged file
        raise Refused(f"unreadable ({type(e).__name__}: {_one_line(e)})") from None


def _read_crate(path: Path, cache: Cache) -> Read:
    from reprokit.crate import RUN_DIR
    from reprokit.crate import checks as crate_checks
    from reprokit.reader.load import load

    with crate_checks.opened(path, rerender=False) as crate:
        crate_checks.check_files(crate)
        crate_checks.check_image_archive(crate)
        run_dir = crate.root / RUN_DIR
        run = load(results.RunDir(run_dir))  # every cell result read through its steps and schema
        if not run.changes:  # none set aside: each is valid, and its schema is not checked twice
            cache.valid.update((str(e.get("sha256")), "cell_result")
                               for rel, e in crate.described_files().items()
                               if rel.startswith(f"{RUN_DIR}/cells/") and rel.count("/") == 2
                               and rel.endswith(".json"))
        crate_checks.check_schemas(crate, cache.valid)
        crate_checks.check_profile(crate, roc=False)
        context, differs = crate_checks.report_json_difference(crate, run, cache.data(crate))
        other = crate_checks.other_kit(crate)
        if differs and not other:
            raise Refused(f"its report.json differs from the one this kit computes from its run ({differs}), "
                          "and this kit exported it: the crate's files were altered consistently with their "
                          "checksums")
        return Read(run_digest(run_dir), run, context, RECOMPUTED, differs is None)


def _read_dir(path: Path) -> Read:
    from reprokit.reader import lock
    from reprokit.reader.load import load
    from reprokit.report.context import as_stored

    if lock.held_by_other(path):
        raise Refused("is being written (its lock is held by a running driver); add it once the run ends")
    digest = run_digest(path)
    rundir = results.RunDir(path)
    for c in rundir.load_cells():
        checks.samples_ok(c, f"cells/{results.cell_filename(c['cell_id'])}")
    run = load(rundir)
    context = as_stored(run, results.run_data(rundir, run.doc))
    errs = validate.errors("report", context)
    if errs:
        raise Refused(f"its report, computed again, does not follow the report schema: {errs[0]}")
    stored = path / "report.json"
    matches = None
    if stored.is_file():
        try:
            matches = json.loads(stored.read_text(encoding="utf-8")) == context
        except (OSError, ValueError):
            matches = False
    if run_digest(path) != digest:
        raise Refused("changed while it was read (a run still being written?); add it again")
    return Read(digest, run, context, RECOMPUTED, matches)
