"""The order the test groups go to the pytest-xdist workers: heaviest first, from the seconds per
module that tools/record_test_seconds.py read from a real pytest log (tests/data/module_seconds.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import record_test_seconds  # noqa: E402

LOG = """\
============================== slowest durations ===============================
492.86s setup    tests/stacks/test_workloads_000.py::test_theano[000/theano/fastlstm/tiny]@tests/stacks/x.py
241.56s call     tests/run/test_sequential.py::test_a_deciding_pair@tests/run/test_sequential.py
7.57s call     tests/stacks/test_workloads_000.py::test_a_tensorflow_cell@tests/stacks/test_workloads_000.py
0.01s teardown tests/core/test_fuzz.py::test_stored_finding_is_fixed[data_yaml/crash-84636a8c]@tests/core/x.py
=========== 2719 passed, 30 skipped, 31 warnings in 2190.62s (0:36:30) ===========
"""


def test_the_log_is_summed_per_module():
    assert record_test_seconds.module_seconds(LOG) == {
        "tests/core/test_fuzz.py": 0.0, "tests/run/test_sequential.py": 241.6,
        "tests/stacks/test_workloads_000.py": 500.4}


def test_a_log_without_durations_is_one_line_and_exit_2(tmp_path):
    log = tmp_path / "log"
    log.write_text("== 3 passed in 1.0s ==\n")
    p = subprocess.run([sys.executable, str(REPO / "tools" / "record_test_seconds.py"), str(log),
                        "--command", "c", "--machine", "m", "--load", "l"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--durations=0" in p.stderr


def test_the_recorded_modules_exist_and_the_heaviest_group_is_collected_first():
    doc = json.loads((REPO / "tests" / "data" / "module_seconds.json").read_text())
    gone = [m for m in doc["seconds"] if not (REPO / m).is_file()]
    assert not gone, f"{gone}: renamed or removed; run tools/record_test_seconds.py again"
    assert set(doc["measured"]) == {"command", "date", "machine", "load"}
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist",
                        "-p", "no:cacheprovider", "tests/core/test_test_order.py", "tests/core/test_fuzz.py",
                        "tests/core/test_files.py"], cwd=REPO, capture_output=True, text=True)
    modules = list(dict.fromkeys(line.split("::")[0] for line in p.stdout.splitlines() if "::" in line))
    by_cost = sorted(modules, key=lambda m: -doc["seconds"].get(m, 0.0))
    assert modules == by_cost and len(modules) == 3, p.stdout[-2000:]
