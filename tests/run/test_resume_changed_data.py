"""A --resume after the suite's data changed what a cell measures is refused in one line, or with
--allow-changed-data resumes and says so in run.json (never exit 0 with both mixed)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from conftest import smoke_run

from reprokit.catalog import suites
from reprokit.plan.plan import Options, cell_spec, cell_specs, make_plan

REPO = Path(__file__).resolve().parents[2]
CELL = "smoke/python/matmul/n24"


def _run(*args):
    return subprocess.run([sys.executable, str(REPO / "reproduce.py"), *args], capture_output=True,
                          text=True, timeout=600)


def test_a_cells_spec_follows_what_it_measures_not_its_time_limit():
    suite = suites.load_suite("smoke")
    cell = next(c for c in suite.cells if c.id == CELL)
    base = cell_spec(cell, suite, Options())
    assert cell_spec(cell, suite, Options()) == base
    assert cell_spec(cell, suite, Options(time_budget_s=3)) != base  # another budget
    assert cell_spec(replace(cell, params={**cell.params, "n": 25}), suite, Options()) != base
    assert cell_spec(replace(cell, timeout_s=9999), suite, Options()) == base  # a limit is not a measure
    plan = make_plan(suite, Options(cells=[CELL]))
    assert cell_specs(plan) == {CELL: base}


def test_resume_after_the_data_changed_is_refused_then_allowed_and_recorded(tmp_path):
    rundir = smoke_run(tmp_path / "results", "--cells", CELL, "--no-report")
    run = json.loads((rundir / "run.json").read_text())
    assert set(run["cell_specs"]) == {CELL}
    run["cell_specs"][CELL] = "0" * 64  # as if the suite's data had changed since the run planned it
    (rundir / "run.json").write_text(json.dumps(run))
    (rundir / "cells" / "smoke__python__matmul__n24.json").unlink()
    resume = ("--suite", "smoke", "--quick", "--cells", CELL, "--runner", "local", "--resume",
              str(rundir), "--no-report")
    p = _run(*resume)
    assert p.returncode == 2, p.stderr
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith("reproduce.py:")]
    assert "the suite's data changed what smoke/python/matmul/n24 measures" in line
    assert not (rundir / "cells" / "smoke__python__matmul__n24.json").exists()  # nothing ran
    p = _run(*resume, "--allow-changed-data")
    assert p.returncode == 0, p.stderr
    run = json.loads((rundir / "run.json").read_text())
    assert run["incidents"][-1]["kind"] == "changed_data" and CELL in run["incidents"][-1]["text"]
    assert run["cell_specs"][CELL] != "0" * 64


def test_allow_changed_data_without_resume_is_a_user_error():
    p = _run("--suite", "smoke", "--cells", CELL, "--allow-changed-data")
    assert p.returncode == 2 and "applies to --resume RUN only" in p.stderr
