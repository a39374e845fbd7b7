"""Source 000 workloads (bench/workloads/s000_{pytorch,tensorflow,theano}.py) through the real
harness, one `harness.py JOB --cell ID` process per cell, tiny shapes; plus the bench/ syntax gate
and the FTZ/DAZ helper."""

import ast
import glob
import json
import os
import platform
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH / "workloads"))
import _lstm000  # noqa: E402  (bench helper, stdlib only)

METRICS = ["compile_time", "forward_time_per_example", "train_time_per_example"]
TINY = {"batch": 4, "seq_len": 5, "hidden": 8, "layers": 1,
        "published_iterations": {"forward_time_per_example": 1000, "train_time_per_example": 1000}}
THEANO_FLAGS = "blas.ldflags=,floatX=float32,device=cpu"


def _cell(cell_id, workload, variant, params=None):
    return {"id": cell_id, "source": "000", "workload": workload, "variant": variant,
            "params": dict(TINY, **(params or {})), "metrics": METRICS, "protocol": "budget",
            "budget": {"min_samples": 3, "max_samples": 50, "time_budget_s": 0, "warmup": 0}}


def _run_cells(tmp, python, cells, env=None, timeout=600):
    """One job file, then one `harness.py JOB --cell ID` process per cell (as the local runner
    does), started together to save wall time."""
    out_dir = tmp / "cells"
    job = {"schema_version": 1, "run_id": "test-000", "stack": "test", "kit": {"version": "test"},
           "out_dir": str(out_dir), "device": "cpu", "cells": cells}
    path = tmp / "job.json"
    path.write_text(json.dumps(job))
    procs = {}
    for cell in cells:
        procs[cell["id"]] = subprocess.Popen(
            [python, str(BENCH / "harness.py"), str(path), "--cell", cell["id"]],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(BENCH),
            env=dict(os.environ, **(env or {})))
    results = {}
    for cell_id, proc in procs.items():
        try:
            log, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            log, _ = proc.communicate()
        result_file = out_dir / (cell_id.replace("/", "__") + ".json")
        assert result_file.exists(), log[-3000:]
        r = json.loads(result_file.read_text())
        r["_returncode"] = proc.returncode
        results[cell_id] = r
    return results


def _check_ok(r, framework):
    assert r["status"] == "ok", r.get("traceback") or r.get("reason")
    assert r["_returncode"] == 0
    m = r["metrics"]
    assert sorted(m) == sorted(METRICS)
    c = m["compile_time"]
    assert c["unit"] == "s" and c["stop_reason"] == "single"
    assert c["samples"] == c["raw_seconds"] and c["samples"][0] > 0
    for name in ("forward_time_per_example", "train_time_per_example"):
        t = m[name]
        assert t["unit"] == "ms" and t["items_per_sample"] == TINY["batch"]
        assert len(t["samples"]) >= 3 and len(t["raw_seconds"]) == len(t["samples"])
        assert all(v > 0 for v in t["samples"])
        assert t["derivation"] == "1000 * seconds / %d" % TINY["batch"]
        assert t["samples"] == pytest.approx([1000.0 * s / TINY["batch"] for s in t["raw_seconds"]])
        assert t["method"]
    impl = r["implementation"]
    assert impl["framework"] == framework and impl["framework_version"] and impl["api"]
    notes = " ".join(impl["notes"])
    assert "subnormal" in notes and "source 000 workload" in notes
    # the compile timer is exactly the sum of its recorded phases
    parts = r["extra"]["compile_breakdown_s"]
    timed = {k: v for k, v in parts.items() if not k.startswith("excluded")}
    assert sum(timed.values()) == pytest.approx(c["raw_seconds"][0], rel=1e-6, abs=1e-6)
    fl = r["extra"]["train_first_vs_later"]
    assert fl["first_step_ms_per_example"] > 0
    assert fl["later_median_ms_per_example"] in m["train_time_per_example"]["samples"]
    numerics = r["extra"]["numerics"]
    assert all(v == v for v in numerics.values() if isinstance(v, float))  # no NaN


