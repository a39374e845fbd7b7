"""The 2017 stacks' candidate environments (reprokit/data/stacks.yaml local.candidates) run the
source workloads for real where the machine provides their interpreter: TensorFlow 1.2.1 (source 000,
the original tf.contrib classes) and PyTorch 1.0.0 (source 001) on Python 3.6. Each environment is
the one the local runner would choose, created once and cached; a test is skipped only where no
candidate works (a machine without Python 3.6), and then the runner uses the stand-in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprokit.analysis import standins
from reprokit.catalog import suites
from reprokit.runners import venvs
from reprokit.runners.base import StackUnavailable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_workloads_000 as w000  # noqa: E402  (its harness helpers)


def _env(stack: str) -> venvs.Environment:
    try:
        env = venvs.environment_for(stack, suites.load_stacks()[stack], say=lambda *_: None)
    except StackUnavailable as e:
        pytest.skip(f"{stack}: {e}")
    if env.chosen["fallback"]:
        pytest.skip(f"no candidate of {stack} works here: {env.chosen.get('why')}")
    return env


@pytest.fixture(scope="module")
def tf1_results(tmp_path_factory):
    env = _env("tf-1.2")
    cells = [w000._cell(f"000/tensorflow/{v}/tiny", "s000_tensorflow", v)
             for v in ("basic_lstm", "fused_lstm", "cudnn_lstm")]
    return env, w000._run_cells(tmp_path_factory.mktemp("tf1"), env.python, cells, env=env.env_vars)


@pytest.mark.parametrize("variant", ["basic_lstm", "fused_lstm"])
def test_tensorflow_1_2_1_runs_the_original_contrib_cells(tf1_results, variant):
    env, res = tf1_results
    assert env.chosen["candidate"] == "tensorflow-1.2.1-py3.6"
    r = res[f"000/tensorflow/{variant}/tiny"]
    assert r["status"] == "ok", r.get("traceback") or r.get("reason")
    impl = r["implementation"]
    assert impl["framework_version"] == "1.2.1"
    assert impl["api"].startswith("tf.contrib.rnn.")
    assert not [s for s in impl["substitutes"] if standins.classify(s)["mechanism"]]
    assert r["stack_fingerprint"]["python"]["version"].startswith("3.6.")


def test_tensorflow_1_2_1_cudnn_cell_runs_a_named_cpu_stand_in(tf1_results):
    """No cuDNN on a CPU: the cell runs TF 1.2's fused CPU LSTM op and records it as a mechanism
    stand-in (no verdict), instead of failing as the TF 1.x path did before."""
    _, res = tf1_results
    r = res["000/tensorflow/cudnn_lstm/tiny"]
    assert r["status"] == "ok", r.get("traceback") or r.get("reason")
    mech = [standins.classify(s) for s in r["implementation"]["substitutes"]]
    assert [m["id"] for m in mech if m["mechanism"]] == ["cudnn-lstm-as-keras-cpu"]
    assert "LSTMBlockFusedCell" in r["implementation"]["substitutes"][0]["used"]


def test_pytorch_1_0_0_runs_source_001(tmp_path):
    env = _env("torch-0.1")
    assert env.chosen["candidate"] == "torch-1.0.0-py3.6"
    import test_workloads_001 as w001
    cell = w001._cell("001/pytorch/tiny", w001.TINY)
    res = w000._run_cells(tmp_path, env.python, [cell], env=env.env_vars)
    r = res["001/pytorch/tiny"]
    assert r["status"] == "ok", r.get("traceback") or r.get("reason")
    assert r["implementation"]["framework_version"].startswith("1.0.0")
    assert r["stack_fingerprint"]["python"]["version"].startswith("3.6.")
    assert {s["used"] for s in env.substitutes} == {
        "PyTorch 1.0.0 (PyPI's CUDA 9.0 build, run on the CPU) on Python 3.6"}
