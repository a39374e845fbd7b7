"""Precision (bench side) and `ran_on`: every cell sets the precision its source used
(fp32, TF32 off) or leaves the framework's defaults, records what held (`precision`) and where its
work ran (`ran_on`); a cell that asked for a GPU and ran on the CPU fails with the fix; the suites
plan a framework_default twin beside GPU cells of frameworks with a TF32 default.

The frameworks are the real installed CPU builds (torch, tensorflow-cpu, jax), each in a fresh
process (the environment variables must be set before the framework is imported). No GPU exists
here: the GPU branches of the `effective` decision are pure logic over read-back settings and are
tested as such; nothing here ran on a GPU.
"""

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from reprokit import formats, validate
from reprokit.catalog import suites
from reprokit.plan import plan
from reprokit.plan.plan import Options, bench_facts, job_cell, make_job, make_plan

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import float_mode  # noqa: E402
import ran_on  # noqa: E402

PRECISION_ENV = ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                 "JAX_DEFAULT_MATMUL_PRECISION")


def _clean_env():
    import os
    env = {k: v for k, v in os.environ.items() if k not in PRECISION_ENV}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return env


def in_fresh_process(code):
    """Run `code` (which prints one JSON document last) in a new interpreter with bench/ on the path
    and no precision variables in its environment; returns the document."""
    prog = "import sys, json\nsys.path.insert(0, %r)\n%s" % (str(BENCH), code)
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=600,
                       env=_clean_env(), cwd=str(BENCH))
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


READ_BACK = """
import float_mode, ran_on
requested, backend = %r, %r
env = float_mode.set_env(requested)
applied = float_mode.apply(requested, backend)
work = %r
exec(work)
where = ran_on.detect(backend)
print(json.dumps({"applied": applied, "record": float_mode.record(requested, backend, applied, env, where),
                  "ran_on": where}))
"""
WORK = {
    "torch": "import torch; (torch.ones(4, 4) @ torch.ones(4, 4)).sum().item()",
    "tensorflow": "import tensorflow as tf; float(tf.reduce_sum(tf.matmul(tf.ones((4, 4)), "
                  "tf.ones((4, 4)))))",
    "jax": "import jax.numpy as jnp; float((jnp.ones((4, 4)) @ jnp.ones((4, 4))).sum())",
}
# the framework's switch as read back: (name, value with fp32 requested, value of its default)
SWITCHES = {
    "torch": [("torch.backends.cuda.matmul.allow_tf32", False, False),
              ("torch.backends.cudnn.allow_tf32", False, True),
              ("torch.get_float32_matmul_precision", "highest", "highest")],
    "tensorflow": [("tf.config.experimental.tensor_float_32_execution_enabled", False, True)],
    "jax": [("jax.config.jax_default_matmul_precision", "highest", None)],
}


def _installed(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


@pytest.mark.parametrize("backend", sorted(WORK))
@pytest.mark.parametrize("requested", ["fp32", "framework_default"])
def test_real_framework_sets_and_reads_back(backend, requested):
    if not _installed(backend):
        pytest.skip("%s is not installed here" % backend)
    out = in_fresh_process(READ_BACK % (requested, backend, WORK[backend]))
    rec, where = out["record"], out["ran_on"]
    assert where["device"] == "cpu", where  # CPU builds
    assert rec["requested"] == requested
    assert rec["effective"] == "fp32" and "ran on the CPU" in rec["why"], rec
    column = 1 if requested == "fp32" else 2
    for switch in SWITCHES[backend]:
        assert rec["settings"][switch[0]] == switch[column], (switch, rec["settings"])
    if requested == "fp32":
        assert rec["env"] == {"NVIDIA_TF32_OVERRIDE": "0", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "0",
                              "JAX_DEFAULT_MATMUL_PRECISION": "highest"}
        assert out["applied"]["set"] and not out["applied"]["errors"], out["applied"]
    else:
        assert rec["env"] == {} and out["applied"] == {"set": [], "absent": [], "errors": []}
    if backend == "torch":
        assert rec["autotune"]["cudnn_benchmark"] is False
    validate.check("cell_result", {"schema_version": formats.version("cell_result"),
                                   "kind": "cell_result", "run_id": "r",
                                   "cell_id": "c", "stack": "s", "workload": "w", "status": "ok",
                                   "reason": None, "metrics": {}, "precision": rec,
                                   "ran_on": where}, "test")


# -- old versions: missing features are absent, a failing setter is an error, never an exception --
def _fake_torch(raising=False):
    torch = types.ModuleType("torch")
    torch.__version__ = "0.4.1"
    torch.version = types.SimpleNamespace(cuda="9.0")

    class Cudnn:
        benchmark = True
        enabled = True

    if raising:
        class Cudnn(Cudnn):  # noqa: F811 - a 1.7-like cudnn whose setter fails
            @property
            def allow_tf32(self):
                return True

            @allow_tf32.setter
            def allow_tf32(self, value):
                raise RuntimeError("cannot change allow_tf32 now")

    torch.backends = types.SimpleNamespace(cudnn=Cudnn(), cuda=types.SimpleNamespace())
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)
    return torch


