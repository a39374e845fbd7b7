"""Record the measured process time of every cell of a run in reprokit/data/cell_times.yaml.

    python tools/record_cell_times.py [--merge] RUN_DIR [RUN_DIR ...]

The ETA of a run (reprokit/run/progress.py) uses, for each cell, its time in the newest earlier run on this
host (results/), else the time recorded here, scaled by this run's pace. A fresh clone has no earlier run,
so without this file the first ETA is a guess from the first cells. One measurement per (suite, runner,
--quick, protocol): a new run of the same kind replaces the old one. Only cells that ended ok are kept.
With --merge, a run of some cells of a suite (`run --cells`) replaces only those cells' times; the
entry keeps the others from its earlier run and names that run, machine and date under `earlier`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reprokit import files, results, validate  # noqa: E402
from reprokit.analysis import cpus  # noqa: E402
from reprokit.errors import UserError  # noqa: E402

OUT = REPO / "reprokit" / "data" / "cell_times.yaml"
HEADER = """\
# Measured process wall time (seconds) of every cell of a run, per (suite, runner, --quick, protocol):
# the ETA of a run on a host with no earlier run of its own (reprokit/run/progress.py) starts from these and
# scales them by the pace of the run's first cells. Written by tools/record_cell_times.py RUN_DIR from
# the run's run.json (process_wall_s of each ok cell, per process with --repeat K); each entry names
# the run, the machine and the date it was measured on.
"""


def entry(rundir: Path) -> dict:
    run = results.RunDir(rundir).load_run()
    repeat = int(run.get("repeat") or 1)
    cells = {e["cell_id"]: round(float(e["process_wall_s"]) / repeat, 1) for e in run["cells"]
             if e.get("status") == "ok" and e.get("process_wall_s")}
    if not cells:
        raise UserError(f"{rundir} has no ok cell with a process time; record a run whose cells ran ok")
    return {"suite": run["suite"], "runner": run["runner"], "quick": bool(run["quick"]),
            "protocol": run["protocol"], "run": run["run_id"],
            "machine": cpus.short_label((run.get("host_fingerprint") or {}).get("cpu") or {}),
            "date": str(run["started"])[:10], "cells": dict(sorted(cells.items()))}


def merged(new: dict, old: dict | None) -> dict:
    """`new` with the cells of `old` it lacks, those named under `earlier` (old's own run)."""
    if old is None:
        return new
    kept = {c: t for c, t in old["cells"].items() if c not in new["cells"]}
    if not kept:
        return new
    earlier = old.get("earlier")
    if earlier and set(kept) <= set(earlier["cells"]):
        src = earlier  # still from the run the old entry kept them from
    elif earlier:
        raise UserError("--merge would keep cells from two earlier runs; record a whole run of the suite "
                        "instead")
    else:
        src = {"run": old["run"], "machine": old["machine"], "date": old["date"]}
    out = dict(new, cells=dict(sorted({**kept, **new["cells"]}.items())))
    out["earlier"] = {"run": src["run"], "machine": src["machine"], "date": src["date"],
                      "cells": sorted(kept)}
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="record_cell_times.py", description=__doc__.split("\n")[0])
    p.add_argument("--merge", action="store_true",
                   help="a run of some cells of a suite replaces only those cells' times")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    args = p.parse_args(argv)
    doc = files.load_yaml(OUT.read_text()) if OUT.exists() else {"schema_version": 1, "measurements": []}
    for arg in args.runs:
        try:
            new = entry(Path(arg))
            key = (new["suite"], new["runner"], new["quick"], new["protocol"])
            if args.merge:
                old = [m for m in doc["measurements"]
                       if (m["suite"], m["runner"], m["quick"], m["protocol"]) == key]
                new = merged(new, old[0] if old else None)
        except UserError as e:
            print(f"record_cell_times: {e}", file=sys.stderr)
            return 2
        doc["measurements"] = [m for m in doc["measurements"]
                               if (m["suite"], m["runner"], m["quick"], m["protocol"]) != key] + [new]
        print(f"{new['suite']} ({new['runner']}, quick={new['quick']}): {len(new['cells'])} cells, "
              f"{sum(new['cells'].values()):.0f} s from {new['run']}")
    doc["measurements"].sort(key=lambda m: (m["suite"], m["runner"], m["quick"], m["protocol"]))
    validate.check("cell_times", doc, str(OUT))
    files.write_text_atomic(OUT, HEADER + yaml.safe_dump(doc, sort_keys=False, width=110))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
