"""`reproduce.py archive (--suite S | --image DIR ...) -o FILE`: a suite's images in one file
(the format and the logic: reprokit/containers/archive.py; `reproduce.py restore FILE` loads it)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from reprokit.containers import archive, engine, images


def add_arguments(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--suite", help="every image the suite's stacks use")
    which.add_argument("--image", nargs="+", metavar="DIR", help="these image dirs")
    p.add_argument("-o", "--output", required=True, type=Path, help="archive file to write")
    p.add_argument("--flavour", choices=images.FLAVOURS, default="cpu")
    p.add_argument("--lock", type=Path, help="lock file (default images/lock.json)")


def run(args) -> int:
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    dirs = images.image_dirs(args.suite, None, args.image)
    archive.check_output(args.output, dirs, args.flavour, args.lock)
    client = engine.client()
    t = time.monotonic()
    manifest = archive.write_archive(client, dirs, args.flavour, args.output, args.lock, say,
                                     args.suite)
    size = args.output.stat().st_size / 2**20
    say(f"archive {args.output}: {len(manifest['images'])} image(s), {size:.0f} MB in "
        f"{time.monotonic() - t:.0f} s")
    print(args.output)
    return 0
