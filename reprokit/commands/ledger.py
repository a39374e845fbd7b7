"""`reproduce.py ledger DIR... [--out OUT] [--store PATH]`: verified runs of many machines put together.

Walks each DIR for crates (*.zip) and run directories (a folder holding run.json), checks each (a crate
by the checks of `verify` that bear on its numbers, a run directory as reprokit/ledger/read.py says; new
inputs in `--jobs` processes), keeps what it took in an SQLite store
(default OUT/ledger.sqlite; an input already there is not read again) and writes OUT/ledger.json and
OUT/index.html: every published number with its re-measurements, every claim by device model.
A failing input is refused in one line on stderr (and listed in ledger.json); the rest is built.
Exit status 0 when the ledger holds a run; 1 when nothing is left (every input refused, none stored);
2 a bad argument.
"""

from __future__ import annotations

import os
import sys


def add_arguments(p) -> None:
    p.add_argument("dirs", nargs="+", metavar="DIR", help="folders searched for crates and run directories")
    p.add_argument("--out", default="ledger", help="where ledger.json and index.html go (default: ledger/)")
    p.add_argument("--store", default=None,
                   help="the ledger's SQLite store, kept between builds (default: OUT/ledger.sqlite)")
    p.add_argument("--jobs", type=int, default=None,
                   help="processes that check and read new inputs (default: this machine's usable cores)")


def run(args) -> int:
    from pathlib import Path

    from reprokit import checks
    from reprokit.errors import UserError
    from reprokit.ledger import build

    jobs = args.jobs if args.jobs is not None else len(os.sched_getaffinity(0))
    if jobs < 1:
        raise UserError(f"--jobs {args.jobs} is not a number of processes; give --jobs 1 or more")
    dirs = [checks.input_dir(d, "DIR", "give folders that hold crates or run directories") for d in args.dirs]
    out = checks.writable_dir(Path(args.out), f"--out {args.out}", "give --out a writable directory")
    store = Path(args.store) if args.store else out / "ledger.sqlite"
    checks.output_file(store, "--store", "give --store a file in a writable directory")
    if store.is_file() and store.stat().st_size and store.read_bytes()[:16] != b"SQLite format 3\0":
        raise UserError(f"--store {store} is not an SQLite file (a ledger's store); give another --store, "
                        "or move that file aside to start a new store")  # before anything is created
    store.parent.mkdir(parents=True, exist_ok=True)  # OUT itself is made when the views are written
    done = build.build(dirs, out, store, warn=lambda line: print(line, file=sys.stderr),
                       jobs=jobs)
    print(f"ledger: {done.inputs} inputs: {done.read} read, {done.known} already in the store, "
          f"{done.same_run} the same run as one stored, {len(done.refused)} refused; the store holds "
          f"{done.stored_runs} runs")
    for path in done.written:
        print(f"ledger: {path}")
    if not done.stored_runs:
        print("reproduce.py: the ledger holds no run (every input was refused or none was found); give "
              "folders with crates `reproduce.py export` wrote or run directories", file=sys.stderr)
        return 1
    return 0