def test_an_old_torch_records_missing_switches_as_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    applied = float_mode.apply("fp32", "torch")
    assert applied["set"] == [] and applied["errors"] == []
    assert set(applied["absent"]) == {"torch.backends.cuda.matmul.allow_tf32",
                                      "torch.backends.cudnn.allow_tf32",
                                      "torch.set_float32_matmul_precision"}
    rec = float_mode.record("fp32", "torch", applied, {}, {"device": "gpu"}, TF32)
    assert rec["effective"] == "fp32" and rec["why"] == "built with CUDA 9.0 (< 11): no TF32"
    assert rec["autotune"]["cudnn_benchmark"] is True and len(rec["absent"]) == 3


def test_a_setting_that_exists_and_fails_is_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(raising=True))
    applied = float_mode.apply("fp32", "torch")
    assert applied["errors"] == ["torch.backends.cudnn.allow_tf32 = False: RuntimeError: cannot "
                                 "change allow_tf32 now"]
    rec = float_mode.record("fp32", "torch", applied, {}, {"device": "cpu"})
    assert rec["errors"] == applied["errors"] and rec["settings"]["torch.backends.cudnn.allow_tf32"]


def test_a_bad_request_is_refused():
    assert float_mode.check_request(None) == "fp32"
    with pytest.raises(ValueError, match="neither fp32 nor framework_default"):
        float_mode.check_request("tf32")


# -- the GPU decision, over read-back settings (pure logic: no GPU here) ---------------------------
# where TF32 exists, as the job file carries it from reprokit/data/float_precision.yaml
TF32 = plan.bench_facts()["tf32"]
TORCH_DEFAULTS = {"torch.__version__": "2.13.0", "torch.version.cuda": "13.0",
                  "torch.backends.cuda.matmul.allow_tf32": False,
                  "torch.backends.cudnn.allow_tf32": True,
                  "torch.get_float32_matmul_precision": "highest"}
TORCH_FP32 = dict(TORCH_DEFAULTS, **{"torch.backends.cudnn.allow_tf32": False})


def _switches(settings):
    return float_mode._torch_switches(settings)


@pytest.mark.parametrize("settings,env,cc,effective,why", [
    (TORCH_DEFAULTS, {}, (9, 0), "tf32", "torch.backends.cudnn.allow_tf32 allows TF32 on compute "
                                         "capability 9.0"),
    (TORCH_FP32, {"NVIDIA_TF32_OVERRIDE": "0"}, (9, 0), "fp32", "TF32 off as read back"),
    (TORCH_DEFAULTS, {"NVIDIA_TF32_OVERRIDE": "0"}, (9, 0), "fp32", "NVIDIA_TF32_OVERRIDE=0"),
    (TORCH_DEFAULTS, {}, (7, 0), "fp32", "compute capability 7.0 has no TF32"),
    (dict(TORCH_DEFAULTS, **{"torch.version.cuda": "10.2"}), {}, (8, 0), "fp32", "CUDA 10.2 (< 11)"),
    (TORCH_DEFAULTS, {}, None, "unknown", "compute capability not read"),
])
def test_gpu_decision_torch(settings, env, cc, effective, why):
    got = float_mode._gpu("torch", settings, env, cc, _switches(settings), TF32)
    assert got[0] == effective and why in got[1], got


