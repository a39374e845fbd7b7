"""scripts/bench_rerun_coverage.py: does run B's median fall inside run A's interval, and the file the
report quotes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import validate
from reprokit.analysis import run_health

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / "tests" / "data" / "runs"


def test_compare_two_stored_runs_counts_medians_inside(tmp_path):
    out = tmp_path / "rc.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"), "--compare",
                           str(RUNS / "cpu-a"), str(RUNS / "cpu-b"), "--write", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert validate.errors("rerun_coverage", doc) == []
    assert len(doc["measurements"]) == 1
    s = doc["measurements"][0]["summary"]
    # cpu-b redraws every metric from cpu-a's distributions except cudnn train, moved by +25 %
    assert s["pairs"] == 9 and 0 < s["inside"] < s["pairs"]
    assert s["coverage"] == pytest.approx(s["inside"] / 9)
    assert s["shift_max"] == pytest.approx(0.25, abs=0.02)
    out_lines = [line for line in proc.stdout.splitlines() if line.startswith("OUT")]
    assert any("cudnn_lstm" in line and "train_time_per_example" in line for line in out_lines)
    assert doc["measurements"][0]["machine"] == "AMD Zen 3 (family 25 model 1), 8 cores"
    # a second measurement of the same kind replaces the first; the file stays valid
    again = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"), "--compare",
                            str(RUNS / "cpu-b"), str(RUNS / "cpu-a"), "--write", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    doc = json.loads(out.read_text())
    assert len(doc["measurements"]) == 1 and doc["measurements"][0]["runs"] == ["cpu-b", "cpu-a"]


def test_the_packaged_measurement_is_valid_and_quoted():
    path = REPO / "reprokit" / "data" / "rerun_coverage.json"
    if not path.exists():
        assert run_health.rerun_coverage() is None
        return
    doc = json.loads(path.read_text())
    assert validate.errors("rerun_coverage", doc) == []
    for m in doc["measurements"]:
        quoted = run_health.rerun_coverage(m["summary"]["processes"])
        assert f"{m['summary']['inside']} of {m['summary']['pairs']}" in quoted["text"]
        assert m["command"] in quoted["text"] and m["date"] in quoted["text"]
