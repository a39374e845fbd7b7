"""A run directory renamed or moved, then resumed: the cells it measures belong to the run (its id is
run.json's, not the directory's name), so nothing measured is thrown away."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import smoke_run

REPO = Path(__file__).resolve().parents[2]
CELL = "smoke/python/matmul/n24"


def _run(*args):
    return subprocess.run([sys.executable, str(REPO / "reproduce.py"), *args], capture_output=True,
                          text=True, timeout=600)


def test_resuming_a_renamed_run_keeps_what_it_measures(tmp_path):
    original = smoke_run(tmp_path / "results", "--cells", CELL, "--no-report")
    run_id = json.loads((original / "run.json").read_text())["run_id"]
    moved = tmp_path / "elsewhere" / "renamed-run"
    moved.parent.mkdir()
    original.rename(moved)
    (moved / "cells" / "smoke__python__matmul__n24.json").unlink()  # to be measured again
    p = _run("--suite", "smoke", "--quick", "--cells", CELL, "--runner", "local", "--resume",
             str(moved), "--no-report")
    assert p.returncode == 0, p.stderr
    assert "belongs to run" not in p.stderr, p.stderr
    cell = json.loads((moved / "cells" / "smoke__python__matmul__n24.json").read_text())
    assert cell["status"] == "ok" and cell["run_id"] == run_id
    assert not list((moved / "cells").glob(".invalid/*"))
    run = json.loads((moved / "run.json").read_text())
    assert run["run_id"] == run_id and [c["status"] for c in run["cells"]] == ["ok"]