# ---- syntax gate -------------------------------------------------------------------------------

def test_every_bench_file_parses_as_python_3_5():
    files = sorted(glob.glob(str(BENCH / "**" / "*.py"), recursive=True))
    assert any(f.endswith("s000_theano.py") for f in files)
    for f in files:
        ast.parse(Path(f).read_text(), filename=f, feature_version=(3, 5))
    with pytest.raises(SyntaxError):  # the gate can fail
        ast.parse('x = f"{1}"', feature_version=(3, 5))


# ---- helper: FTZ/DAZ through glibc ---------------------------------------------------------------

@pytest.mark.skipif(platform.system() != "Linux" or platform.machine() != "x86_64",
                    reason="MXCSR via glibc fenv exists on x86-64 Linux only")
def test_ftz_daz_set_and_restore():
    tiny = struct.unpack("<d", struct.pack("<Q", 1))[0]  # smallest subnormal double
    prev, text = _lstm000.ftz_daz_set(True)
    try:
        assert prev is not None and "FTZ+DAZ on" in text, text
        assert tiny * 1.0 == 0.0
    finally:
        _lstm000.mxcsr_restore(prev)
    assert tiny * 1.0 == tiny
    assert _lstm000.mxcsr_get() == prev


def test_preallocated_input_count():
    assert _lstm000.pick_preallocated(4 * 30 * 128 * 512) == 34       # 7.9 MB each, 256 MiB cap
    assert _lstm000.pick_preallocated(4 * 100 * 128 * 1024) == 5      # 52 MB each
    assert _lstm000.pick_preallocated(4 * 5 * 4 * 8) == 100           # the original's count
    assert _lstm000.pick_preallocated(10 ** 12) == 2


# ---- PyTorch -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def torch_results(tmp_path_factory):
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("s000-torch")
    cells = [_cell("000/pytorch/nn_lstm/tiny", "s000_pytorch", "nn_lstm"),
             _cell("000/pytorch/nn_lstm/noftz", "s000_pytorch", "nn_lstm",
                   {"flush_denormal": False}),
             _cell("000/pytorch/nn_lstm/two-layers", "s000_pytorch", "nn_lstm", {"layers": 2})]
    return _run_cells(tmp, sys.executable, cells)


def test_pytorch_cell(torch_results):
    r = torch_results["000/pytorch/nn_lstm/tiny"]
    _check_ok(r, "torch")
    assert r["extra"]["flush_denormal"] == {"requested": True, "active": True,
                                            "how": "torch.set_flush_denormal"}
    assert r["extra"]["compile_breakdown_s"]["excluded_lazy_imports"] >= 0
    n = r["extra"]["numerics"]
    assert n["loss_first_train_step"] > 0 and n["loss_after_timed_train"] > 0


def test_pytorch_without_flush_is_recorded(torch_results):
    r = torch_results["000/pytorch/nn_lstm/noftz"]
    _check_ok(r, "torch")
    assert r["extra"]["flush_denormal"]["active"] is False
    assert any("NOT flushed" in n for n in r["implementation"]["notes"])


def test_pytorch_rejects_more_layers(torch_results):
    r = torch_results["000/pytorch/nn_lstm/two-layers"]
    assert r["status"] == "failed" and "single-layer" in r["reason"]


# ---- TensorFlow --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tf_results(tmp_path_factory):
    pytest.importorskip("tensorflow")
    tmp = tmp_path_factory.mktemp("s000-tf")
    cells = [_cell("000/tensorflow/%s/tiny" % v, "s000_tensorflow", v)
             for v in ("basic_lstm", "fused_lstm", "cudnn_lstm")]
    cells.append(_cell("000/tensorflow/nope/tiny", "s000_tensorflow", "nope"))
    return _run_cells(tmp, sys.executable, cells, env={"TF_CPP_MIN_LOG_LEVEL": "2"})


