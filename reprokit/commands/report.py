"""`reproduce.py report RUN`: re-render a run's report from its stored results alone.

First run.json is reconciled with the files on disk (reprokit/run/reconcile.py; not while a driver
holds the run's lock): a result run.json does not list is adopted, an unreadable or invalid one is
moved to cells/.invalid/, a deleted one is marked missing. The report renders every usable cell and
lists the others. With --rejudge OUT the run's measurements are copied to OUT and judged with the
kit's data as it is now (reprokit/run/rejudge.py); the run itself is left as it is. Exit status
as the run's own (reprokit/run/record.py `exit_code`): 0 when every cell
finished ok, 1 when some cell failed, crashed, timed out, or is missing, invalid, interrupted or not
run yet (one line says which, and how to resume a cell that did not run), 2 a user error.
"""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("run", help="results/<run-id>, a run id, or 'latest'; or a crate file `export` wrote")
    p.add_argument("--results", default="results", help="results root (default: results/)")
    p.add_argument("--out", default=None, help="with a crate: the directory to write its run and report "
                   "to (default: <crate file name>.report beside it)")
    p.add_argument("--rejudge", metavar="OUT", default=None,
                   help="copy the run's measurements to the new directory OUT and judge them with the "
                        "kit's data as it is now (published numbers, defect catalogue, bounds, "
                        "policies) instead of the data the run started with; the run itself is only "
                        "read")


def run(args) -> int:
    import sys
    from pathlib import Path

    from reprokit import checks, results
    from reprokit.reader import cells
    from reprokit.report import report
    from reprokit.run import reconcile

    if Path(args.run).is_file():  # a crate: rendered from its files alone (reprokit/crate/checks.py)
        from reprokit.crate import checks

        crate = Path(args.run)
        if args.rejudge:
            from reprokit.errors import UserError

            raise UserError(f"--rejudge with a crate ({crate}): render it first (`report {crate} --out "
                            "DIR`), then rejudge the run it wrote (`report DIR/<run> --rejudge OUT`)")
        for p in checks.render_report(crate, Path(args.out or f"{crate}.report")):
            print(p)
        return 0
    rundir = results.resolve_run(args.run, Path(args.results))
    if args.rejudge:  # a copy with today's data; the original is only read
        from reprokit.run import rejudge

        rundir = rejudge.rejudge(rundir, Path(args.rejudge))
    # the report is written into the run directory: a read-only one is refused before rendering
    checks.writable_dir(rundir.path, f"the run directory {rundir.path}", "make it writable, or "
                        "copy the run to a writable disk and report the copy")
    from reprokit.run import execute_concurrent

    if not args.rejudge:  # a Slurm run left with --detach: collect what ended since (not into a copy)
        execute_concurrent.attach(rundir)
    with results.run_data(rundir):  # the data the run started with (older runs: reprokit/data)
        rec = reconcile.reconcile(rundir, modify=True)
        for p in report.render(rundir):
            print(p)
    bad = cells.incomplete(rec.run)
    if bad:
        shown = ", ".join(f"{n} {s.upper()}" for s, n in cells.status_counts(bad).items())
        print(f"reproduce.py: the run is incomplete: {shown} ({', '.join(e['cell_id'] for e in bad[:3])}"
              f"{', ...' if len(bad) > 3 else ''}); the report lists them; `run --suite "
              f"{rec.run.get('suite')} --resume {rundir.path}` measures them", file=sys.stderr)
        return 1
    from reprokit.run.record import not_ok_cells

    failed = not_ok_cells(rec.run)  # the run's own exit status: a failed or crashed cell is 1 here too
    if failed:
        ids = ", ".join(c["cell_id"] for c in failed[:3]) + (", ..." if len(failed) > 3 else "")
        print(f"reproduce.py: {len(failed)} cell(s) did not finish ok ({ids}); the report gives "
              "each reason", file=sys.stderr)
        return 1
    return 0
