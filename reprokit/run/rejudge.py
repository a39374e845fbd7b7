"""`report RUN --rejudge OUT`: a run's measurements judged again with the kit's data as it is now.

Published numbers, defect catalogues (sources.yaml `explains`), device bounds and verdict policies
change after a run; its measurements do not. A run's own report stays rendered from the data it
started with (its kit-data/ snapshot, reprokit/results.py). Rejudging copies the run's measurements
(run.json, cells/, jobs/, logs/, warm-up records) into a new directory OUT, gives the copy a snapshot
of today's reprokit/data in place of its own, records what was done in run.json `rejudged` (when,
with which kit, from which directory, and the digests of the data the run started with). The
copy's report, rendered by the report command, says on its first screen that it was judged again
(reprokit/report/context.py `_rejudged`). The original run directory is only read. OUT is written
beside itself and renamed into place, so a failure leaves no half-made run.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from reprokit import checks, files, results
from reprokit.errors import UserError
from reprokit.run import record

# what a run directory holds that is not a measurement: the old report and the old data snapshot
NOT_COPIED = ("report.md", "report.html", "report.json", "plots", results.DATA_SNAPSHOT,
              f".{results.DATA_SNAPSHOT}.part", ".lock", ".heartbeat")


def rejudge(src: results.RunDir, out: Path) -> results.RunDir:
    """Copy `src`'s measurements to `out` with today's data snapshot; return the new run directory
    (its report not rendered yet). One-line UserError when `out` exists or cannot be written."""
    out = Path(out)
    if out.exists():
        raise UserError(f"--rejudge {out}: it already exists; name a new directory (the original run "
                        "and any earlier rejudged copy are kept as they are)")
    if out.resolve().is_relative_to(src.path.resolve()):
        raise UserError(f"--rejudge {out}: it is inside the run {src.path}; name a directory outside "
                        "it")
    checks.writable_dir(out.parent, f"--rejudge {out}: its parent directory", "name a directory on a "
                        "writable disk")
    run = src.load_run()
    part = out.with_name(f".{out.name}.part")
    shutil.rmtree(part, ignore_errors=True)
    try:
        shutil.copytree(src.path, part, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
        copy = results.RunDir(part)
        snapshot = results.snapshot_data(copy)
        run["rejudged"] = {
            "at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "kit": files.kit_info(),
            "from": str(src.path),
            "data_snapshot_before": run.get("data_snapshot"),
        }
        run["data_snapshot"] = snapshot
        record.write_run(copy, run)  # the kit's one writer of run.json, schema-checked
        part.rename(out)
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
    return results.RunDir(out)
