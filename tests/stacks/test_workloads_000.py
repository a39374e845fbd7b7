"""Source 000 workloads (bench/workloads/s000_{pytorch,tensorflow,theano,jax}.py) through the real
harness, one `harness.py JOB --cell ID` process per cell, tiny shapes; plus the bench/ syntax gate
and the FTZ/DAZ helper. Every timed metric of a cell that ran records an ok real-work check
(bench/real_work.py): forward = the last timed output's digest against the same step run
untimed, train = the weights digest moved over the timed steps."""

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

from reprokit.plan.plan import bench_facts

ROOT = Path(__file__).resolve().parents[2]
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
           "out_dir": str(out_dir), "facts": bench_facts(), "device": "cpu", "cells": cells}
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


def _check_ok(r, framework, metrics=METRICS, still=None):
    assert r["status"] == "ok", r.get("traceback") or r.get("reason")
    assert r["_returncode"] == 0
    m = r["metrics"]
    assert sorted(m) == sorted(metrics)
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
    timed = {k: v for k, v in parts.items() if "excluded" not in k}  # s000_jax: compile_forward_excluded
    assert sum(timed.values()) == pytest.approx(c["raw_seconds"][0], rel=1e-6, abs=1e-6)
    fl = r["extra"]["train_first_vs_later"]
    assert fl["first_step_ms_per_example"] > 0
    assert fl["later_median_ms_per_example"] in m["train_time_per_example"]["samples"]
    numerics = r["extra"]["numerics"]
    assert all(v == v for v in numerics.values() if isinstance(v, float))  # no NaN
    _check_real_work(r, still)


def _check_real_work(r, still=None):
    """Every timed metric records an ok real-work check of its phase: forward, the last
    timed output's digest equal (within tolerance) to the same step's untimed reference; train, the
    weights digest (each part of it) moved over the timed steps, or, where `still` names a published
    defect that keeps the weights from training, stayed still as that defect says."""
    m = r["metrics"]
    timed = [name for name, t in m.items() if t["raw_seconds"] and t["stop_reason"] != "single"]
    assert sorted(timed) == ["forward_time_per_example", "train_time_per_example"], timed
    fwd = m["forward_time_per_example"]["real_work"]
    assert fwd["ok"] and fwd["phase"] == "forward" and fwd["reason"] is None, fwd
    (c,) = fwd["checks"]
    assert c["ok"] and c["timed"] > 0 and c["timed"] == pytest.approx(c["reference"], rel=c["rel_tol"])
    train = m["train_time_per_example"]["real_work"]
    assert train["ok"] and train["phase"] == "train" and train["reason"] is None, train
    assert train["checks"] and all(c["ok"] for c in train["checks"]), train
    for c in train["checks"]:
        assert c.get("expected_still") == still, c
        if still:
            assert c["before"] == c["after"] and still in c["seen"], c
        else:
            assert c["before"] != c["after"], c
    return fwd, train


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
             for v in ("basic_lstm", "fused_lstm", "cudnn_lstm", "basic_lstm_fixed",
                       "fused_lstm_fixed", "cudnn_lstm_fixed")]
    cells.append(_cell("000/tensorflow/nope/tiny", "s000_tensorflow", "nope"))
    cells += [_cell("000/tensorflow/%s/saturated" % v, "s000_tensorflow", v, SATURATED)
              for v in ("cudnn_lstm", "cudnn_lstm_fixed")]
    return _run_cells(tmp, sys.executable, cells, env={"TF_CPP_MIN_LOG_LEVEL": "2"})


# every weight one (d000-cudnn-ones): at 20 steps of 32 units every gate saturates in float32, as at
# the published shapes (b128, s30+, h512+), and the gradient is exactly zero; at TINY it is not
SATURATED = {"seq_len": 20, "hidden": 32}


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


