"""A program the kit does not control is read bounded and ended with everything it started (unbounded,
an "interpreter" given with `--python STACK=PATH` that printed without end was read into 4 GB; one that
ran `sleep 1000` left it running under PID 1 after the probe's timeout). Real processes throughout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from reprokit.runners import bounded, env_probe

REPO = Path(__file__).resolve().parents[2]


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def alive(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


def test_output_past_the_bound_stops_the_program(tmp_path):
    talker = script(tmp_path, "yes reprokit")
    t0 = time.monotonic()
    with pytest.raises(bounded.TooMuchOutput):
        bounded.run([str(talker)], timeout=60)
    assert time.monotonic() - t0 < 30


def test_a_timeout_ends_the_whole_process_group(tmp_path):
    marker = f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    hang = script(tmp_path, f"sleep {marker} &\nsleep {marker}")
    with pytest.raises(subprocess.TimeoutExpired):
        bounded.run([str(hang)], timeout=1)
    deadline = time.monotonic() + 10
    while alive(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(f"sleep {marker}")


def test_what_it_left_running_after_answering_is_ended_too(tmp_path):
    marker = f"{2000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    daemon = script(tmp_path, f"sleep {marker} &\necho answer")
    t0 = time.monotonic()
    got = bounded.run([str(daemon)], timeout=60)
    assert got.returncode == 0 and got.stdout.strip() == "answer"
    assert time.monotonic() - t0 < 30  # not held until the timeout by the child's open pipe
    time.sleep(0.2)
    assert not alive(f"sleep {marker}")


def test_the_environment_probe_says_what_a_talking_interpreter_did(tmp_path):
    talker = script(tmp_path, "yes reprokit")
    with pytest.raises(env_probe.ProbeError, match="printed more than"):
        env_probe._run(str(talker), "torch", None, 60)


def test_run_with_a_talking_interpreter_is_one_line_exit_2(tmp_path):
    talker = script(tmp_path, "yes reprokit")
    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "run", "--suite", "smoke", "--runner",
                        "local", "--python", f"smoke-python={talker}", "--results", str(tmp_path / "r")],
                       capture_output=True, text=True, timeout=300, cwd=REPO,
                       env={**os.environ, "REPROKIT_ENV_PROBE_DIR": str(tmp_path / "probes")})
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr
    assert lines and "printed more than" in lines[-1], p.stderr
