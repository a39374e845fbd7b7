"""`reproduce.py build [--suite S | --stack NAME ... | --image DIR ...] [--flavour cpu|gpu]
[--wheelhouse DIR]`: build stack images with the docker SDK and record them in the lock file
(the build engine: reprokit/containers/build.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from reprokit import checks
from reprokit.containers import build, engine, images
from reprokit.errors import UserError


def add_arguments(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--suite", help="every stack the suite uses")
    which.add_argument("--stack", nargs="+", metavar="NAME", help="these stacks (stacks.yaml)")
    which.add_argument("--image", nargs="+", metavar="DIR", help="these image dirs (images/)")
    p.add_argument("--flavour", choices=images.FLAVOURS, default="cpu")
    p.add_argument("--wheelhouse", type=Path, help="take wheels from DIR only (offline)")
    p.add_argument("--base", default=images.BASE_IMAGE,
                   help=f"local base image of the cpu flavour (default {images.BASE_IMAGE})")
    p.add_argument("--force", action="store_true", help="rebuild even when the inputs are unchanged")
    p.add_argument("--lock", type=Path, help="lock file (default images/lock.json)")
    p.add_argument("--check-wheelhouse", action="store_true",
                   help="only check that the flavour's wheelhouse resolves for its target interpreter "
                        "(PyPI metadata and sha256, no engine needed; python -m "
                        "reprokit.containers.wheelhouse); a gpu build runs this check first")


def run(args) -> int:
    if args.wheelhouse is not None:
        checks.input_dir(args.wheelhouse, "--wheelhouse", "pass the directory holding the wheels, or "
                         "drop --wheelhouse to download them")
    dirs = images.image_dirs(args.suite, args.stack, args.image)
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    if args.check_wheelhouse:
        build.check_wheelhouses(dirs, args.flavour, say)
        print(f"{len(dirs)} image(s): the {args.flavour} wheelhouse resolves for its target interpreter")
        return 0
    checks.output_file(images.lock_path(args.lock), "--lock", "pass --lock PATH naming a file in a "
                       "directory you can write to")
    if args.flavour == "gpu" and args.wheelhouse is None:  # the first thing a GPU build does
        build.check_wheelhouses(dirs, args.flavour, say)
    partial = []
    for entry, seconds in build.build_images(engine.client(), dirs, args.flavour, args.base,
                                             args.wheelhouse, args.force, args.lock, say):
        if "reached" in entry:
            partial.append(entry)
            size = f", {entry['wheelhouse_bytes'] / 1e6:.0f} MB" if "wheelhouse_bytes" in entry else ""
            print(f"images/{entry['image_dir']} {entry['flavour']}: built to {entry['reached']} "
                  f"({len(entry.get('wheels') or {})} wheels{size}, {seconds:.0f} s); stopped: "
                  f"{entry['stopped_by']}")
        else:
            print(f"{entry['tag']} {entry['image_id']} ({seconds:.0f} s)")
    if partial:
        names = ", ".join(f"{e['image_dir']} (to {e['reached']})" for e in partial)
        raise UserError(f"{len(partial)} {args.flavour} image(s) built only in part here: {names}, each "
                        "stopped where the lock's `partial` says; build them where the engine has their "
                        "base image")
    return 0
