"""`report RUN --rejudge OUT`: a run's measurements judged again with the kit's data as it is now.

Published numbers, defect catalogues (sources.yaml `explains`), device bounds and verdict policies
change after a run; its measurements do not. A run's own report stays rendered from the data it
started with (its kit-data/ snapshot, reprokit/results.py). Rejudging copies the run's measurements
(run.json, cells/, jobs/, logs/, warm-up records) into a new directory OUT, gives the copy a snapshot
of today's reprokit/data in place of its own, appends what was done to run.json `rejudged` (when,
with which kit, from which directory, and the digests of the data the copied run held): the chain,
oldest first, leads from a rejudge of a rejudged copy back to the original run. The copy's report
says on its first screen that it was judged again (reprokit/report/context.py `_rejudged`). The
original run directory is only read.

OUT is made beside itself (.OUT.part): the copy, its run.json and its report are all written there,
and it is renamed to OUT last, so OUT appears complete (report.md, report.html, report.json) or not
at all. Stop signals (Ctrl-C, SIGTERM, SIGHUP) are held throughout and let through only at the
points between steps (files.stop_signals_held), never inside a library's callback; the staging
directory is removed with them held. One left by a rejudge killed with SIGKILL is removed by the
next rejudge to OUT.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from reprokit import checks, files, results
from reprokit.errors import UserError
from reprokit.run import record

# what a run directory holds that is not a measurement: the old report and the old data snapshot
NOT_COPIED = ("report.md", "report.html", "report.json", "plots", results.DATA_SNAPSHOT,
              f".{results.DATA_SNAPSHOT}.part", ".lock", ".heartbeat")


def rejudge(src: results.RunDir, out: Path, render: Callable[[results.RunDir], list[Path]] | None = None
            ) -> tuple[results.RunDir, list[Path]]:
    """Copy `src`'s measurements to `out` with today's data snapshot and render its report there
    with `render` (the report command's; None: no report, for callers that render it themselves);
    the new run directory and the report files written. One-line UserError when `out` exists or
    cannot be written."""
    out = Path(out)
    if out.exists() or out.is_symlink():  # a dangling link too: the rename went through it (exit 3)
        raise UserError(f"--rejudge {out}: {_taken(out)}; name a new directory (the original run and "
                        "any earlier rejudged copy are kept as they are)")
    if out.resolve().is_relative_to(src.path.resolve()):
        raise UserError(f"--rejudge {out}: it is inside the run {src.path}; name a directory outside "
                        "it")
    checks.writable_dir(out.parent, f"--rejudge {out}: its parent directory", "name a directory on a "
                        "writable disk")
    run = src.load_run()  # brought to the current version: `rejudged` is a list where there is one
    part = out.with_name(f".{out.name}.part")
    with files.stop_signals_held() as between:
        try:
            shutil.rmtree(part, ignore_errors=True)  # left by a rejudge killed with SIGKILL
            between()
            shutil.copytree(src.path, part, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED),
                            copy_function=lambda a, b: (between(), shutil.copy2(a, b))[1])
            copy = results.RunDir(part)
            between()
            snapshot = results.snapshot_data(copy)
            between()
            run["rejudged"] = [*(run.get("rejudged") or []), {
                "at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "kit": files.kit_info(),
                "from": str(src.path),
                "data_snapshot_before": run.get("data_snapshot"),
            }]
            run["data_snapshot"] = snapshot
            record.write_run(copy, run)  # the kit's one writer of run.json, schema-checked
            between()
            written = render(copy) if render else []
            between()
            part.rename(out)  # last: OUT is complete or absent
        except BaseException:
            shutil.rmtree(part, ignore_errors=True)
            raise
    return results.RunDir(out), [out / p.relative_to(part) for p in written]


def _taken(out: Path) -> str:
    """Why `out` cannot be the new copy, in a few words."""
    if out.is_symlink() and not out.exists():
        return f"it is a symbolic link to {os.readlink(out)}, which does not exist"
    if out.is_dir() and (out / "run.json").is_file() and not all(
            (out / n).is_file() for n in ("report.md", "report.html", "report.json")):
        return ("it already exists, holding a run copy without its whole report (a rejudge cut short "
                "by an older kit, or a copy made by hand): remove it, or")
    return "it already exists"
