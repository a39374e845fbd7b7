"""scripts/gpu_session.sh, the one prepared script a lent GPU runs, rehearsed end to end on the CPU
(DEVICE=cpu): a GPU's few minutes must never be spent on an error this machine could have shown."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# a step's exit status that is not a script bug: done (0), a cell failed and the run says why (1),
# cut by its own time limit (124: SIGINT, the kit keeps what finished)
NOT_A_SCRIPT_BUG = {0, 1, 124}


@pytest.mark.slow
def test_the_gpu_session_script_runs_every_step_on_the_cpu(tmp_path):
    out, work = tmp_path / "out", tmp_path / "w"
    # a deadline with room for a loaded machine, and a short claims step: every step must run
    env = {**os.environ, "OUT": str(out), "W": str(work), "DEVICE": "cpu", "DEADLINE_S": "1000",
           "CLAIMS_S": "60", "PY": sys.executable, "WHEELS": str(tmp_path / "no-wheels")}
    p = subprocess.run(["bash", "scripts/gpu_session.sh"], cwd=str(REPO), env=env, capture_output=True,
                       text=True, timeout=1200)
    log = (out / "session.log").read_text()
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    steps = re.findall(r"^== (.+?): rc=(\d+) at t=", log, re.M)
    assert [name for name, _ in steps][:2] == ["pytest-gpu", "fingerprint"], log[-3000:]
    bad = [(name, int(rc)) for name, rc in steps if int(rc) not in NOT_A_SCRIPT_BUG]
    assert not bad, (bad, log[-6000:])
    assert "SKIPPED (no time left)" not in log, log[-3000:]  # every step had its time
    assert re.search(r"^== done at t=\d+s$", log, re.M), log[-3000:]
    facts = (out / "facts.txt").read_text()
    assert "cuda available False" in facts and "MISSING" not in facts, facts
    with tarfile.open(out / "results.tar.gz") as tar:
        names = tar.getnames()
    runs = {n.split("/")[1] for n in names if n.count("/") >= 2 and n.endswith("/run.json")}
    reports = {n.split("/")[1] for n in names if n.endswith("/report.html")}
    assert len(runs) >= 3 and reports == runs, (sorted(runs), sorted(reports))
