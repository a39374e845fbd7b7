"""`reproduce.py restore FILE`: load an archive's images and verify them against its lock (the
checks, in order: reprokit/containers/archive.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from reprokit import checks
from reprokit.containers import archive, engine, images


def add_arguments(p) -> None:
    p.add_argument("file", type=Path, help="archive written by `reproduce.py archive`")
    p.add_argument("--lock", type=Path, help="lock file to merge into (default images/lock.json)")


def run(args) -> int:
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    archive.check_archive(args.file)  # before the engine: a truncated archive is the user's to fix
    checks.output_file(images.lock_path(args.lock), "--lock", "pass --lock PATH naming a file in "
                       "a directory you can write to")
    loaded = archive.verify_and_load(engine.client(), args.file, args.lock, say)
    for e in loaded:
        print(f"{e['tag']} {e['image_id']}")
    say(f"restored {len(loaded)} image(s); lock: {images.lock_path(args.lock)}")
    return 0
