"""Give a run made before run directories held their data (kit-data/) a snapshot of it.

    python tools/snapshot_run_data.py RUN

Renders the run's report with reprokit/data as it is now, recording which data files the report reads
(reprokit/crate/export.py render_recording), copies exactly those into RUN/kit-data/ and records their
sha256 in run.json `data_snapshot`; `reproduce.py report RUN` then renders from them. Use it only on a
run whose report is current with today's data (the committed sample: tests/report/test_sample_run.py checks
that), since the snapshot says that this is the data the run's verdicts use.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

from reprokit import files, kitdata, results
from reprokit.crate.export import render_recording
from reprokit.run.record import write_run


def snapshot(run_path: Path) -> dict:
    rundir = results.RunDir(run_path)
    run = rundir.load_run()
    with tempfile.TemporaryDirectory() as tmp:  # render a copy: the run's own report is left alone
        copy = Path(tmp) / run_path.name
        shutil.copytree(run_path, copy, ignore=shutil.ignore_patterns(".lock", results.DATA_SNAPSHOT))
        run_copy = {k: v for k, v in run.items() if k != "data_snapshot"}
        write_run(results.RunDir(copy), run_copy)
        reads = render_recording(copy, kitdata.PACKAGED)
    dst = run_path / results.DATA_SNAPSHOT
    shutil.rmtree(dst, ignore_errors=True)
    digests = {}
    for rel in reads:
        raw = files.read_bounded(kitdata.PACKAGED / rel, "data")
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_bytes(raw)
        digests[rel] = hashlib.sha256(raw).hexdigest()
    run["data_snapshot"] = {"dir": results.DATA_SNAPSHOT, "files": digests}
    write_run(rundir, run)
    return run["data_snapshot"]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    snap = snapshot(Path(argv[0]))
    print(f"{argv[0]}/{snap['dir']}: {len(snap['files'])} data files the report reads")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
