"""`run --resume RUN` without --cells continues the run's own cells, not the whole suite.

Found on the first GPU session (docs/gpu-run/session.log): a modern run started with
`--cells 'modern/000/pytorch/*' ...` and resumed without --cells planned every cell of the suite and
was refused for tf-modern, a stack the run never had.
"""

import json
import subprocess
import sys
from pathlib import Path

from reprokit.run.driver import resume_cells

REPO = Path(__file__).resolve().parents[2]


def cli(*args):
    return subprocess.run([sys.executable, str(REPO / "reproduce.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


def test_resume_cells_prefers_the_option_then_the_run():
    run = {"options": {"cells": ["modern/000/pytorch/*"]}}
    assert resume_cells(run, []) == ["modern/000/pytorch/*"]  # argparse's default: no --cells
    assert resume_cells(run, ["other/*"]) == ["other/*"]
    assert resume_cells({"options": {"cells": None}}, []) == []
    assert resume_cells({}, []) == []  # an older run.json without options: the whole suite


def test_resume_without_cells_reruns_only_the_runs_cells(tmp_path):
    common = ["--suite", "smoke", "--quick", "--repeat", "1", "--runner", "local", "--device", "cpu",
              "--no-report", "--results", str(tmp_path)]
    first = cli("run", "--cells", "smoke/python/*", *common)
    assert first.returncode == 0, first.stderr
    (rundir,) = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    (cell,) = list((rundir / "cells").glob("*.json"))
    cell.unlink()  # as if the run had been cut off before this cell ended
    again = cli("run", "--resume", str(rundir), *common)
    assert again.returncode == 0, again.stderr
    run = json.loads((rundir / "run.json").read_text())
    assert [c["cell_id"] for c in run["cells"]] == ["smoke/python/matmul/n24"]
    assert [p.name for p in (rundir / "cells").glob("*.json")] == [cell.name]