def test_gpu_decision_tensorflow_and_jax():
    old_tf = {"tf.__version__": "1.8.0"}  # no switch, no build info
    assert float_mode._gpu("tensorflow", old_tf, {}, None, [], TF32) == (
        "fp32", "tensorflow 1.8 predates TF32 (first in 2.4, the first CUDA 11 builds)")
    tf_on = [("tf.config.experimental.tensor_float_32_execution_enabled", True)]
    assert float_mode._gpu("tensorflow", {"tf.__version__": "2.21.0"}, {}, (8, 0), tf_on, TF32)[0] == "tf32"
    jax_default = [("jax.config.jax_default_matmul_precision=None", True)]
    # NVIDIA_TF32_OVERRIDE does not reach XLA's own GEMMs: JAX is judged by its own setting
    assert float_mode._gpu("jax", {}, {"NVIDIA_TF32_OVERRIDE": "0"}, (9, 0), jax_default, TF32)[0] == "tf32"
    jax_fp32 = [("jax.config.jax_default_matmul_precision=highest", False)]
    assert float_mode._gpu("jax", {}, {}, (9, 0), jax_fp32, TF32)[0] == "fp32"


# -- ran_on and the harness ----------------------------------------------------------------------
def test_mismatch_names_the_fix():
    assert ran_on.mismatch("cpu", {"device": "cpu", "detail": "x"}) is None
    assert ran_on.mismatch("gpu", {"device": "unknown", "detail": "x"}) is None
    why = ran_on.mismatch("gpu", {"device": "cpu", "detail": "torch.cuda.is_available() is False"})
    assert "asked for a GPU but its work ran on the CPU" in why and "--device cpu" in why
    assert "\n" not in why


HARNESS = """
import harness, types
mod = types.ModuleType("workloads.t_cpu_torch")
mod.FRAMEWORK = "torch"
def run(ctx):  # computes on the CPU without checking the cell's device
    import torch
    a = torch.ones(8, 8)
    ctx.record_value("checksum", [float((a @ a).sum())], "1", "sum of a product")
mod.run = run
sys.modules[mod.__name__] = mod
job = {"run_id": "r", "stack": "torch-modern", "out_dir": %r, "device": %r}
cell = {"id": "t/cell", "workload": "t_cpu_torch", "metrics": ["checksum"], "params": {}}
print(json.dumps(harness.run_cell(cell, job)))
"""


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_harness_records_precision_and_ran_on(tmp_path, device):
    if not _installed("torch"):
        pytest.skip("torch is not installed here")
    r = in_fresh_process(HARNESS % (str(tmp_path), device))
    assert json.loads((tmp_path / "t__cell.json").read_text()) == r
    assert r["ran_on"]["device"] == "cpu" and "is_available() is False" in r["ran_on"]["detail"]
    assert r["precision"]["requested"] == "fp32" and r["precision"]["effective"] == "fp32"
    assert r["precision"]["settings"]["torch.backends.cudnn.allow_tf32"] is False
    if device == "cpu":
        assert r["status"] == "ok" and r["reason"] is None
    else:  # asked for a GPU, ran on the CPU: an error naming the fix, never a result
        assert r["status"] == "failed"
        assert r["reason"].startswith("the cell asked for a GPU but its work ran on the CPU")
        assert "--device cpu" in r["reason"]
    assert validate.errors("cell_result", r) == []


def test_harness_real_smoke_cell(tmp_path):
    """The smoke suite's torch cell, planned by the host and run by the real harness."""
    if not _installed("torch"):
        pytest.skip("torch is not installed here")
    suite = suites.load_suite("smoke")
    plan = make_plan(suite, Options(quick=True, cells=["smoke/pytorch/*"]))
    job = make_job(plan, "torch-0.1", "run", {"version": "0", "git_commit": None}, str(tmp_path))
    assert "precision" not in job["cells"][0]  # fp32: the job files of fp32 cells are unchanged
    validate.check("job", job, "test")
    (tmp_path / "job.json").write_text(json.dumps(job))
    p = subprocess.run([sys.executable, str(BENCH / "harness.py"), str(tmp_path / "job.json")],
                       capture_output=True, text=True, timeout=600, env=_clean_env())
    assert p.returncode == 0, p.stderr[-2000:]
    (result,) = [json.loads(f.read_text()) for f in tmp_path.glob("smoke__*.json")]
    assert result["status"] == "ok", result["reason"]
    assert result["ran_on"]["device"] == "cpu"
    assert result["precision"]["effective"] == "fp32"
    assert result["precision"]["env"]["NVIDIA_TF32_OVERRIDE"] == "0"
    assert validate.errors("cell_result", result) == []


