"""`report RUN --rejudge OUT` (reprokit/run/rejudge.py): a stored run's measurements judged with the
kit's data as it is now, in a copy, through the real command line; the run itself only read.

The run is docs/gpu-run's H100 legacy-2017 run, recorded before the defect catalogue existed: its own
report cannot say whether d001-no-sync explains its six impossible 001 numbers; judged again, it does."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import formats, results
from reprokit.run import rejudge

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "docs" / "gpu-run" / "20261126T175757Z-legacy-2017"
COMMITTED = REPO / "docs" / "gpu-run" / "20261126T175757Z-legacy-2017-rejudged"


def _report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "reproduce.py"), "report", *args],
                          capture_output=True, text=True, timeout=300, cwd=str(REPO))


def _digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_run_judged_again_explains_its_impossible_numbers_and_the_run_is_untouched(tmp_path):
    before = _digests(H100)
    out = tmp_path / "again"
    p = _report(str(H100), "--rejudge", str(out))
    assert p.returncode == 0, p.stderr
    assert _digests(H100) == before  # only read
    md = (out / "report.md").read_text()
    head = md.split("## Does it hold here?")[0]
    assert "**Judged again** on " in head and f"copied from {H100}" in head
    assert "6 physically impossible" in md and "6 EXPLAINED by d001-no-sync" in md
    rows = [ln for ln in md.splitlines() if ln.startswith("| PyTorch") and "| 001-L05" in ln]
    assert len(rows) == 6 and all("EXPLAINED by d001-no-sync: it needs its timing inflated" in r
                                  for r in rows)
    run = json.loads((out / "run.json").read_text())
    orig = json.loads((H100 / "run.json").read_text())
    (entry,) = run["rejudged"]  # the chain: one rejudge
    assert entry["data_snapshot_before"] == orig["data_snapshot"]
    assert run["data_snapshot"] != orig["data_snapshot"] and run["cells"] == orig["cells"]
    assert not (out / "report.md").is_symlink() and (out / "kit-data" / "sources.yaml").is_file()
    # the copy is a run like any other: its plain re-render says the same
    first = md
    p = _report(str(out))
    assert p.returncode == 0, p.stderr
    assert (out / "report.md").read_text() == first


def test_the_committed_rejudged_h100_run_says_explained_in_every_001_row():
    """docs/gpu-run holds the legacy run judged again with the data of the day it was made: whether its
    defect explains each of its six IMPLAUSIBLE rows is in a report, with the arithmetic."""
    run = json.loads((COMMITTED / "run.json").read_text())
    assert run["rejudged"]["from"] == "docs/gpu-run/20261126T175757Z-legacy-2017"
    assert run["rejudged"]["kit"]["git_dirty"] is False
    doc = json.loads((COMMITTED / "report.json").read_text())
    rows = [n for n in doc["numbers"] if n["id"].startswith("001-")]
    assert len(rows) == 6
    for n in rows:
        (e,) = n["analysis"]["explanations"]
        assert e["label"] == "EXPLAINED" and e["defect"] == "d001-no-sync"
        assert e["inflation_there"] >= e["inflation_needed"] and "enough to explain it" in e["arithmetic"]


@pytest.mark.parametrize("where", ["exists", "inside"])
def test_an_unusable_out_is_one_line_and_exit_2(tmp_path, where):
    out = tmp_path / "taken" if where == "exists" else H100 / "cells" / "again"
    if where == "exists":
        out.mkdir()
    p = _report(str(H100), "--rejudge", str(out))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert ("already exists" if where == "exists" else "inside the run") in p.stderr
    assert not (H100 / "cells" / "again").exists()


def test_a_failure_midway_leaves_no_half_made_copy(tmp_path, monkeypatch):
    def broken(rundir):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "snapshot_data", broken)
    with pytest.raises(OSError):
        rejudge.rejudge(results.RunDir(H100), tmp_path / "again")
    assert list(tmp_path.iterdir()) == []


REPORT = ("report.md", "report.html", "report.json")


@pytest.mark.parametrize("delay", [0.0, 0.3, 1.0, 2.5])
def test_sigterm_leaves_out_complete_or_absent_and_a_second_rejudge_works(tmp_path, delay):
    """A real SIGTERM at several points of a real `report RUN --rejudge OUT` (counted from when the
    staging directory appears, not from the start: the machine's speed does not matter): OUT is
    either absent or holds the whole report, the staging directory is gone, no traceback is printed,
    and a second rejudge to OUT works. It was renamed into place before the report was rendered: OUT
    was left with run.json and cells but no or part of its report, and the next rejudge refused it."""
    import os
    import signal
    import time

    out = tmp_path / "again"
    part = tmp_path / ".again.part"
    proc = subprocess.Popen([sys.executable, str(REPO / "reproduce.py"), "report", str(H100), "--rejudge",
                             str(out)], cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 120
        while not part.exists() and not out.exists() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.002)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert not part.exists(), os.listdir(tmp_path)
    if out.exists():  # done before the signal, or it came after the rename (the process may be
        # past the command then, its handlers given back: killed by it, -15)
        assert proc.returncode in (0, 128 + signal.SIGTERM, -signal.SIGTERM), err
        assert all((out / n).is_file() for n in REPORT), sorted(os.listdir(out))
    else:
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "interrupted by SIGTERM" in err, err
        p = _report(str(H100), "--rejudge", str(out))
        assert p.returncode == 0, p.stderr
        assert all((out / n).is_file() for n in REPORT)


def test_a_left_half_made_copy_is_named_in_the_refusal(tmp_path):
    """OUT holding a copy without its report (what an older kit left when it was killed): the
    refusal says so, in one line."""
    out = tmp_path / "again"
    out.mkdir()
    shutil.copyfile(H100 / "run.json", out / "run.json")
    p = _report(str(H100), "--rejudge", str(out))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "without its whole report" in p.stderr and "remove it" in p.stderr


def test_a_dangling_link_as_out_is_one_line_exit_2(tmp_path):
    (tmp_path / "again").symlink_to(tmp_path / "nowhere")
    p = _report(str(H100), "--rejudge", str(tmp_path / "again"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "symbolic link" in p.stderr and not (tmp_path / "nowhere").exists()


def test_a_rejudge_of_a_rejudged_copy_keeps_the_chain_back_to_the_original(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert _report(str(H100), "--rejudge", str(first)).returncode == 0
    p = _report(str(first), "--rejudge", str(second))
    assert p.returncode == 0, p.stderr
    orig = json.loads((H100 / "run.json").read_text())
    one = json.loads((first / "run.json").read_text())
    two = json.loads((second / "run.json").read_text())
    assert two["schema_version"] == formats.version("run") and len(two["rejudged"]) == 2
    assert two["rejudged"][0] == one["rejudged"][0]  # the first rejudge, as the first copy holds it
    assert two["rejudged"][0]["from"] == str(H100)
    assert two["rejudged"][0]["data_snapshot_before"] == orig["data_snapshot"]
    assert two["rejudged"][1]["from"] == str(first)
    assert two["rejudged"][1]["data_snapshot_before"] == one["data_snapshot"]


def test_a_defect_not_measured_in_the_run_is_named_on_the_first_screen(tmp_path):
    """The stored H100 stacked-lstm run predates the end-synced figure d003-no-final-sync needs: judged
    again, its three suspicious forward rows are neither 'explained' nor 'unexplained'."""
    src = REPO / "docs" / "gpu-run" / "20261126T180107Z-stacked-lstm-2019"
    p = _report(str(src), "--rejudge", str(tmp_path / "again"))
    assert p.returncode == 0, p.stderr
    head = (tmp_path / "again" / "report.md").read_text().split("| | |")[0]
    assert "3 suspicious (003-L428, 003-L429, 003-L430" in head
    assert "3 d003-no-final-sync may explain (not decided in this run)" in head
