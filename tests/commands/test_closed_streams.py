"""The command line's own streams: a reader that goes away ends the printing, never the work, and the
top level's --debug may stand before the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import cli

REPO = Path(__file__).resolve().parents[2]


def test_debug_before_the_command_is_the_commands_flag(capsys):
    assert cli.main(["--debug", "list"]) == 0
    out = capsys.readouterr().out
    assert "legacy-2017" in out and "smoke" in out


def test_debug_before_a_run_option_still_means_run():
    argv = ["--debug", "--suite", "nosuchsuite"]
    assert cli.main(argv) == 2  # parsed as `run --debug --suite nosuchsuite`: a user error


def test_a_run_whose_reader_closes_the_pipe_finishes(tmp_path):
    """`run ... 2>&1 | head -1`: head exits after the first line; the run still measures its cell,
    writes run.json and the report, and exits 0 (it used to die on the broken pipe with run.json
    pending and no report)."""
    results = tmp_path / "results"
    cmd = (f"{sys.executable} {REPO / 'reproduce.py'} --suite smoke --quick "
           f"--cells 'smoke/python/*' --runner local --results {results} 2>&1 | head -1; "
           "exit ${PIPESTATUS[0]}")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(p.stdout.splitlines()) == 1
    (run_dir,) = [d for d in results.iterdir() if d.is_dir()]
    run = json.loads((run_dir / "run.json").read_text())
    assert [c["status"] for c in run["cells"]] == ["ok"]
    assert (run_dir / "report.md").is_file() and (run_dir / "report.html").is_file()


def test_a_closed_reader_of_a_listing_is_exit_zero():
    cmd = (f"{sys.executable} {REPO / 'reproduce.py'} list --suite legacy-2017 | head -1; "
           "exit ${PIPESTATUS[0]}")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


@pytest.mark.parametrize("runner", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_device_auto_says_why_it_chose_the_cpu_whatever_the_runner(runner, tmp_path, request):
    """On a host without a GPU, `--device auto` says why it is the CPU, for the Docker runner too
    (it said only 'device: cpu' when the Docker runner was chosen)."""
    from reprokit.probes import fingerprint

    if fingerprint.nvml_gpus()[0]:
        pytest.skip("this host has a GPU: --device auto picks it (tests/plan/test_probes.py covers that)")
    if runner == "docker":
        request.getfixturevalue("smoke_image")  # built, or the test is skipped: no engine answers
    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "--suite", "smoke", "--quick",
                        "--cells", "smoke/python/*", "--runner", runner, "--results",
                        str(tmp_path / runner), "--no-report"], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stderr.splitlines() if ln.startswith("runner:"))
    assert f"runner: {runner}" in line and "device: cpu (--device auto:" in line and "no GPU" in line, line
