"""`reproduce.py verify FILE`: check a crate `export` wrote, offline and without the kit's checkout
data: its files' checksums, every file's schema, the Process Run Crate profile, the report re-rendered
from the crate alone byte for byte, and with a Docker engine the images against the local store
(reprokit/crate/checks.py). Exit status 0 verified; 1 tampered, truncated or incomplete (one line
naming what); 2 not a crate."""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("file", help="a crate written by `reproduce.py export`")


def run(args) -> int:
    from pathlib import Path

    from reprokit.crate import checks

    for line in checks.verify(Path(args.file)):
        print(line)
    print("verified")
    return 0
