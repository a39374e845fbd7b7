"""`reproduce.py generate [--check]`: regenerate every committed generated file (reprokit/generate.py).

Exit status 0 when everything is (now) as generated; with --check, 1 when a file is out of date (each
named on one line); 2 for a user error (--reference-csv that is not a file).
"""

from __future__ import annotations

from pathlib import Path

from reprokit.errors import UserError


def add_arguments(p) -> None:
    p.add_argument("--check", action="store_true",
                   help="only compare: name every out-of-date file and exit 1 if there is one")
    p.add_argument("--reference-csv", metavar="CSV",
                   help="published numbers to import (default: the project's copy, "
                        "tests/data/published_numbers.csv)")


def run(args) -> int:
    from reprokit import files, generate

    csv = Path(args.reference_csv).expanduser() if args.reference_csv else None
    if csv is not None and not csv.is_file():
        raise UserError(f"--reference-csv {csv} is not a file; give the published_numbers.csv of the "
                        "reference, or leave the option out")
    stale = 0
    for o in generate.generate(write=not args.check, csv=csv):
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
