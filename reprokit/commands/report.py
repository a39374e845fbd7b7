"""`reproduce.py report RUN`: re-render a run's report from its stored results alone."""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("run", help="results/<run-id>, a run id, or 'latest'")
    p.add_argument("--results", default="results", help="results root (default: results/)")


def run(args) -> int:
    from pathlib import Path

    from reprokit import report, results

    rundir = results.resolve_run(args.run, Path(args.results))
    for p in report.render(rundir):
        print(p)
    return 0