@pytest.mark.parametrize("variant, original", [
    ("basic_lstm", "BasicLSTMCell"), ("fused_lstm", "LSTMBlockFusedCell"),
    ("cudnn_lstm", "CudnnLSTM")])
def test_tensorflow_variant(tf_results, variant, original):
    import tensorflow as tf

    r = tf_results["000/tensorflow/%s/tiny" % variant]
    _check_ok(r, "tensorflow")
    impl = r["implementation"]
    assert "GradientDescentOptimizer(0.01)" in impl["api"]
    if not hasattr(tf, "contrib"):  # TF 2.x: every tf.contrib class is a recorded substitute
        subs = impl["substitutes"]
        assert any(original in s["original"] and s["used"] and s["why"] for s in subs), subs
        assert any("tf.compat.v1" in s["used"] for s in subs)
    parts = r["extra"]["compile_breakdown_s"]
    assert set(parts) == {"loss_and_minimize", "session_creation", "variable_init",
                          "first_train_step"}
    assert r["extra"]["preallocated_inputs"] == 100  # tiny inputs: the original's count fits
    assert r["extra"]["numerics"]["cost_after_timed_train"] > 0


def test_tensorflow_fused_is_the_block_lstm_kernel(tf_results):
    import tensorflow as tf

    if hasattr(tf, "contrib"):
        pytest.skip("TF 1.x runs tf.contrib.rnn.LSTMBlockFusedCell itself")
    assert "BlockLSTM" in tf_results["000/tensorflow/fused_lstm/tiny"]["implementation"]["api"]


def test_tensorflow_cudnn_on_cpu_is_a_labelled_substitute(tf_results):
    impl = tf_results["000/tensorflow/cudnn_lstm/tiny"]["implementation"]
    sub = [s for s in impl["substitutes"] if "CudnnLSTM" in s["original"]][0]
    assert "LSTM layer on CPU" in sub["used"] and "no CPU kernel" in sub["why"]


def test_tensorflow_unknown_variant_fails_clearly(tf_results):
    r = tf_results["000/tensorflow/nope/tiny"]
    assert r["status"] == "failed" and "unknown variant 'nope'" in r["reason"]
    assert r["metrics"] == {}


# ---- Theano (its own venv: numpy < 2) -----------------------------------------------------------

@pytest.fixture(scope="module")
def theano_results(tmp_path_factory, theano_python):
    python = theano_python
    tmp = tmp_path_factory.mktemp("s000-theano")
    cells = [_cell("000/theano/fastlstm/tiny", "s000_theano", "fastlstm")]
    return _run_cells(tmp, python, cells, env={"THEANO_FLAGS": THEANO_FLAGS}, timeout=1800)


@pytest.mark.slow  # compiles C with g++ when Theano's compile cache is cold (minutes)
def test_theano_cell(theano_results):
    r = theano_results["000/theano/fastlstm/tiny"]
    _check_ok(r, "theano")
    extra = r["extra"]
    assert set(extra["compile_breakdown_s"]) == {
        "graph_construction", "compile_forward_function", "compile_train_function",
        "first_train_call"}
    cache = extra["theano_compiledir"]
    assert cache["before"]["path"] and cache["verdict"]
    assert cache["verdict"].split()[0] in ("cold", "warm", "partly")
    assert "Theano compile cache" in r["metrics"]["compile_time"]["method"]
    state = r["metrics"]["compile_time"]["state"]  # what the compile started from, for the claims
    assert state in ("Theano compile cache cold", "Theano compile cache warm",
                     "Theano compile cache partly cold")
    assert state == "Theano compile cache " + cache["verdict"].split(" (")[0]
    assert extra["scan_driver"]["driver"] in ("cython", "python")
    if extra["scan_driver"]["driver"] == "python":
        assert any("scan" in s["original"] for s in r["implementation"]["substitutes"])
    if platform.machine() == "x86_64":
        assert "FTZ+DAZ on" in extra["flush_denormal"]["how"]
    n = extra["numerics"]
    assert 0 < n["cost_after_timed_train"] < 1  # MEAN squared error of values in [0, 1)
