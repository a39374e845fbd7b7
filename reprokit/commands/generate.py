"""`reproduce.py generate [--check]`: regenerate every committed generated file.

Exit status 0 when everything is (now) as generated; with --check, 1 when a file is out of date (each
named on one line); 2 for a user error (--reference-csv that is not a file).

Every committed generated file, made again from its inputs: one list of generators, one command.

`reproduce.py generate` writes what differs; `--check` only compares (exit status 1 when a file is
out of date, CI's check). Each generator is the one its own module already has; this module only
lists them and where their files go:

- images/<stack>/Dockerfile from images/<stack>/recipe.yaml and images/_blocks/ (containers.recipes)
- compose/<suite>.yml (and .gpu.yml) from the suites and stacks.yaml (containers.compose)
- reprokit/data/published/<source>.yaml from the reference CSV (published_csv): the project's copy,
  tests/data/published_numbers.csv, or --reference-csv; a CSV given that is absent skips them and
  says so.
- the table of docs/suites.md (its generated block) from the suite data (catalog.suite_docs)
- the option tables of docs/commands.md (its generated block) from each command's arguments
  (commands.options_doc)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprokit import files, kitdata
from reprokit.errors import UserError


@dataclass(frozen=True)
class Generator:
    what: str          # what the files are, for messages
    folder: Path       # where they go; expected() names are relative to it
    module: str        # the module whose expected_files() makes them
    needs_csv: bool = False

    def expected(self, csv: Path) -> dict[str, str]:
        mod: Any = importlib.import_module(self.module)
        return mod.expected_files(csv) if self.needs_csv else mod.expected_files()


GENERATORS = (
    Generator("Dockerfiles", files.IMAGES, "reprokit.containers.recipes"),
    Generator("compose files", files.COMPOSE, "reprokit.containers.compose"),
    Generator("published numbers", kitdata.PACKAGED / "published", "reprokit.catalog.published_csv",
              needs_csv=True),
    Generator("suite docs", files.REPO / "docs", "reprokit.catalog.suite_docs"),
    Generator("command docs", files.REPO / "docs", "reprokit.commands.options_doc"),
)


@dataclass
class Outcome:
    generator: Generator
    stale: list[Path]          # differ from (or missing against) what the inputs make
    current: int               # files already as generated
    skipped: str | None = None  # why the generator did not run


def generate(write: bool, csv: Path | None = None) -> list[Outcome]:
    """Compare every generated file with what its inputs make now; with `write`, rewrite the ones that
    differ (containers.generated: atomically, mode 0644). Files a generator no longer makes are left
    alone."""
    from reprokit.catalog import published_csv
    from reprokit.containers import generated

    csv = csv or published_csv.DEFAULT_CSV
    out = []
    for g in GENERATORS:
        if g.needs_csv and not csv.is_file():
            out.append(Outcome(g, [], 0, f"no reference CSV at {csv}"))
            continue
        expected = g.expected(csv)
        stale = generated.stale(g.folder, expected)
        if write:
            generated.write(g.folder, expected)  # only the files whose text differs
        out.append(Outcome(g, [g.folder / n for n in stale], len(expected) - len(stale)))
    return out


def add_arguments(p) -> None:
    p.add_argument("--check", action="store_true",
                   help="only compare: name every out-of-date file and exit 1 if there is one")
    p.add_argument("--reference-csv", metavar="CSV",
                   help="published numbers to import (default: the project's copy, "
                        "tests/data/published_numbers.csv)")


def run(args) -> int:
    csv = Path(args.reference_csv).expanduser() if args.reference_csv else None
    if csv is not None and not csv.is_file():
        raise UserError(f"--reference-csv {csv} is not a file; give the published_numbers.csv of the "
                        "reference, or leave the option out")
    stale = 0
    for o in generate(write=not args.check, csv=csv):
        if o.skipped:
            print(f"{o.generator.what}: skipped ({o.skipped})")
            continue
        stale += len(o.stale)
        for path in o.stale:
            where = path.relative_to(files.REPO)
            print(f"{where} is out of date; run `reproduce.py generate`" if args.check else f"wrote {where}")
        print(f"{o.generator.what}: {o.current} up to date, {len(o.stale)} "
              + ("out of date" if args.check else "written"))
    return 1 if args.check and stale else 0
