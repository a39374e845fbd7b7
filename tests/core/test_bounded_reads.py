"""Every reader of a file the kit did not just write is bounded: a regular file below
files.READ_LIMITS, else one line, and the run's layout is checked before anything reads it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import cli, files
from reprokit.errors import UserError
from reprokit.reader import cells

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
REPO = Path(__file__).resolve().parents[2]


def _complete_run(tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(RUNS / "cpu-a", d)
    run = json.loads((d / "run.json").read_text())
    run["cells"] = [e for e in run["cells"]
                    if (d / "cells" / (e["cell_id"].replace("/", "__") + ".json")).is_file()]
    (d / "run.json").write_text(json.dumps(run))
    return d


def test_a_device_file_is_refused_unread(tmp_path):
    link = tmp_path / "x.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(files.UnreadableFile, match="not a regular file"):
        files.read_bounded(link, "cell_result")


def test_a_fifo_neither_hangs_nor_is_read(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(files.UnreadableFile, match="not a regular file"):
        files.read_bounded(fifo, "run")


def test_a_file_above_its_limit_is_refused_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.json"
    big.write_text("[" + "1," * 100 + "1]")
    monkeypatch.setitem(files.READ_LIMITS, "cell_result", 64)
    with pytest.raises(files.UnreadableFile, match="above the 64-byte limit"):
        files.read_bounded(big, "cell_result")
    assert files.read_bounded(big, "run") == big.read_bytes()  # another kind, another limit


def test_a_cell_file_linked_to_dev_zero_is_listed_by_report_and_left_in_place(tmp_path):
    """It was read until MemoryError (exit 3, or the OOM killer without a ulimit). The report only
    reads: it lists the cell as INVALID and leaves the link where it is (`run --resume` moves it
    aside)."""
    d = _complete_run(tmp_path)
    victim = sorted((d / "cells").glob("*.json"))[0]
    victim.unlink()
    victim.symlink_to("/dev/zero")
    code = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({2**31}, {2**31})); "
            f"sys.argv = ['reproduce.py', 'report', {str(d)!r}]; from reprokit import cli; "
            "sys.exit(cli.main())")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=str(REPO))
    assert p.returncode == 1, p.stderr
    assert "INVALID" in p.stderr and "MemoryError" not in p.stderr and "internal error" not in p.stderr
    assert victim.is_symlink() and not (d / "cells" / ".invalid").exists()  # nothing moved
    assert "not a regular file" in (d / "report.md").read_text()


def test_check_result_says_why_a_huge_file_is_invalid(tmp_path, monkeypatch):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"padding": "x" * 1000}))
    monkeypatch.setitem(files.READ_LIMITS, "cell_result", 100)
    doc, why = cells.check_result(f, "run-id")
    assert doc is None and "limit" in why


def test_an_unreadable_run_json_names_the_runs_fix_not_the_cells(tmp_path):
    d = _complete_run(tmp_path)
    (d / "run.json").write_text("{broken")
    with pytest.raises(UserError) as e:
        files.read_json(d / "run.json", "run")
    assert "re-run the cell" not in str(e.value) and "run's record" in str(e.value)


def test_cells_as_a_symlink_loop_is_one_line_exit_2(tmp_path, capsys):
    """It was exit 3 (pathlib's RuntimeError 'Symlink loop') on --resume and report."""
    d = _complete_run(tmp_path)
    shutil.rmtree(d / "cells")
    (d / "cells").symlink_to("cells")
    assert cli.main(["report", str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("reproduce.py: error:") and "\n" not in err and "symbolic link" in err


def test_the_limits_are_above_the_largest_committed_result():
    """The limits leave room above real results: the sample run's largest cell file is far below."""
    sample = REPO / "docs" / "sample-run"
    largest = max(p.stat().st_size for p in sample.rglob("cells/*.json"))
    assert largest * 50 < files.READ_LIMITS["cell_result"]
