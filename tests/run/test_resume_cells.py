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


def test_a_resume_refuses_a_design_other_than_the_runs_and_keeps_its_own_without_one(tmp_path):
    """--design changes how often each cell runs, so a resume with another one is refused in one line,
    as --min-samples is; without --design the resume keeps the run's."""
    import pytest

    from reprokit.errors import UserError
    from reprokit.run.reconcile import check_resume

    for kind, other in (("auto", "full"), ("fixed", "auto")):
        run = {"run_id": "r", "suite": "s", "design": {"kind": kind}}
        with pytest.raises(UserError, match="--design"):
            check_resume(run, {"design": other})
        check_resume(run, {"design": "auto" if kind == "auto" else "full"})
        check_resume(run, {})  # no --design given: the run's own
    # a run of one fixed K (--repeat, or no design at all) is a fixed design too
    with pytest.raises(UserError, match=r"fixed design \(--design full, or --repeat K\)"):
        check_resume({"run_id": "r"}, {"design": "auto"})
    first = cli("run", "--suite", "smoke", "--quick", "--runner", "local", "--no-report",
                "--results", str(tmp_path))
    assert first.returncode == 0, first.stderr
    (rundir,) = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    # the run's files, but its driver lock (taken before any check of a resume, and left stale)
    before = {p: p.read_bytes() for p in rundir.rglob("*") if p.is_file() and p.name != ".lock"}
    again = cli("run", "--suite", "smoke", "--quick", "--resume", str(rundir), "--design", "auto")
    assert again.returncode == 2, again.stderr
    (line,) = again.stderr.strip().splitlines()
    assert line.startswith(f"reproduce.py: error: cannot resume {rundir.name}: it was measured with a "
                           "fixed design"), line
    assert "this command measures with --design auto" in line
    assert {p: p.read_bytes() for p in rundir.rglob("*") if p.is_file() and p.name != ".lock"} == before