# -- the framework_default twin in the suites ------------------------------------------------------
def test_twins_only_where_defaults_can_differ():
    stacks = suites.load_stacks()
    assert suites.has_tf32_default(stacks["torch-modern"])
    assert suites.has_tf32_default(stacks["tf-modern"]) and suites.has_tf32_default(stacks["jax-modern"])
    for old in ("torch-1.3", "tf-2.0", "tf-1.8", "torch-0.1", "theano-0.9", "keras-mxnet-1.2"):
        assert not suites.has_tf32_default(stacks[old]), old
    for name in suites.suite_names():
        s = suites.load_suite(name)
        ids = [c.id for c in s.cells]
        for c in s.cells:
            if c.precision == "framework_default":
                base = s.cell(c.precision_of)
                assert c.id == base.id + suites.TWIN_SUFFIX and ids.index(c.id) == ids.index(base.id) + 1
                assert base.precision == "fp32" and base.device != "cpu" and base.implemented
                assert suites.has_tf32_default(stacks[c.stack])
                assert (c.workload, c.params, c.variant) == (base.workload, base.params, base.variant)
            else:
                assert c.precision == "fp32" and c.precision_of is None
    assert not [c for c in suites.load_suite("gpu-smoke").cells if c.precision != "fp32"]  # opted out
    assert not [c for c in suites.load_suite("legacy-2017").cells if c.precision != "fp32"]
    modern = suites.load_suite("modern")
    cpu_rows = [c for c in modern.cells if c.device == "cpu"]
    assert cpu_rows and all(c.params.get("gpus") == 0 for c in cpu_rows)
    assert not {c.id + suites.TWIN_SUFFIX for c in cpu_rows} & {c.id for c in modern.cells}


def test_a_cpu_run_skips_the_twins_with_the_reason():
    modern = suites.load_suite("modern")
    cell = "modern/000/pytorch/nn_lstm/b128-s30-h512"
    plan = make_plan(modern, Options(device="cpu", cells=[cell + "*"]))
    assert [c.id for c in plan.runnable] == [cell]
    ((twin, status, reason),) = plan.not_runnable
    assert twin.id == cell + "/framework-defaults" and status == "skipped"
    assert reason == "framework defaults are fp32 on a CPU: same as the fp32 cell"
    gpu = make_plan(modern, Options(device="gpu", cells=[cell + "*"]))
    assert [c.id for c in gpu.runnable] == [cell, cell + "/framework-defaults"] and not gpu.not_runnable
    jobs = [job_cell(c, modern, gpu.options) for c in gpu.runnable]
    assert [j.get("precision") for j in jobs] == [None, "framework_default"]
    assert jobs[0]["id"] == cell  # the fp32 cell keeps its id
    validate.check("job", make_job(gpu, "torch-modern", "r", {"version": "0", "git_commit": None},
                                   "/tmp/out"), "test")


# -- ran_on of GPU frameworks, from what they say (fakes of their answers: no GPU here) -------------
def _cuda(**kw):
    base = dict(is_available=lambda: True, current_device=lambda: 0, device_count=lambda: 1)
    base.update(kw)
    return types.SimpleNamespace(**base)


@pytest.mark.parametrize("cuda,device,detail", [
    (_cuda(_initialized=True), "gpu", "current device cuda:0"),  # torch 0.1: no get_device_name
    (_cuda(is_initialized=lambda: True, get_device_name=lambda i: "NVIDIA H200"), "gpu",
     "cuda:0 NVIDIA H200"),
    (_cuda(is_initialized=lambda: False), "cpu", "never initialised CUDA"),
    (_cuda(is_available=lambda: False), "cpu", "is_available() is False"),
    (_cuda(), "unknown", "this version does not say"),
])
def test_ran_on_torch(monkeypatch, cuda, device, detail):
    torch = types.ModuleType("torch")
    torch.__version__, torch.cuda = "0.1.12_2", cuda
    monkeypatch.setitem(sys.modules, "torch", torch)
    got = ran_on.detect("torch")
    assert got["device"] == device and detail in got["detail"], got


def test_ran_on_theano_that_fell_back_to_the_cpu(monkeypatch):
    theano = types.ModuleType("theano")
    theano.config = types.SimpleNamespace(device="cuda")
    monkeypatch.setitem(sys.modules, "theano", theano)
    monkeypatch.delitem(sys.modules, "theano.gpuarray", raising=False)
    monkeypatch.delitem(sys.modules, "theano.sandbox.cuda", raising=False)
    got = ran_on.detect("theano")
    assert got["device"] == "cpu" and "no GPU backend activated" in got["detail"]
    gpuarray = types.ModuleType("theano.gpuarray")
    gpuarray.pygpu_activated = True
    monkeypatch.setitem(sys.modules, "theano.gpuarray", gpuarray)
    assert ran_on.detect("theano")["device"] == "gpu"


