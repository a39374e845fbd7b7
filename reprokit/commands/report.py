"""`reproduce.py report RUN`: re-render a run's report from its stored results alone."""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("run", help="results/<run-id>, a run id, or 'latest'")
    p.add_argument("--results", default="results", help="results root (default: results/)")


def run(args) -> int:
    from pathlib import Path

    from reprokit import checks, report, results

    rundir = results.resolve_run(args.run, Path(args.results))
    # the report is written into the run directory: a read-only one is refused before rendering
    checks.writable_dir(rundir.path, f"the run directory {rundir.path}", "make it writable, or "
                        "copy the run to a writable disk and report the copy")
    for p in report.render(rundir):
        print(p)
    return 0
