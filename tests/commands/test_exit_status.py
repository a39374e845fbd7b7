"""`report RUN` exits as the run did (README: 1 when some cell failed or is missing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from reprokit import cli

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def _run_with(tmp_path, status: str | None) -> Path:
    d = tmp_path / "run"
    shutil.copytree(RUNS / "cpu-a", d)
    run = json.loads((d / "run.json").read_text())
    path = lambda e: d / "cells" / (e["cell_id"].replace("/", "__") + ".json")  # noqa: E731
    run["cells"] = [e for e in run["cells"] if path(e).is_file()]  # a complete run of those cells
    if status:
        entry = run["cells"][0]
        cell = json.loads(path(entry).read_text())
        cell["status"] = entry["status"] = status
        cell["reason"] = entry["reason"] = "harness killed by SIGKILL (made so by the test)"
        path(entry).write_text(json.dumps(cell))
    (d / "run.json").write_text(json.dumps(run))
    return d


def test_report_of_a_run_with_a_crashed_cell_is_exit_1(tmp_path, capsys):
    d = _run_with(tmp_path, "crashed")
    assert cli.main(["report", str(d)]) == 1
    err = capsys.readouterr().err
    assert "1 cell(s) did not finish ok" in err and "\n" == err[-1] and err.count("\n") == 1


def test_report_of_a_run_whose_cells_are_all_ok_is_exit_0(tmp_path, capsys):
    assert cli.main(["report", str(_run_with(tmp_path, None))]) == 0
    assert "did not finish ok" not in capsys.readouterr().err