@pytest.mark.parametrize("variant", ["basic_lstm", "fused_lstm", "cudnn_lstm"])
def test_tensorflow_fixed_variant_keeps_data_on_the_device(tf_results, variant):
    """Defect d000-tf-transfers corrected: the same network and data (same picks, same updates, so
    the same cost afterwards), with the inputs uploaded once and only an index fed per iteration."""
    pub = tf_results["000/tensorflow/%s/tiny" % variant]
    fixed = tf_results["000/tensorflow/%s_fixed/tiny" % variant]
    _check_ok(fixed, "tensorflow")
    mib = 4.0 * TINY["seq_len"] * TINY["batch"] * TINY["hidden"] / 1e6
    assert pub["extra"]["transfers_per_iteration_mb"] == {
        "host_to_device": mib, "forward_device_to_host": mib, "train_device_to_host": 0.0}
    assert fixed["extra"]["transfers_per_iteration_mb"] == {
        "host_to_device": 0.0, "forward_device_to_host": 4.0 * TINY["batch"] * TINY["hidden"] / 1e6,
        "train_device_to_host": 0.0}
    assert "input_upload_to_device" in fixed["extra"]["compile_breakdown_s"]
    assert "device variable" in fixed["metrics"]["forward_time_per_example"]["method"]
    assert "FULL output sequence" in pub["metrics"]["forward_time_per_example"]["method"]
    notes = " ".join(fixed["implementation"]["notes"])
    assert "corrected variant" in notes and "AS PUBLISHED" not in notes
    assert "AS PUBLISHED (defect d000-tf-transfers)" in " ".join(pub["implementation"]["notes"])
    n_pub, n_fixed = pub["extra"]["numerics"], fixed["extra"]["numerics"]
    if len(pub["metrics"]["train_time_per_example"]["samples"]) == len(
            fixed["metrics"]["train_time_per_example"]["samples"]):
        assert n_fixed["cost_after_timed_train"] == pytest.approx(n_pub["cost_after_timed_train"],
                                                                  rel=1e-5)


def test_compile_times_record_the_cache_state(tf_results, torch_results):
    """Every compile time says what it started from; TF graph mode and eager
    PyTorch keep no compile cache between processes, so each cell's is a fresh-process compile."""
    for r in [tf_results["000/tensorflow/%s/tiny" % v] for v in ("basic_lstm", "basic_lstm_fixed")] + [
            torch_results["000/pytorch/nn_lstm/tiny"]]:
        state = r["metrics"]["compile_time"]["state"]
        assert state.startswith("fresh process, no persistent compile cache ("), state


@pytest.mark.parametrize("variant", ["cudnn_lstm", "cudnn_lstm_fixed"])
def test_tensorflow_cudnn_ones_keep_the_weights_still_where_the_gates_saturate(tf_results, variant):
    """Defect d000-cudnn-ones: where the all-ones weights saturate every gate, the
    gradient is exactly zero, so SGD never moves the weights; the train check expects them still
    (the defect seen by running) instead of failing the cell. At TINY shapes they move (above)."""
    r = tf_results["000/tensorflow/%s/saturated" % variant]
    assert r["status"] == "ok", r.get("reason")
    _check_real_work(r, still="d000-cudnn-ones")
    assert any("d000-cudnn-ones seen by running" in n for n in r["implementation"]["notes"])
    tiny = tf_results["000/tensorflow/%s/tiny" % variant]
    assert not any("d000-cudnn-ones" in n for n in tiny["implementation"]["notes"])


