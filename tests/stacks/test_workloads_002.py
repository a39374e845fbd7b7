"""Source 002 workload (bench/workloads/s002_keras.py) through the real harness, tiny shapes.

The tensorflow variant runs on this interpreter (tf.keras); the mxnet variant runs twice: in the
keras-mxnet-1.2 stack's environment as the local runner chooses it (reprokit.runners.venvs: real Keras-MXNet
2.1.6 on MXNet 1.2.0 where Python 3.6 exists), and in its stand-in (MXNet Gluon on this interpreter's
venv, REPROKIT_STAND_INS=1). Both are created once and cached; a test is skipped only when its
environment cannot be installed here.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.catalog import suites
from reprokit.plan.plan import bench_facts
from reprokit.runners import venvs
from reprokit.runners.base import StackUnavailable

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
METRICS = ["time_per_epoch", "time_per_sample", "gpu_memory"]
TINY = {"hidden": 8, "seq_len": 5, "vocab": 20, "batch": 16, "gpus": 0, "unroll": "unroll",
        "optimizer": "rmsprop", "lr": 0.01}
SIZES = {"synthetic": {"n_samples": 200}, "nietzsche": {"n_tokens": 600},
         "wikitext2-char": {"n_tokens": 600}}


def _cell(variant, name, **params):
    p = dict(TINY, **params)
    return {"id": "002/%s/%s" % (variant, name), "source": "002", "workload": "s002_keras",
            "variant": variant, "params": p, "metrics": METRICS,
            "budget": {"min_samples": 3, "time_budget_s": 0, "warmup": 1}}


def _run(python, tmp, variant, cells, only=None, env=None):
    job = {"schema_version": 1, "run_id": "test-002", "stack": "test", "kit": {"version": "test"},
           "out_dir": str(tmp / "cells"), "facts": bench_facts(), "device": "cpu", "cells": cells}
    path = tmp / ("job-%s.json" % variant)
    path.write_text(json.dumps(job))
    cmd = [python, str(BENCH / "harness.py"), str(path)] + (["--cell", only] if only else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=str(BENCH),
                          env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = {}
    for c in cells:
        f = tmp / "cells" / (c["id"].replace("/", "__") + ".json")
        if f.exists():
            out[c["id"].split("/", 2)[2]] = json.loads(f.read_text())
    return out


def _cells(variant):
    # the gpus > 1 path (batch split over replicas) on two CPU devices; first, because
    # TensorFlow's logical devices can only be set before it initialises them
    cells = [_cell(variant, "two-replicas", dataset="nietzsche", gpus=2, replicas_on_cpu=True,
                   n_tokens=600)]
    # tensorflow (each tf.keras cell costs seconds): nietzsche only as the two-replica cell,
    # wikitext2-char only as the nounroll cell
    cells += [_cell(variant, ds, dataset=ds, **SIZES[ds]) for ds in SIZES
              if variant == "mxnet" or ds == "synthetic"]
    cells.append(_cell(variant, "needs-gpu", dataset="synthetic", gpus=2, n_samples=200))
    if variant == "mxnet":  # a row published on one GPU: the job's device (the CPU here)
        cells.append(_cell(variant, "one-gpu-row", dataset="synthetic", gpus=1, n_samples=200))
    cells.append(_cell(variant, "bad", dataset="synthetic", hiden=8))
    if variant == "tensorflow":
        cells.append(_cell(variant, "nounroll", dataset="wikitext2-char", unroll="nounroll",
                           n_tokens=600))
    else:
        cells.append(_cell(variant, "nounroll", dataset="synthetic", unroll="nounroll",
                           n_samples=200))
    return cells


@pytest.fixture(scope="module")
def tf_results(tmp_path_factory):
    pytest.importorskip("tensorflow")
    return _run(sys.executable, tmp_path_factory.mktemp("s002tf"), "tensorflow",
                _cells("tensorflow"))


@pytest.fixture(scope="module")
def mx_python():
    """The Gluon stand-in's interpreter (the stack's fallback environment)."""
    spec = suites.load_stacks()["keras-mxnet-1.2"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REPROKIT_STAND_INS", "1")
        try:
            return venvs.python_for("keras-mxnet-1.2", spec, say=lambda *_: None)
        except StackUnavailable as e:
            pytest.skip("MXNet environment cannot be installed here: %s" % e)


@pytest.fixture(scope="module")
def kmx_env():
    """The environment the local runner chooses for keras-mxnet-1.2 on this machine."""
    spec = suites.load_stacks()["keras-mxnet-1.2"]
    try:
        env = venvs.environment_for("keras-mxnet-1.2", spec, say=lambda *_: None)
    except StackUnavailable as e:
        pytest.skip("MXNet environment cannot be installed here: %s" % e)
    if env.chosen["fallback"]:
        pytest.skip("no candidate of keras-mxnet-1.2 works here: %s" % env.chosen.get("why"))
    return env


@pytest.fixture(scope="module")
def kmx_results(tmp_path_factory, kmx_env):
    tmp = tmp_path_factory.mktemp("s002kmx")
    cells = [c for c in _cells("mxnet") if not c["id"].endswith("two-replicas")]
    return _run(kmx_env.python, tmp, "mxnet", cells, env=kmx_env.env_vars)


@pytest.fixture(scope="module")
def mx_results(tmp_path_factory, mx_python):
    tmp = tmp_path_factory.mktemp("s002mx")
    cells = _cells("mxnet")
    # all but one cell in one process, then the GPU cell alone through --cell
    out = _run(mx_python, tmp, "mxnet", [c for c in cells if not c["id"].endswith("needs-gpu")])
    out.update(_run(mx_python, tmp, "mxnet", cells, only="002/mxnet/needs-gpu"))
    return out


def _check_ok(r, batch=16):
    assert r["status"] == "ok", r.get("traceback")
    m = r["metrics"]
    ext = r["extra"]["extrapolation"]
    n, shuffle = ext["epoch_samples"], ext["shuffle_seconds"][0]
    for name in ("time_per_epoch", "time_per_sample"):
        assert len(m[name]["samples"]) >= 3 and len(m[name]["raw_seconds"]) >= 3
        assert m[name]["warmup"] == 1
    raw = m["time_per_epoch"]["raw_seconds"]
    assert m["time_per_epoch"]["unit"] == "s"
    assert m["time_per_epoch"]["samples"] == pytest.approx([s * n / batch + shuffle for s in raw])
    assert "EXTRAPOLATED" in m["time_per_epoch"]["method"]
    assert m["time_per_sample"]["unit"] == "us"
    assert m["time_per_sample"]["samples"] == pytest.approx([1e6 * s / batch for s in raw])
    mem = m["gpu_memory"]
    assert mem["unit"] == "MiB" and len(mem["samples"]) == 1 and mem["samples"][0] > 50
    assert "HOST peak RSS" in mem["method"] and "NOT GPU memory" in mem["method"]
    losses = r["extra"]["loss"]
    assert len(losses) == len(raw) and all(0 < x < 100 for x in losses)
    _check_real_work(m)
    return m


def _check_real_work(m):
    """Both timed metrics come from the same batches and carry one check: each layer's
    weights (model.get_weights() / the Gluon blocks' parameters) moved over the timed batches."""
    rw = m["time_per_epoch"]["real_work"]
    assert rw["ok"] and rw["phase"] == "train" and m["time_per_sample"]["real_work"] == rw
    assert [c["part"] for c in rw["checks"]] == ["dense", "lstm"]
    assert all(c["ok"] and c["before"] != c["after"] for c in rw["checks"])
    assert "real_work" not in m["gpu_memory"]  # not a timed metric


@pytest.mark.parametrize("name", ["synthetic", "two-replicas"])
def test_tensorflow_cells(tf_results, name):
    r = tf_results[name]
    _check_ok(r)
    assert r["implementation"]["framework"] == "keras"
    assert r["implementation"]["backend"] == "tensorflow"
    used = " ".join(s["used"] for s in r["implementation"]["substitutes"])
    assert "tf.keras" in used and "hard_sigmoid" in used
    assert r["stack_fingerprint"]["framework"]["name"] == "keras"


def test_tensorflow_nounroll(tf_results):
    r = tf_results["nounroll"]
    _check_ok(r)
    assert r["extra"]["model"]["unroll"] is False and "unroll=False" in r["implementation"]["api"]


@pytest.mark.parametrize("ds", sorted(SIZES))
def test_mxnet_cells(mx_results, ds):
    r = mx_results[ds]
    _check_ok(r)
    assert r["implementation"]["framework"] == "mxnet"
    assert "LSTMCell.unroll(5)" in r["implementation"]["api"]
    used = " ".join(s["used"] for s in r["implementation"]["substitutes"])
    assert "Gluon" in used and "unrolled over 5 steps" in used
    assert r["stack_fingerprint"]["framework"]["name"] == "mxnet"
    assert "waitall" in r["metrics"]["time_per_epoch"]["sync"]


@pytest.mark.parametrize("ds", sorted(SIZES))
def test_real_keras_mxnet_cells(kmx_env, kmx_results, ds):
    """Where a candidate installs (Python 3.6 here), the source's own Keras model runs on the MXNet
    backend: no Gluon stand-in, the versions the environment check reported."""
    r = kmx_results[ds]
    _check_ok(r)
    impl = r["implementation"]
    assert impl["framework"] == "keras" and impl["backend"] == "mxnet"
    assert impl["framework_version"] == "2.1.6" and impl["backend_version"] == "1.2.0"
    assert "keras.models.Sequential" in impl["api"] and "hard_sigmoid" in impl["api"]
    used = " ".join(s["used"] for s in impl["substitutes"])
    assert "Gluon" not in used
    assert r["stack_fingerprint"]["framework"]["name"] == "mxnet"
    assert r["stack_fingerprint"]["framework"]["version"] == "1.2.0"
    assert r["stack_fingerprint"]["python"]["version"] == kmx_env.chosen["python"]


def test_real_keras_mxnet_refuses_what_it_cannot_run(kmx_results):
    assert kmx_results["needs-gpu"]["status"] == "failed"
    assert "cell needs 2 GPUs, this host has 0" in kmx_results["needs-gpu"]["reason"]
    assert kmx_results["bad"]["status"] == "failed" and "hiden" in kmx_results["bad"]["reason"]
    assert "always unrolled" in kmx_results["nounroll"]["reason"]


def test_text_datasets_are_windows(tf_results, mx_results):
    d = mx_results["nietzsche"]["extra"]["dataset"]
    # range(0, 600 - 5, 3) windows over 600 stand-in characters
    assert d["windows"] == len(range(0, 600 - 5, 3)) and d["stride"] == 3
    assert d["stand_in"] is True and d["overrides"] == {"n_tokens": 600, "vocab_size": 20}
    w = mx_results["wikitext2-char"]["extra"]["extrapolation"]
    assert w["published_samples"] == 1562175 and "3.38 M" in w["note"]


@pytest.mark.parametrize("which", ["tf", "mx"])
def test_gpu_cell_on_cpu_fails_clearly(tf_results, mx_results, which):
    r = (tf_results if which == "tf" else mx_results)["needs-gpu"]
    assert r["status"] == "failed"
    assert "cell needs 2 GPUs, this host has 0" in r["reason"]


def test_one_gpu_row_runs_on_the_jobs_device(mx_results):
    """As 000/001's rows: a row published on one GPU runs on the job's device, here the CPU."""
    r = mx_results["one-gpu-row"]
    _check_ok(r)
    assert r["device"] == "cpu" and any("ran on one GPU" in n for n in r["implementation"]["notes"])


@pytest.mark.parametrize("which", ["tf", "mx"])
def test_multi_replica_path_on_cpu_devices(tf_results, mx_results, which):
    r = (tf_results if which == "tf" else mx_results)["two-replicas"]
    _check_ok(r)
    assert r["extra"]["model"]["gpus"] == 2 and r["extra"]["model"]["replicas_on_cpu"] is True
    sub = [s for s in r["implementation"]["substitutes"] if "multi_gpu_model" in s["original"]]
    assert len(sub) == 1 and ("cpu:1" in sub[0]["used"] or "cpu(1)" in sub[0]["used"])


def test_bad_params_fail_as_data(tf_results, mx_results):
    for res in (tf_results, mx_results):
        assert res["bad"]["status"] == "failed" and "hiden" in res["bad"]["reason"]
    assert mx_results["nounroll"]["status"] == "failed"
    assert "always unrolled" in mx_results["nounroll"]["reason"]


def test_suite_marks_gpu_cells():
    suite = suites.load_suite("keras-mxnet-2018")
    assert all(c.implemented for c in suite.cells)
    for c in suite.cells:  # the device comes from the numbers' hardware (reprokit/catalog/suites.py)
        assert c.workload == "s002_keras"
        assert c.needs_gpus == (c.params["gpus"] if c.params["gpus"] >= 2 else 0)
        assert c.device == ("cpu" if c.params["gpus"] == 0 else None)
    cpu = [c for c in suite.cells if c.device == "cpu"]
    assert len(cpu) == 18  # mxnet 3 x 2, tensorflow 2 x 3 x 2
    assert len([c for c in suite.cells if c.needs_gpus == 0]) == 36  # + the one-V100 rows