def test_ran_on_asks_only_frameworks_the_cell_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "mxnet", raising=False)
    assert ran_on.detect("mxnet") == {"device": "unknown", "detail": "the cell never imported mxnet"}
    assert ran_on.detect(None)["device"] == "unknown"


# -- the old stacks' own environments (the local runner's venvs): never a crash, switches absent ----
OLD_CELLS = {
    "tf-1.2": ("s000_tensorflow", "basic_lstm", {"batch": 4, "seq_len": 3, "hidden": 8, "layers": 1},
               ["tf.config.experimental.enable_tensor_float_32_execution"]),
    "torch-0.1": ("s000_pytorch", "nn_lstm", {"batch": 4, "seq_len": 3, "hidden": 8, "layers": 1},
                  ["torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
                   "torch.set_float32_matmul_precision"]),
    "keras-mxnet-1.2": ("probe_mxnet", None, {"n": 16, "batch": 2, "input": 4, "hidden": 4}, []),
    "theano-0.9": ("probe_theano", None, {"n": 16, "batch": 2, "input": 4, "hidden": 4}, []),
}


@pytest.mark.slow
@pytest.mark.parametrize("stack", sorted(OLD_CELLS))
def test_old_stack_environments_record_precision(tmp_path, stack):
    from reprokit.runners import venvs

    env = venvs.environment_for(stack, suites.load_stacks()[stack], say=lambda *_: None, build=False)
    if env is None:
        pytest.skip("the %s environment is not built here (the local runner builds it)" % stack)
    workload, variant, params, absent = OLD_CELLS[stack]
    metric = "gemm_time" if workload.startswith("probe_") else "compile_time"
    cell = {"source": "smoke", "workload": workload, "variant": variant, "params": params,
            "metrics": [metric], "budget": {"min_samples": 2, "max_samples": 2, "time_budget_s": 0},
            "protocol": "budget"}
    job = {"schema_version": 1, "run_id": "r", "stack": stack, "kit": {}, "out_dir": str(tmp_path),
           "facts": bench_facts(), "device": "cpu",
           "cells": [dict(cell, id="cpu"), dict(cell, id="gpu", device="gpu")]}
    (tmp_path / "job.json").write_text(json.dumps(job))
    for cell_id in ("cpu", "gpu") if stack == "torch-0.1" else ("cpu",):
        p = subprocess.run([env.python, str(BENCH / "harness.py"), str(tmp_path / "job.json"),
                            "--cell", cell_id], capture_output=True, text=True, timeout=900,
                           env={**_clean_env(), **env.env_vars})
        assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads((tmp_path / "cpu.json").read_text())
    assert r["status"] == "ok", (r["reason"], r.get("traceback"))
    assert r["ran_on"]["device"] == "cpu" and r["precision"]["effective"] == "fp32", r
    assert sorted(r["precision"].get("absent", [])) == sorted(absent)
    assert not r["precision"].get("errors") and validate.errors("cell_result", r) == []
    if stack == "torch-0.1":  # asked for a GPU on a machine without one: failed, naming the fix
        g = json.loads((tmp_path / "gpu.json").read_text())
        assert g["status"] == "failed" and "ran on the CPU" in g["reason"], g["reason"]


def test_where_tf32_exists_comes_from_the_job_file_not_from_bench():
    """bench/float_mode.py keeps no copy of float_precision.yaml: the facts decide, and without them a
    GPU cell's precision is not decided."""
    settings = dict(TORCH_DEFAULTS, **{"torch.version.cuda": "11.8"})
    assert float_mode._gpu("torch", settings, {}, (8, 0), _switches(settings), TF32)[0] == "tf32"
    later = dict(TF32, min_compute_capability="9.0", min_cuda="12")
    assert float_mode._gpu("torch", settings, {}, (8, 0), _switches(settings), later) == (
        "fp32", "built with CUDA 11.8 (< 12): no TF32")
    newer = dict(settings, **{"torch.version.cuda": "12.4"})
    assert float_mode._gpu("torch", newer, {}, (8, 0), _switches(newer), later) == (
        "fp32", "GPU compute capability 8.0 has no TF32 tensor cores (9.0 and later)")
    effective, why = float_mode._gpu("torch", settings, {}, (8, 0), _switches(settings), None)
    assert effective == "unknown" and "carries no TF32 facts" in why
    src = (BENCH / "float_mode.py").read_text()
    assert "(1, 7)" not in src and "(2, 4)" not in src and "< 11" not in src
