"""Six tests once passed or skipped vacuously. scripts/plant_test_faults.py runs each in a
copy of the tree, unchanged (it must pass) and with the fault it exists to catch planted (it must fail);
this test keeps that true."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import docker_client


@pytest.mark.docker  # the control run of the data command's Docker test uses the engine
def test_six_once_vacuous_tests_pass_unchanged_and_fail_on_their_planted_fault(repo):
    docker_client()  # skipped only where no engine answers (CI starts one)
    p = subprocess.run([sys.executable, str(repo / "scripts" / "plant_test_faults.py")], cwd=repo,
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "6 of 6 tests pass unchanged and fail on their planted fault" in p.stdout