def test_a_tensorflow_cell_whose_update_is_skipped_fails_its_check(tmp_path):
    """The train op patched into a no-op (GradientDescentOptimizer.minimize, by a sitecustomize
    module): the timed steps run the forward and nothing else, the weights stay, the cell fails."""
    pytest.importorskip("tensorflow")
    (tmp_path / "sitecustomize.py").write_text(
        "import tensorflow as tf\n"
        "def _skip(self, loss, *a, **k):  # the patch: no gradients, no update\n"
        "    return tf.compat.v1.no_op(name='skipped_update')\n"
        "tf.compat.v1.train.GradientDescentOptimizer.minimize = _skip\n")
    r = _run_cells(tmp_path, sys.executable,
                   [_cell("000/tensorflow/basic_lstm_fixed/tiny", "s000_tensorflow", "basic_lstm_fixed")],
                   env={"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(tmp_path)}
                   )["000/tensorflow/basic_lstm_fixed/tiny"]
    assert_training_was_skipped(r)


def assert_training_was_skipped(r):
    """A 000 cell whose update was patched away: failed on its train check, its forward check ok."""
    assert r["status"] == "failed"
    assert r["reason"].startswith("RealWorkFailed: real-work check of train_time_per_example failed: the "
                                  "weights did not change over the timed train steps"), r["reason"]
    train = r["metrics"]["train_time_per_example"]["real_work"]
    assert not train["ok"] and train["checks"][0]["before"] == train["checks"][0]["after"]
    assert r["metrics"]["forward_time_per_example"]["real_work"]["ok"]  # the forward pass was real


def test_tensorflow_unknown_variant_fails_clearly(tf_results):
    r = tf_results["000/tensorflow/nope/tiny"]
    assert r["status"] == "failed" and "unknown variant 'nope'" in r["reason"]
    assert r["metrics"] == {}


# ---- JAX ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax_results(tmp_path_factory):
    """A JAX cell as it is, and one whose recurrent kernel's gradient a sitecustomize module zeroes
    (jax.value_and_grad patched): the step trains the input kernel and the bias only."""
    pytest.importorskip("jax")
    cell = _cell("000/jax/scan/tiny", "s000_jax", "scan")
    plain = _run_cells(tmp_path_factory.mktemp("s000-jax"), sys.executable, [cell])
    site = tmp_path_factory.mktemp("jax-site")
    (site / "sitecustomize.py").write_text(
        "import jax\n"
        "_value_and_grad = jax.value_and_grad\n"
        "def value_and_grad(fun, *a, **k):  # the patch: the recurrent kernel gets no gradient\n"
        "    inner = _value_and_grad(fun, *a, **k)\n"
        "    def wrapped(*args, **kw):\n"
        "        value, grads = inner(*args, **kw)\n"
        "        return value, dict(grads, wh=grads['wh'] * 0)\n"
        "    return wrapped\n"
        "jax.value_and_grad = value_and_grad\n")
    frozen = _run_cells(tmp_path_factory.mktemp("s000-jax-frozen"), sys.executable, [cell],
                        env={"PYTHONPATH": str(site)})
    return plain[cell["id"]], frozen[cell["id"]]


def test_jax_cell(jax_results):
    r, _ = jax_results
    _check_ok(r, "jax")
    train = r["metrics"]["train_time_per_example"]["real_work"]
    assert [c["part"] for c in train["checks"]] == ["b", "wh", "wx"]  # each part moved
    n = r["extra"]["numerics"]
    assert n["loss_after_timed_train"] < n["loss_first_train_step"]


def test_a_jax_cell_that_trains_part_of_its_weights_fails_its_check(jax_results):
    _, r = jax_results
    assert r["status"] == "failed"
    assert r["reason"].startswith("RealWorkFailed: real-work check of train_time_per_example failed: the "
                                  "wh weights did not change over the timed train steps"), r["reason"]
    checks = r["metrics"]["train_time_per_example"]["real_work"]["checks"]
    assert [c["ok"] for c in checks] == [True, False, True]  # b and wx moved, wh did not
    assert r["metrics"]["forward_time_per_example"]["real_work"]["ok"]


# ---- Theano (its own venv: numpy < 2) -----------------------------------------------------------

THEANO_METRICS = ["compile_time", "compile_time_warm", "forward_time_per_example",
                  "train_time_per_example"]


@pytest.fixture(scope="module")
def theano_results(tmp_path_factory, theano_python):
    """Two processes side by side: one runs two FastLSTM cells one after the other (as a compose job
    does: the second cell's compile times must not depend on the first), the other the LSTM class."""
    python = theano_python
    tmp = tmp_path_factory.mktemp("s000-theano")
    out_dir = tmp / "cells"
    procs = []
    for name, cells in (("seq", ["000/theano/fastlstm/tiny", "000/theano/fastlstm/tiny-again"]),
                        ("lstm", ["000/theano/lstm/tiny"])):
        job = {"schema_version": 1, "run_id": "test-000", "stack": "test", "kit": {"version": "test"},
               "out_dir": str(out_dir), "facts": bench_facts(), "device": "cpu",
               "cells": [dict(_cell(c, "s000_theano", c.split("/")[2]), metrics=THEANO_METRICS)
                         for c in cells]}
        path = tmp / ("job-%s.json" % name)
        path.write_text(json.dumps(job))
        procs.append(subprocess.Popen([python, str(BENCH / "harness.py"), str(path)],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      cwd=str(BENCH), env=dict(os.environ, THEANO_FLAGS=THEANO_FLAGS)))
    logs = [p.communicate(timeout=2400)[0] for p in procs]
    results = {}
    for f in out_dir.glob("*.json"):
        r = json.loads(f.read_text())
        r["_returncode"] = procs[0].returncode if "fastlstm" in r["cell_id"] else procs[1].returncode
        results[r["cell_id"]] = r
    assert len(results) == 3, "\n".join(log[-3000:] for log in logs)
    return results


@pytest.mark.slow  # compiles C with g++ into empty compile caches (minutes)
@pytest.mark.parametrize("cell_id", ["000/theano/fastlstm/tiny", "000/theano/fastlstm/tiny-again",
                                     "000/theano/lstm/tiny"])
def test_theano_compile_times_are_cold_and_warm_whatever_ran_before(theano_results, cell_id):
    """compile_time is cold (a fresh cache of the cell's own) and compile_time_warm
    warm (a new process on that cache), each labelled, in every cell, even the second cell of a
    process whose first cell already compiled the same graph."""
    r = theano_results[cell_id]
    _check_ok(r, "theano", THEANO_METRICS)
    cold, warm = r["metrics"]["compile_time"], r["metrics"]["compile_time_warm"]
    assert cold["state"] == "cold: fresh empty Theano compile cache"
    assert warm["state"].startswith("warm: Theano compile cache filled by the same graph's cold")
    cache = r["extra"]["theano_compiledir"]
    assert cache["cold"]["verdict"].startswith("cold (empty compile cache; ")
    assert cache["cold"]["cache_before"]["module_dirs"] == 0
    assert cache["warm"]["cache_before"]["module_dirs"] > 0
    assert cache["warm"]["cache_before"]["path"] == cache["cold"]["cache_after"]["path"]
    assert warm["samples"][0] < 0.5 * cold["samples"][0]  # g++ ran for the cold one only
    for key in ("compile_breakdown_s", "compile_warm_breakdown_s"):
        assert set(r["extra"][key]) == {"graph_construction", "compile_forward_function",
                                        "compile_train_function", "first_train_call"}


@pytest.mark.slow
def test_theano_second_cell_in_a_process_is_still_cold(theano_results):
    first = theano_results["000/theano/fastlstm/tiny"]["metrics"]["compile_time"]["samples"][0]
    again = theano_results["000/theano/fastlstm/tiny-again"]["metrics"]["compile_time"]["samples"][0]
    warm = theano_results["000/theano/fastlstm/tiny-again"]["metrics"]["compile_time_warm"]["samples"][0]
    # cold, not warm: a warm compile (the cache filled) takes a small fraction of a cold one. The
    # second cold compile in a process can be faster than the first (the first also pays one-time
    # imports; 150 s and 70 s in CI at load 3-5, 2026-11-25), so it is compared with the warm one
    # and with a quarter of the first, not half of it.
    assert again > 3 * warm and again > 0.25 * first, (first, again, warm)


@pytest.mark.slow
def test_theano_lstm_class_is_the_eight_matrix_one(theano_results):
    r = theano_results["000/theano/lstm/tiny"]
    assert "8 gate matrices" in r["implementation"]["api"]
    weights = r["extra"]["numerics"]["weights_abs_max_after"]
    assert set(weights) == {"w_xi", "w_hi", "w_xf", "w_hf", "w_xo", "w_ho", "w_xc", "w_hc",
                            "b_i", "b_c", "b_o", "b_f"}  # the peephole matrices are not trained
    assert all(weights["b_" + g] > 0 for g in "icof")  # zero-initialised biases moved
    checks = r["metrics"]["train_time_per_example"]["real_work"]["checks"]
    assert sorted(c["part"] for c in checks) == sorted(weights)  # each one moved
    assert "d000-theano-class" in " ".join(r["implementation"]["notes"])
    fast = theano_results["000/theano/fastlstm/tiny"]["extra"]["numerics"]["weights_abs_max_after"]
    assert set(fast) == {"W", "U", "b"}


@pytest.mark.slow
def test_theano_cell(theano_results):
    r = theano_results["000/theano/fastlstm/tiny"]
    _check_ok(r, "theano", THEANO_METRICS)
    extra = r["extra"]
    assert "Theano compile cache" in r["metrics"]["compile_time"]["method"]
    assert extra["scan_driver"]["driver"] in ("cython", "python")
    if extra["scan_driver"]["driver"] == "python":
        assert any("scan" in s["original"] for s in r["implementation"]["substitutes"])
    if platform.machine() == "x86_64":
        assert "FTZ+DAZ on" in extra["flush_denormal"]["how"]
    n = extra["numerics"]
    assert 0 < n["cost_after_timed_train"] < 1  # MEAN squared error of values in [0, 1)
