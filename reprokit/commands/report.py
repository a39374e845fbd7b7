"""`reproduce.py report RUN`: re-render a run's report from its stored results alone.

The run is only read (reprokit/reader/load.py): run.json reconciled with the files on disk in memory
(an unreadable or invalid result is listed as such, a deleted one as missing, an unlisted one adopted),
and nothing but the report (report.md, report.html, report.json, plots/) is written. A Slurm run's jobs
are not collected here: `reproduce.py status RUN` does that, and the report says when jobs are still
out. With --rejudge OUT the run's measurements are copied to OUT and judged with the kit's data as it
is now (reprokit/run/rejudge.py); the run itself is left as it is. Exit status as the run's own: 0
when every cell finished ok, 1 when some cell failed, crashed, timed out, or is missing, invalid,
interrupted or not run yet (one line says which, and how to measure it), or when no cell measured
anything; 2 a user error.
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
    from reprokit.reader.load import load
    from reprokit.reader.model import NOTHING_MEASURED
    from reprokit.report import report

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

    def render(rundir: results.RunDir) -> list[Path]:
        run = load(rundir)
        return report.write(run, results.run_data(rundir, run.doc))  # the data the run started with

    if args.rejudge:  # a copy with today's data, its report rendered before it is renamed into place
        from reprokit.run import rejudge

        rundir, written = rejudge.rejudge(rundir, Path(args.rejudge), render)
    else:
        # the report is written into the run directory: a read-only one is refused before rendering
        checks.writable_dir(rundir.path, f"the run directory {rundir.path}", "make it writable, or "
                            "copy the run to a writable disk and report the copy")
        written = render(rundir)
    for p in written:
        print(p)
    run = load(rundir)
    bad = run.incomplete()
    if bad:
        shown = ", ".join(f"{n} {s.upper()}" for s, n in
                          cells.status_counts({"status": e.status} for e in bad).items())
        how = (f"`reproduce.py status {rundir.path}` collects what its Slurm jobs finished"
               if run.runner == "slurm" and not run.finished else
               f"`run --suite {run.suite} --resume {rundir.path}` measures them")
        print(f"reproduce.py: the run is incomplete: {shown} ({', '.join(e.cell_id for e in bad[:3])}"
              f"{', ...' if len(bad) > 3 else ''}); the report lists them; {how}", file=sys.stderr)
        return 1
    failed = run.not_ok()  # the run's own exit status: a failed or crashed cell is 1 here too
    if failed:
        ids = ", ".join(e.cell_id for e in failed[:3]) + (", ..." if len(failed) > 3 else "")
        print(f"reproduce.py: {len(failed)} cell(s) did not finish ok ({ids}); the report gives "
              "each reason", file=sys.stderr)
        return 1
    if not run.measured():
        print(f"reproduce.py: {NOTHING_MEASURED}", file=sys.stderr)  # reprokit/reader/model.py
        return 1
    return 0
