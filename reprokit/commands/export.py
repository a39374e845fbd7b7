"""`reproduce.py export RUN [-o FILE]`: the run as a zipped RO-Crate (Process Run Crate 0.5) a reviewer
can verify offline with `reproduce.py verify FILE` (reprokit/crate/, docs/CRATE.md). Exit status 0
written, 2 a user error (no such run, a report older than today's data: re-render it first)."""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("run", help="results/<run-id>, a run id, or 'latest'")
    p.add_argument("-o", "--output", default=None,
                   help="the crate file to write (default: <run-id>.crate.zip in the current directory)")
    p.add_argument("--results", default="results", help="results root (default: results/)")
    p.add_argument("--with-images", action="store_true",
                   help="add the archive of the container images the cells ran in (a Docker engine and "
                   "the image lock needed)")


def run(args) -> int:
    from pathlib import Path

    from reprokit import results
    from reprokit.crate import export

    rundir = results.resolve_run(args.run, Path(args.results))
    out = Path(args.output) if args.output else Path(f"{rundir.path.name}.crate.zip")
    print(export.export(rundir, out, with_images=args.with_images))
    return 0
