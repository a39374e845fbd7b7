"""reprokit/runners/venvs.py: a stack's candidate environments are tried in order, the first that installs and
passes its check wins, every attempt is kept with its error, and a machine without the interpreters
falls back to the stand-in and says why. Real interpreters, real venvs and real checks; the test
candidates have no requirements (a venv without pip: nothing is downloaded), the stacks' own
candidates are installed by the last test and by tests/stacks/test_workloads_002.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from reprokit import formats, validate
from reprokit.catalog import suites
from reprokit.runners import venvs as envs  # `venvs` is the fixture below

HOST = "%d.%d" % sys.version_info[:2]
REPO = Path(__file__).resolve().parents[2]


def _spec(candidates: list[dict], env: str = "host") -> dict:
    return {"framework": "python", "era": "none", "original": {"source": "test"}, "image": "smoke-python",
            "local": {"env": env, "requirements": [], "env_vars": {"REPROKIT_TEST_BASE": "base"},
                      "substitutes": [{"original": "o", "used": "stand-in", "why": "fallback"}],
                      "candidates": candidates}}


def _cand(cid: str, python: str, check: str, **kw) -> dict:
    return {"id": cid, "python": python, "requirements": [], "check": check,
            "substitutes": [{"original": "o", "used": cid, "why": "test"}], "source": "test", **kw}


@pytest.fixture
def venvs(tmp_path, monkeypatch):
    monkeypatch.setenv("REPROKIT_VENV_DIR", str(tmp_path / "venvs"))
    monkeypatch.setenv(f"REPROKIT_PYTHON_{HOST.replace('.', '_')}", sys.executable)
    monkeypatch.delenv("REPROKIT_STAND_INS", raising=False)
    monkeypatch.delenv("REPROKIT_RETRY_ENVS", raising=False)
    return tmp_path / "venvs"


def test_the_first_candidate_that_installs_and_passes_its_check_wins(venvs):
    spec = _spec([
        _cand("absent", "2.0", "pass"),
        _cand("fails-check", HOST, "import os; raise SystemExit('no compiled loop: ' + os.environ['X'])",
              env_vars={"X": "from the candidate"}),
        _cand("works", HOST, "import os; print('ok', os.environ['REPROKIT_TEST_BASE'])",
              env_vars={"Y": "1"}),
        _cand("never-tried", HOST, "pass"),
    ])
    env = envs.environment_for("t", spec, say=lambda *_: None)
    assert env.chosen["candidate"] == "works" and env.chosen["fallback"] is False
    assert env.chosen["python"].startswith(HOST + ".")
    assert Path(env.python).parent.parent.parent == venvs and Path(env.python).exists()
    assert env.env_vars == {"REPROKIT_TEST_BASE": "base", "Y": "1"}
    assert env.substitutes == [{"original": "o", "used": "works", "why": "test"}]
    got = [(a["candidate"], a["outcome"]) for a in env.attempts]
    assert got == [("absent", "no-interpreter"), ("fails-check", "check-failed"), ("works", "ok")]
    absent, failed, ok = env.attempts
    assert "no Python 2.0 here" in absent["error"] and absent["interpreter"] is None
    assert failed["error"] == "SystemExit: no compiled loop: from the candidate" or \
        failed["error"].endswith("no compiled loop: from the candidate")
    assert ok["check_output"] == "ok base" and ok["error"] is None
    for a in env.attempts:  # every attempt is what the cell result schema accepts
        assert a["date"].endswith("Z") and a["requirements"] == []
    validate.check("cell_result", _cell_with(env.record()), "test")


def _cell_with(environment: dict) -> dict:
    cell = json.loads(next((REPO / "tests" / "data" / "runs").glob("*/cells/*.json")).read_text())
    return {**formats.upgrade("cell_result", cell, "a stored cell"), "environment": environment}


def test_a_failed_check_is_remembered_until_asked_to_retry(venvs, monkeypatch):
    spec = _spec([_cand("fails", HOST, "raise SystemExit(3)")])
    first = envs.environment_for("t", spec, say=lambda *_: None)
    assert first.attempts[0]["outcome"] == "check-failed" and not first.attempts[0]["cached"]
    again = envs.environment_for("t", spec, say=lambda *_: None)
    assert again.attempts[0]["cached"] is True and "REPROKIT_RETRY_ENVS=1" in again.attempts[0]["error"]
    monkeypatch.setenv("REPROKIT_RETRY_ENVS", "1")
    third = envs.environment_for("t", spec, say=lambda *_: None)
    assert third.attempts[0]["cached"] is False


def test_without_the_interpreters_the_stand_in_runs_and_says_why(venvs, tmp_path, monkeypatch):
    """A user's machine without pyenv or python3.6 on PATH: every candidate is recorded as
    no-interpreter, and the stack falls back to its stand-in (here the host interpreter)."""
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("REPROKIT_PYTHON_3_6", raising=False)
    monkeypatch.delenv("REPROKIT_PYTHON_3_9", raising=False)
    stacks = suites.load_stacks()
    spec = stacks["theano-0.9"]
    host_spec = {**spec, "local": {**spec["local"], "env": "host"}}  # no venv build in this test
    lines: list[str] = []
    env = envs.environment_for("theano-0.9", host_spec, say=lines.append)
    assert env.python == sys.executable and env.chosen["fallback"] is True
    assert [a["outcome"] for a in env.attempts] == ["no-interpreter"] * len(spec["local"]["candidates"])
    assert "no Python 3.6 here" in env.chosen["why"] and "no Python 3.9 here" in env.chosen["why"]
    assert env.substitutes == spec["local"]["substitutes"]
    assert any("falls back to its stand-in" in line for line in lines)


def test_stand_ins_only_when_asked(venvs, monkeypatch):
    monkeypatch.setenv("REPROKIT_STAND_INS", "1")
    env = envs.environment_for("t", _spec([_cand("works", HOST, "pass")]), say=lambda *_: None)
    assert env.chosen["fallback"] is True and env.attempts == []
    assert "REPROKIT_STAND_INS=1" in env.chosen["why"]


def test_a_compiler_error_is_named_in_the_attempts_error_line():
    folded = ("Exception: Compilation failed (return status=1): In file included from "
              + "/x/include/python3.9/Python.h:93,.   from /c/scan_perform/mod.cpp:4:. " * 8 +
              "/c/scan_perform/mod.cpp:1234:56: error: 'PyThreadState' has no member named "
              "'exc_type'. more")
    line = envs._last_line("Traceback (most recent call last):\n" + folded, "x")
    assert line.startswith("Exception: Compilation failed") and \
        line.endswith("mod.cpp:1234:56: error: 'PyThreadState' has no member named 'exc_type'")


def test_recorded_attempts_match_the_candidates_and_their_schema():
    """reprokit/data/stack_attempts.yaml holds a real attempt of every candidate of every stack."""
    doc = yaml.safe_load((REPO / "reprokit" / "data" / "stack_attempts.yaml").read_text())
    validate.check("stack_attempts", doc, "reprokit/data/stack_attempts.yaml")
    recorded = {(a["stack"], a["candidate"]) for a in doc["attempts"] if a["how"] == "envs"}
    for name, spec in suites.load_stacks().items():
        for cand in spec["local"].get("candidates", []):
            assert (name, cand["id"]) in recorded, (name, cand["id"])
    for a in doc["attempts"]:
        assert (a["outcome"] == "ok") == (a["error"] is None), a


@pytest.mark.skipif(not (Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions").is_dir(),
                    reason="no pyenv interpreters on this machine")
def test_the_project_machine_runs_theano_0_9_0_with_its_compiled_scan():
    """On the project machines (pyenv 3.6 exists) the theano-0.9 stack is the original Theano 0.9.0
    with numpy 1.12.1, and its check imported the compiled scan loop."""
    env = envs.environment_for("theano-0.9", suites.load_stacks()["theano-0.9"], say=lambda *_: None)
    assert env.chosen["candidate"] == "theano-0.9.0-py3.6", env.chosen
    assert env.attempts[-1]["check_output"].startswith("theano 0.9.0 numpy 1.12.1 compiled scan_perform")


def test_the_report_shows_the_environment_and_the_scan_loop(tmp_path):
    """A stack's section in the report names the environment that ran it, every candidate tried
    (with its error) and, for Theano, which scan loop ran."""
    import shutil

    from reprokit import results
    from reprokit.report import report

    dst = tmp_path / "run"
    shutil.copytree(REPO / "tests" / "data" / "runs" / "cpu-a", dst)
    path = dst / "cells" / "000__tensorflow__basic_lstm__b128-s30-h512.json"
    cell = json.loads(path.read_text())
    cell["environment"] = {
        "chosen": {"candidate": "tensorflow-1.2.1-py3.6", "python": "3.6.15", "fallback": False,
                   "interpreter": "/v/bin/python", "requirements": ["tensorflow==1.2.1"]},
        "attempts": [{"candidate": "tensorflow-1.2.1-py3.6", "python": "3.6", "requirements": ["x"],
                      "outcome": "ok", "error": None, "date": "2026-11-24T00:00:00Z"}]}
    cell["implementation"]["scan_loop"] = "compiled: Theano's Cython scan loop (test)"
    path.write_text(json.dumps(cell))
    paths = report.render(results.RunDir(dst))
    md = Path(paths["md"]).read_text() if isinstance(paths, dict) else (dst / "report.md").read_text()
    html = (dst / "report.html").read_text()
    for text in (md, html):
        assert "candidate tensorflow-1.2.1-py3.6 on Python 3.6.15 (tensorflow==1.2.1)" in text
        assert "tensorflow-1.2.1-py3.6 (Python 3.6): ok" in text
        assert "compiled: Theano&#39;s Cython scan loop (test)" in text or \
            "compiled: Theano's Cython scan loop (test)" in text


def test_the_slurm_local_launcher_takes_the_chosen_environment(venvs, tmp_path):
    """Slurm's local launcher runs the candidate's interpreter with the candidate's variables, and
    hands its substitutes and attempts back with the outcome (they were the stand-in's)."""
    from reprokit.runners.launchers import LocalLauncher

    spec = _spec([_cand("works", HOST, "pass", env_vars={"KERAS_BACKEND": "mxnet"})])
    launcher = LocalLauncher(say=lambda *_: None)
    prepared = launcher.prepare("t", spec, lambda *_: None)
    assert prepared["env"]["KERAS_BACKEND"] == "mxnet" and prepared["env"]["REPROKIT_TEST_BASE"] == "base"
    task = launcher.task(prepared, tmp_path / "job.json", "c", None, tmp_path)
    assert task["argv"][0] == prepared["python"] and Path(prepared["python"]).parent.parent.parent == venvs
    assert task["info"]["substitutes"] == [{"original": "o", "used": "works", "why": "test"}]
    assert task["info"]["environment"]["chosen"]["candidate"] == "works"


def test_a_second_creator_waits_for_the_first_to_finish(tmp_path):
    """venvs.one_creator (a real flock beside the environment): the second of two processes (here
    threads, each with its own open file) that need the same environment enters only after the first
    has left, so it finds the environment complete instead of building it over the first."""
    import threading
    import time

    path = tmp_path / "envs" / "stack-x"
    events: list[str] = []
    first_in = threading.Event()

    def first():
        with envs.one_creator(path):
            events.append("first in")
            first_in.set()
            time.sleep(0.5)
            events.append("first out")

    def second():
        first_in.wait(30)
        with envs.one_creator(path):
            events.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert events == ["first in", "first out", "second in"]
    assert (tmp_path / "envs" / "stack-x.lock").is_file()
