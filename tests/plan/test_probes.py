"""Preflight says "needs a probe" where it cannot know, the GPU probe cache decides,
and the gpu-smoke suite holds one capability probe per GPU stack.

No GPU exists here (on a GPU machine the one test of this host's own preflight hides its GPUs from
the kit). The GPU hosts are stored fingerprints (tests/data/fingerprints/, each compute
capability with its source); the cache entries are written through the executor's own function
from synthetic GPU results; the probe workloads run for real on the CPU through the local runner.
Nothing here ran on a GPU.
"""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import formats, results, validate
from reprokit.catalog import suites
from reprokit.catalog.suites import Suite
from reprokit.errors import UserError
from reprokit.plan import compat as compat_data
from reprokit.plan import preflight, probe_cache
from reprokit.plan.plan import Options, make_plan
from reprokit.run.execute import execute
from reprokit.run.record import exit_code, write_run
from reprokit.runners import host_preflight
from reprokit.runners.local import LocalRunner

ROOT = Path(__file__).resolve().parents[2]
FINGERPRINTS = ROOT / "tests" / "data" / "fingerprints"
NEW_GPUS = {"h100": "9.0", "b200": "10.0", "rtx5090": "12.0"}
# the legacy stacks whose kernels reach sm_90/sm_100/sm_120 only through PTX JIT (compat.yaml)
PTX_JIT_LEGACY = ["theano-0.9", "tf-1.2", "torch-0.1", "keras-tf-1.8", "keras-mxnet-1.2", "tf-1.8",
                  "tf-2.0"]
COMPAT = compat_data.load_compat()
GPU_STACKS = sorted(n for n, s in COMPAT["stacks"].items() if s["gpu"])


def stored(name):
    return json.loads((FINGERPRINTS / f"{name}.json").read_text())


def image_id(stack):
    return "sha256:" + suites.load_stacks()[stack]["image"].replace("-", "0").ljust(12, "0")


def gpu_host(name, runner_images=True):
    """A host from a stored fingerprint, the engine up and every GPU image built (with an ID)."""
    images = {}
    if runner_images:
        for stack in GPU_STACKS:
            tag = preflight.IMAGE_TAG.format(image=suites.load_stacks()[stack]["image"], flavour="gpu")
            images[tag] = {"present": True, "image_id": image_id(stack)}
    return preflight.host_from_fingerprint(stored(name), engine_present=True, images=images)


def verdict(stack, host, probes=None, runner="docker", probe_cell=False):
    return preflight.check_stack_cell(stack, host, 1, runner=runner, compat=COMPAT, probes=probes,
                                      probe_cell=probe_cell)


def probe_result(stack, fp, status="ok", reason=None, when="2026-11-25T10:00:00Z", **runner):
    """What a finished gpu-smoke cell's result holds after a GPU run through the Docker runner (the
    fields reprokit/plan/probe_cache.py reads), as the harness and record.finish_result write them."""
    return {"schema_version": formats.version("cell_result"), "kind": "cell_result",
            "run_id": "20261125T100000Z-gpu-smoke",
            "cell_id": f"gpu-smoke/{stack}", "stack": stack, "workload":
            suites.load_suite("gpu-smoke").cell(f"gpu-smoke/{stack}").workload,
            "params": {"cuda_force_ptx_jit": True}, "device": "gpu", "status": status,
            "reason": reason, "started": "2026-11-25T09:59:50Z", "finished": when,
            "extra": {"probe": {"gemm": {"max_rel_error": 1e-6}, "lstm_step": {"max_abs_error_h": 1e-7},
                                "first_gemm_s": 41.0, "first_lstm_step_s": 12.0}},
            "runner": {"name": "docker", "image_id": image_id(stack), "image_digest": None, **runner}}


# -- preflight on the stored H100 and Blackwell fingerprints ---------------------------------------
def test_stored_fingerprints_have_a_source_for_each_compute_capability():
    for name, cc in NEW_GPUS.items():
        fp = stored(name)
        assert {g["compute_capability"] for g in fp["gpus"]} == {cc}
        source = fp["_provenance"]["compute_capability"]
        assert f": {cc}, from https://developer.nvidia.com/cuda-gpus" in source, name
        assert fp["gpus"][0]["name"].split()[-1] in source or fp["gpus"][0]["name"] in source


@pytest.mark.parametrize("name", sorted(NEW_GPUS))
@pytest.mark.parametrize("stack", PTX_JIT_LEGACY)
def test_ptx_jit_legacy_stack_needs_a_probe(name, stack):
    v = verdict(stack, gpu_host(name), probes=[])
    assert v["status"] == "probe" and not v["runnable"], v["reasons"]
    assert preflight.summary(v) == "needs a probe"
    needs = [r for r in v["reasons"] if r.startswith("needs a probe")]
    assert len(needs) == 1 and "only through PTX JIT" in needs[0]
    assert "run `reproduce.py run --suite gpu-smoke --runner docker`" in needs[0]
    # what preflight knows stays said: the JIT warning and its cache settings
    assert any(r.startswith("warning: expect PTX JIT") for r in v["reasons"])


@pytest.mark.parametrize("name", sorted(NEW_GPUS))
def test_no_ptx_and_no_sass_is_not_runnable_without_a_probe(name):
    v = verdict("torch-1.3", gpu_host(name), probes=[])
    assert v["status"] == "blocked" and preflight.summary(v) == "not runnable"
    sm = "sm_" + NEW_GPUS[name].replace(".", "")
    assert any(f"neither SASS nor PTX for {sm}" in r for r in v["reasons"])
    assert not any(r.startswith("needs a probe") for r in v["reasons"])


def test_native_modern_stacks_need_no_probe():
    v = verdict("tf-modern", gpu_host("h100"), probes=[])  # CUDA 12.9: sm_90 SASS possible
    assert v["runnable"] and v["status"] == "ok" and preflight.summary(v) == "runnable"


def test_local_runner_runs_no_image_and_keeps_the_jit_verdict():
    v = verdict("tf-1.2", gpu_host("h100"), probes=[], runner="local")
    assert v["status"] == "jit" and v["runnable"]


def test_the_probe_cell_itself_runs_with_forced_ptx_jit():
    v = verdict("tf-1.2", gpu_host("b200"), probes=[], probe_cell=True)
    assert v["status"] == "jit" and v["runnable"]
    assert v["env"]["CUDA_FORCE_PTX_JIT"] == "1"
    assert v["env"]["CUDA_CACHE_PATH"] == COMPAT["jit"]["cache_env"]["CUDA_CACHE_PATH"]
    native = verdict("torch-modern", preflight.host_from_fingerprint(
        dict(stored("h100"), gpus=[dict(g, driver_version="580.95.05", cuda_driver_version="13.0")
                                   for g in stored("h100")["gpus"]]),
        engine_present=True, images=gpu_host("h100")["images"]), probes=[], probe_cell=True)
    assert native["status"] == "ok" and "CUDA_FORCE_PTX_JIT" not in native["env"]
    blocked = verdict("torch-1.3", gpu_host("h100"), probes=[], probe_cell=True)
    assert blocked["status"] == "blocked"  # no kernel image: nothing to probe


# -- the cache decides ----------------------------------------------------------------------------
def test_a_cached_ok_probe_makes_the_stack_runnable(tmp_path):
    cache = tmp_path / "gpu-probes.json"
    fp = stored("h100")
    entry, path = probe_cache.record_result(probe_result("tf-1.8", fp), fp, "docker", "gpu", cache)
    assert path == cache and entry["status"] == "ok"
    doc = probe_cache.load(cache)
    assert validate.errors("probe_cache", doc) == []
    assert "uuid" not in json.dumps(doc["entries"][0]["host"]).lower()
    v = verdict("tf-1.8", gpu_host("h100"), probes=doc["entries"])
    assert v["runnable"] and v["status"] == "jit", v["reasons"]
    assert preflight.summary(v) == "runnable (probed 2026-11-25)"
    assert any(r.startswith("probed 2026-11-25 (reprokit/2018-tf-cudnnlstm:gpu on GPU 0") and
               "ok under CUDA_FORCE_PTX_JIT=1" in r for r in v["reasons"])
    # the other legacy stacks were not probed: still "needs a probe"
    assert verdict("tf-2.0", gpu_host("h100"), probes=doc["entries"])["status"] == "probe"


def test_a_cached_failure_is_not_runnable_with_the_probe_s_error(tmp_path):
    cache = tmp_path / "gpu-probes.json"
    fp = stored("b200")
    error = ("ProbeFailure: GEMM failed (cuBLAS kernel failed to execute): InternalError: "
             "Blas SGEMM launch failed: CUBLAS_STATUS_EXECUTION_FAILED")
    probe_cache.record_result(probe_result("keras-mxnet-1.2", fp, "failed", error), fp, "docker", "gpu",
                              cache)
    v = verdict("keras-mxnet-1.2", gpu_host("b200"), probes=probe_cache.load(cache)["entries"])
    assert v["status"] == "blocked" and not v["runnable"]
    assert any("the capability probe of reprokit/2018-keras-mxnet:gpu failed on 2026-11-25: "
               + error in r for r in v["reasons"])


def test_a_probe_applies_to_its_host_gpu_driver_and_image_only(tmp_path):
    cache = tmp_path / "gpu-probes.json"
    fp = stored("h100")
    probe_cache.record_result(probe_result("tf-1.2", fp), fp, "docker", "gpu", cache)
    entries = probe_cache.load(cache)["entries"]
    assert verdict("tf-1.2", gpu_host("h100"), probes=entries)["status"] == "jit"
    # another GPU UUID of the same model: the same host identity
    same = dict(fp, gpus=[dict(g, uuid="GPU-ffffffff") for g in fp["gpus"]])
    h = preflight.host_from_fingerprint(same, engine_present=True, images=gpu_host("h100")["images"])
    assert verdict("tf-1.2", h, probes=entries)["status"] == "jit"
    # a new driver, another GPU model, another host, another build of the image: a new probe
    for changed in (dict(fp, gpus=[dict(g, driver_version="580.95.05") for g in fp["gpus"]]),
                    dict(fp, host_id="fedcba9876543210")):
        h = preflight.host_from_fingerprint(changed, engine_present=True, images=gpu_host("h100")["images"])
        assert verdict("tf-1.2", h, probes=entries)["status"] == "probe"
    assert verdict("tf-1.2", gpu_host("b200"), probes=entries)["status"] == "probe"
    rebuilt = gpu_host("h100")
    rebuilt["images"]["reprokit/legacy-2017-tensorflow:gpu"] = {"present": True, "image_id": "sha256:new"}
    assert verdict("tf-1.2", rebuilt, probes=entries)["status"] == "probe"


def test_a_newer_probe_replaces_the_older_one(tmp_path):
    cache = tmp_path / "gpu-probes.json"
    fp = stored("h100")
    probe_cache.record_result(probe_result("torch-0.1", fp, "failed", "ProbeFailure: LSTM step failed"),
                              fp, "docker", "gpu", cache)
    probe_cache.record_result(probe_result("torch-0.1", fp, when="2026-11-26T08:00:00Z"), fp, "docker",
                              "gpu", cache)
    entries = probe_cache.load(cache)["entries"]
    assert len(entries) == 1 and entries[0]["status"] == "ok"
    assert preflight.summary(verdict("torch-0.1", gpu_host("h100"), probes=entries)) == \
        "runnable (probed 2026-11-26)"


def test_only_a_gpu_probe_through_the_docker_runner_is_cached(tmp_path):
    fp = stored("h100")
    res = probe_result("tf-1.2", fp)
    assert probe_cache.entry_from_result(res, fp, "docker", "gpu") is not None
    assert probe_cache.entry_from_result(res, fp, "docker", "cpu") is None
    assert probe_cache.entry_from_result(res, fp, "local", "gpu") is None
    assert probe_cache.entry_from_result(dict(res, status="timeout"), fp, "docker", "gpu") is None
    assert probe_cache.entry_from_result(dict(res, workload="s000_tensorflow"), fp, "docker", "gpu") is None
    # the entry is the GPU the container was given (runner.gpus: ids, as `run --gpus 1` gives)
    two = dict(fp, gpus=[fp["gpus"][0], dict(fp["gpus"][1], name="NVIDIA H200")])
    for ids, name in ((["1"], "NVIDIA H200"), ([two["gpus"][1]["uuid"]], "NVIDIA H200"),
                      (["0"], fp["gpus"][0]["name"]), (None, fp["gpus"][0]["name"])):
        entry = probe_cache.entry_from_result(probe_result("tf-1.2", two, gpus=ids), two, "docker", "gpu")
        assert entry["host"]["gpu_name"] == name, ids
    unknown = probe_result("tf-1.2", two, gpus=["7"])
    assert probe_cache.entry_from_result(unknown, two, "docker", "gpu") is None


@pytest.mark.parametrize("text", ["{not json", '{"schema_version": 1, "kind": "gpu_probe_cache"}', "\udcff"])
def test_a_damaged_cache_is_one_line(tmp_path, text):
    cache = tmp_path / "gpu-probes.json"
    cache.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(UserError) as e:
        probe_cache.load(cache)
    assert str(cache) in str(e.value) and "\n" not in str(e.value) and "delete it" in str(e.value)


def test_a_damaged_cache_makes_probes_needed_and_says_why(tmp_path, monkeypatch):
    cache = tmp_path / "gpu-probes.json"
    cache.write_text("{not json")
    monkeypatch.setenv(probe_cache.CACHE_ENV, str(cache))
    cells = [c for c in suites.load_suite("legacy-2017").cells if c.stack == "tf-1.2"][:1]
    cells = [dataclasses.replace(cells[0], needs_gpus=1)]
    host = gpu_host("h100")
    probes, warning = host_preflight.host_probes(host, "docker")
    assert probes == [] and warning.startswith("warning: GPU probe cache")
    assert host_preflight.host_probes(host, "local") == ([], None)  # not read where it does not apply
    v = preflight.cell_verdicts(cells, host, "docker", COMPAT, probes, warning)[cells[0].id]
    # tf-1.2 itself needs a probe; its fallback chain then runs it on tf-modern
    assert v["chain"]["links"][0]["status"] == "probe" and v["chain"]["stack"] == "tf-modern"
    assert any(r.startswith("warning: GPU probe cache") and "not valid JSON" in r for r in v["reasons"])


# -- the gpu-smoke suite --------------------------------------------------------------------------
def test_gpu_smoke_has_one_probe_per_gpu_stack_and_image():
    suite = suites.load_suite("gpu-smoke")
    assert sorted(c.stack for c in suite.cells) == GPU_STACKS
    images = {suites.load_stacks()[s]["image"] for s in GPU_STACKS}
    assert {suites.load_stacks()[c.stack]["image"] for c in suite.cells} == images  # every GPU image
    for c in suite.cells:
        assert probe_cache.is_probe(c.workload) and c.needs_gpus == 1 and c.implemented
        assert c.metrics == ("first_call_time", "gemm_time", "lstm_step_time", "lstm_backward_time")


SHAPE_SUITES = ("legacy-2017", "stacked-lstm-2019", "cudnn-lstm-2018", "keras-mxnet-2018", "modern")


def test_each_probe_runs_the_largest_shape_its_stack_runs():
    """A probe of toy shapes (a 256 GEMM, one forward LSTM step at batch 16, hidden 64) never touches
    the kernels the cells use. Each probe's shape is the largest its stack's cells run (the rule in
    gpu-smoke.yaml), derived here from the suites again."""
    want: dict[str, dict] = {}
    for name in SHAPE_SUITES:
        for c in suites.load_suite(name).cells:
            p = c.params
            a = want.setdefault(c.stack, {"batch": 0, "input": 0, "hidden": 0, "m": 0})
            a["batch"] = max(a["batch"], p["batch"])
            a["hidden"] = max(a["hidden"], p["hidden"])
            a["input"] = max(a["input"], p.get("emb", p["hidden"]), p["hidden"])
            a["m"] = max(a["m"], p["batch"] * p["seq_len"])
    probes = {c.stack: c.params for c in suites.load_suite("gpu-smoke").cells}
    assert set(probes) == set(want)
    for stack, a in want.items():
        expected = dict(a, k=a["input"], n=4 * a["hidden"])
        assert {k: probes[stack][k] for k in expected} == expected, (
            f"gpu-smoke/{stack}: params {probes[stack]} are not the largest shape its suites run "
            f"({expected}); update reprokit/data/suites/gpu-smoke.yaml")


def _cli(*args, env=None, hide_gpus=False):
    """reproduce.py ARGS in a child process; with `hide_gpus`, NVML's GPUs are hidden from the kit
    (reprokit.probes.fingerprint.nvml_gpus answers as without a driver), so the no-GPU path runs on a GPU
    machine too (tests/commands/test_bad_inputs.py hides them in-process the same way)."""
    if not hide_gpus:
        return subprocess.run([sys.executable, str(ROOT / "reproduce.py"), *args], cwd=ROOT, text=True,
                              capture_output=True, timeout=600, env=env)
    code = ("import runpy, sys; from reprokit.probes import fingerprint; "
            "fingerprint.nvml_gpus = lambda nvml=None: ([], {'available': False, "
            "'reason': 'no NVIDIA driver: hidden by the test'}); "
            "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    return subprocess.run([sys.executable, "-c", code, str(ROOT / "reproduce.py"), *args], cwd=ROOT,
                          text=True, capture_output=True, timeout=600, env=env)


def test_gpu_smoke_plans_here_and_every_cell_needs_a_gpu(tmp_path):
    """On a host without a GPU (a GPU machine's GPUs hidden from the kit) every probe cell is blocked
    and the run skips them all."""
    from reprokit.probes import fingerprint

    hide = bool(fingerprint.nvml_gpus()[0])
    listed = json.loads(_cli("list", "--suite", "gpu-smoke", "--json").stdout)
    cells = listed["suites"][0]["cells"]
    assert len(cells) == len(GPU_STACKS) and all(c["needs_gpus"] == 1 for c in cells)
    pre = _cli("preflight", "--suite", "gpu-smoke", "--json", hide_gpus=hide)
    assert pre.returncode == 0, pre.stderr
    for v in json.loads(pre.stdout).values():  # whatever else preflight says, the missing GPU is said
        assert v["status"] == "blocked"
        assert "cell needs 1 GPU(s), host has 0 (no NVIDIA driver/NVML)" in v["reasons"]
    env = dict(os.environ, **{probe_cache.CACHE_ENV: str(tmp_path / "cache.json")})
    run = _cli("run", "--suite", "gpu-smoke", "--runner", "local", "--results", str(tmp_path / "r"),
               env=env, hide_gpus=hide)
    # skipped cells are not failures, but a run that measured nothing exits 1, saying so
    assert run.returncode == 1 and "no cell of the run measured anything" in run.stderr, run.stderr[-2000:]
    rundir = results.resolve_run("latest", tmp_path / "r")
    record = rundir.load_run()
    assert [c["status"] for c in record["cells"]] == ["skipped"] * len(GPU_STACKS)
    assert all("cell needs 1 GPU(s), host has 0" in c["reason"] for c in record["cells"])
    assert "done in" in run.stderr and f"{len(GPU_STACKS)} skipped" in run.stderr
    assert not (tmp_path / "cache.json").exists()


# -- the probe workloads, for real, on the CPU through the local runner ---------------------------
QUICK = {"min_samples": 6, "max_samples": 6, "time_budget_s": 0, "warmup": 1}


SMALL = {"n": 256, "m": 256, "k": 256, "batch": 16, "input": 64, "hidden": 64}  # the CPU's shapes


def _probe_suite(stacks):
    gpu_smoke = suites.load_suite("gpu-smoke")
    cells = [dataclasses.replace(c, needs_gpus=0, params=dict(c.params, **SMALL),
                                 # MXNet 1.2's CPU RNN has no training mode: no backward on the CPU
                                 metrics=tuple(m for m in c.metrics if c.framework != "mxnet"
                                               or m != "lstm_backward_time"))
             for c in gpu_smoke.cells if c.stack in stacks]
    return Suite("probe-cpu", "the gpu-smoke probes on the CPU", [],
                 {"budget": QUICK, "quick_budget": QUICK, "timeout_s": 600}, cells)


def _run_probes(tmp_path, monkeypatch, stacks, force_jit_for=()):

    monkeypatch.setenv(probe_cache.CACHE_ENV, str(tmp_path / "cache.json"))
    real = host_preflight.suite_verdicts

    def verdicts(cells, fp, runner, device="cpu", **kw):  # as preflight gives a probe cell on a PTX-JIT GPU
        out = real(cells, fp, runner, device, **kw)
        for cid in out:
            if any(cid.endswith(s) for s in force_jit_for):
                out[cid] = dict(out[cid], status="jit", env={"CUDA_FORCE_PTX_JIT": "1"})
        return out

    monkeypatch.setattr(host_preflight, "suite_verdicts", verdicts)  # host_preflight.decide asks it
    plan = make_plan(_probe_suite(stacks), Options(quick=True))
    rundir = results.RunDir(tmp_path / "run")
    run = execute(plan, LocalRunner(say=lambda *_: None), rundir, ["test"], say=lambda *_: None)
    return rundir, run


def _check_probe_result(res, framework, n_bias):
    assert res["status"] == "ok", res.get("reason")
    assert validate.errors("cell_result", res) == []
    backward = framework != "mxnet"  # MXNet 1.2's CPU RNN has no training mode (probe_mxnet.py)
    assert set(res["metrics"]) == {"first_call_time", "gemm_time", "lstm_step_time"} | (
        {"lstm_backward_time"} if backward else set())
    assert len(res["metrics"]["gemm_time"]["samples"]) == 6
    probe = res["extra"]["probe"]
    assert probe["device"] == "cpu"
    assert probe["gemm"]["max_rel_error"] < 1e-4 and probe["gemm"]["shape"] == [256, 256]
    assert probe["lstm_step"]["max_abs_error_h"] < 1e-5 and probe["lstm_step"]["bias_vectors"] == n_bias
    grad = probe["lstm_backward"]  # the backward, against the analytic gradient
    if backward:
        assert grad["checked"] == ["c0", "h0", "params", "x"], grad
        assert max(v for k, v in grad.items() if k.startswith("max_rel_error")) < 1e-4, grad
    else:
        assert grad is None
    assert probe["shapes"]["lstm"] == {"batch": 16, "input": 64, "hidden": 64}
    assert res["implementation"]["framework"] == framework
    # each timed stage's last result (the gradients for the backward) against the same call
    # made once more, untimed (bench/workloads/_probe.py _stage_check)
    for name, m in res["metrics"].items():
        if m["stop_reason"] == "single":
            continue
        rw = m["real_work"]
        assert rw["ok"] and rw["phase"] == "forward" and rw["reason"] is None, (name, rw)
        (c,) = rw["checks"]
        assert c["timed"] > 0 and c["timed"] == pytest.approx(c["reference"], rel=c["rel_tol"]), (name, c)


MODERN = {"torch-modern": ("torch", "torch", 2), "tf-modern": ("tensorflow", "tensorflow", 1),
          "jax-modern": ("jax", "jax", 1)}  # stack: (module, framework, bias vectors)


@pytest.mark.parametrize("stack", sorted(MODERN))
def test_the_modern_stack_probes_run_on_the_cpu(tmp_path, monkeypatch, stack):
    """Each modern stack's probe on its own run (the modern stacks run on this interpreter: local.env
    host), so a framework this host lacks skips its stack only: the GPU host of docs/gpu-run had no
    TensorFlow, and tf-modern's failed cell failed the torch and JAX probes' run with it."""
    module, fw, n_bias = MODERN[stack]
    assert suites.load_stacks()[stack]["local"]["env"] == "host"  # else the precondition below is not it
    pytest.importorskip(module, reason=f"{module} is not installed in this interpreter, which runs the "
                        f"{stack} stack (pip install '.[frameworks]' installs it, as CI does)")
    rundir, run = _run_probes(tmp_path, monkeypatch, (stack,), force_jit_for=("tf-modern",))
    assert exit_code(run) == 0, [(c["cell_id"], c.get("reason")) for c in run["cells"]]
    res = rundir.load_cell(f"gpu-smoke/{stack}")
    _check_probe_result(res, fw, n_bias)
    job = json.loads((rundir.jobs_dir / f"{stack}.json").read_text())
    forced = job["cells"][0]["params"].get("cuda_force_ptx_jit")
    assert forced is (True if stack == "tf-modern" else None)
    note = res["extra"]["probe"]["cuda_force_ptx_jit"]
    assert note.startswith("asked for, not set: the cell runs on the CPU" if forced else "not asked for")
    assert not (tmp_path / "cache.json").exists()  # a CPU run decides nothing about a GPU


def test_the_legacy_stack_probes_run_on_the_cpu(tmp_path, monkeypatch):
    """Theano, MXNet, TensorFlow 1.x and PyTorch probes in the environments the local runner gives
    the 2017-2018 stacks (on the project machines, 2026-11-25: Theano 0.9.0, MXNet 1.2.0, TensorFlow
    1.2.1 and PyTorch 1.0.0 on Python 3.6; elsewhere whatever venvs.py chooses or falls back to)."""
    from reprokit.runners import venvs
    from reprokit.runners.base import StackUnavailable

    stacks = ("theano-0.9", "keras-mxnet-1.2", "tf-1.2", "torch-0.1")
    for stack in stacks:
        try:
            venvs.python_for(stack, suites.load_stacks()[stack], say=lambda *_: None)
        except StackUnavailable as e:
            pytest.skip(f"the {stack} environment cannot be installed here: {e}")
    rundir, run = _run_probes(tmp_path, monkeypatch, stacks)
    assert exit_code(run) == 0, [(c["cell_id"], c["reason"]) for c in run["cells"]]
    for stack, fw, n_bias in (("theano-0.9", "theano", 1), ("keras-mxnet-1.2", "mxnet", 2),
                              ("tf-1.2", "tensorflow", 1), ("torch-0.1", "torch", 2)):
        _check_probe_result(rundir.load_cell(f"gpu-smoke/{stack}"), fw, n_bias)


def test_the_probe_checks_catch_wrong_numbers():
    sys.path.insert(0, str(ROOT / "bench"))
    import numpy as np
    from workloads import _probe

    p = dict(_probe.DEFAULTS, n=8, batch=3, input=4, hidden=5)
    a, b = _probe.gemm_inputs(np, p)
    assert _probe.check_gemm(np, a.astype(np.float64) @ b, a, b)["max_rel_error"] == 0
    for wrong in (np.zeros((8, 8)), np.full((8, 8), np.nan), (a @ b)[:, :7], (a @ b) * 1.05):
        with pytest.raises(_probe.ProbeFailure):
            _probe.check_gemm(np, wrong, a, b)
    x, h0, c0, w = _probe.lstm_inputs(np, p)
    h1, c1 = _probe.lstm_reference(np, x, h0, c0, w, 2)
    assert _probe.check_lstm(np, h1, c1, x, h0, c0, w, 2)["max_abs_error_h"] == 0
    for bad_h in (np.zeros_like(h1), h1 + 0.01, np.full_like(h1, np.inf)):
        with pytest.raises(_probe.ProbeFailure):
            _probe.check_lstm(np, bad_h, c1, x, h0, c0, w, 2)
    # the backward's reference is the gradient: central differences of the forward reference agree
    x64, h64, c64 = (v.astype(np.float64) for v in (x, h0, c0))
    ref = _probe.lstm_grad_reference(np, x64, h64, c64, w, 2)

    def loss(xv=x64, hv=h64, cv=c64, wv=w):
        return _probe.lstm_reference(np, xv, hv, cv, wv, 2)[0].sum()

    eps = 1e-6
    for name, arr in (("x", x64), ("h0", h64), ("c0", c64)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            up, down = arr.copy(), arr.copy()
            up[idx] += eps
            down[idx] -= eps
            key = {"x": "xv", "h0": "hv", "c0": "cv"}[name]
            num[idx] = (loss(**{key: up}) - loss(**{key: down})) / (2 * eps)
        assert np.max(np.abs(num - ref[name])) < 1e-8, name
    # every parameter equals w: d loss / d w is the sum of all parameter gradients
    assert abs((loss(wv=w + eps) - loss(wv=w - eps)) / (2 * eps) - ref["params"]) < 1e-6
    assert _probe.check_lstm_grad(np, ref, x, h0, c0, w, 2)["max_rel_error_x"] == 0
    for bad in ({"x": ref["x"] * 1.05}, {"c0": np.zeros_like(ref["c0"])}, {"params": ref["params"] / 2},
                {"h0": np.full_like(ref["h0"], np.nan)}):
        with pytest.raises(_probe.ProbeFailure):
            _probe.check_lstm_grad(np, bad, x, h0, c0, w, 2)
    with pytest.raises(_probe.ProbeFailure, match=r"GEMM failed \(no kernel image for this GPU"):
        _probe.stage("GEMM", lambda: (_ for _ in ()).throw(
            RuntimeError("CUDA error: no kernel image is available for execution on the device")))


# -- the Slurm GPU path: probes cached under the node, gating the container launchers ----------------------
def slurm_probe(stack, node, launcher="apptainer", image=None, **runner):
    """A gpu-smoke cell's result after a Slurm container launcher ran it on `node` (the fields
    execute_concurrent and slurm.outcome write: launcher, node, node_fingerprint, SLURM_JOB_GPUS)."""
    res = probe_result(stack, node, **runner)
    res["runner"].update(name="slurm", launcher=launcher, node="gpu-node-1", node_fingerprint=node,
                         image_id=image or image_id(stack))
    return res


def login_host():
    """The driver's host: a login node without a GPU."""
    return dict(stored("h100"), host_id="10910910910910a", gpus=[],
                nvidia={"available": False, "reason": "no NVIDIA driver"})


def slurm_host(node, launcher, image=None):
    """The host a Slurm GPU run is planned on: its probe job's node, with its launcher's images."""
    images = {}
    for stack in GPU_STACKS:
        tag = preflight.IMAGE_TAG.format(image=suites.load_stacks()[stack]["image"], flavour="gpu")
        images[tag] = {"present": True, "image_id": image or image_id(stack)}
    return preflight.host_from_fingerprint(node, images=images, launcher=launcher)


def test_a_slurm_container_probe_is_cached_under_its_node_not_the_driver_host(tmp_path):
    cache = tmp_path / "gpu-probes.json"
    node = stored("h100")
    sif = "sha256:" + "5" * 64
    entry, _ = probe_cache.record_result(slurm_probe("tf-1.2", node, image=sif, gpus=["0"]), login_host(),
                                         "slurm", "gpu", cache)
    assert entry["host"]["host_id"] == node["host_id"] != login_host()["host_id"]
    assert entry["runner"] == "slurm/apptainer" and entry["image_id"] == sif
    assert validate.errors("probe_cache", probe_cache.load(cache)) == []
    for launcher in ("docker", "pyxis"):
        got = probe_cache.entry_from_result(slurm_probe("tf-1.2", node, launcher), login_host(), "slurm",
                                            "gpu")
        assert got["runner"] == f"slurm/{launcher}"
    # what decides nothing: the local launcher (no image), no node fingerprint, a CPU run
    assert probe_cache.entry_from_result(slurm_probe("tf-1.2", node, "local"), login_host(), "slurm",
                                         "gpu") is None
    no_node = slurm_probe("tf-1.2", node)
    no_node["runner"]["node_fingerprint"] = None
    assert probe_cache.entry_from_result(no_node, login_host(), "slurm", "gpu") is None
    assert probe_cache.entry_from_result(slurm_probe("tf-1.2", node), login_host(), "slurm", "cpu") is None


def test_a_slurm_jobs_global_gpu_id_finds_the_one_gpu_its_node_could_open():
    """SLURM_JOB_GPUS holds global ids; with devices constrained, NVML in the job opens only the job's
    GPU (the others have no UUID in the fingerprint): that one is the probe's GPU. Two opened GPUs
    and an id that is neither: no entry rather than a wrong one."""
    h100 = stored("h100")
    g = h100["gpus"][0]
    node = dict(h100, gpus=[dict(g, index=0, uuid=None), dict(g, index=1, uuid=None),
                            dict(g, index=2, name="NVIDIA H200", uuid="GPU-abc")])
    got = probe_cache.entry_from_result(slurm_probe("tf-1.2", node, gpus=["5"]), login_host(), "slurm", "gpu")
    assert got["host"]["gpu_name"] == "NVIDIA H200"
    two = dict(h100, gpus=[dict(g, index=0, uuid="GPU-a"), dict(g, index=1, uuid="GPU-b")])
    assert probe_cache.entry_from_result(slurm_probe("tf-1.2", two, gpus=["5"]), login_host(), "slurm",
                                         "gpu") is None
    docker_two = probe_result("tf-1.2", two, gpus=["5"])  # the Docker runner knows its ids: no guess
    assert probe_cache.entry_from_result(docker_two, two, "docker", "gpu") is None


@pytest.mark.parametrize("launcher", ["docker", "apptainer", "pyxis"])
def test_the_probe_gate_applies_to_slurm_container_launchers_on_the_probe_node(tmp_path, monkeypatch,
                                                                              launcher):
    cache = tmp_path / "gpu-probes.json"
    node = stored("h100")
    sif = "sha256:" + "7" * 64
    host = slurm_host(node, launcher, image=sif)
    v = verdict("tf-1.2", host, probes=[], runner="slurm")
    assert v["status"] == "probe"
    assert any(f"--runner slurm --slurm-launcher {launcher} --device gpu" in r for r in v["reasons"]), v
    probe_cache.record_result(slurm_probe("tf-1.2", node, launcher, image=sif), login_host(), "slurm", "gpu",
                              cache)
    entries = probe_cache.load(cache)["entries"]
    assert verdict("tf-1.2", host, probes=entries, runner="slurm")["status"] == "jit"
    # another build of the image file (another sha256): a new probe
    other = slurm_host(node, launcher, image="sha256:" + "8" * 64)
    assert verdict("tf-1.2", other, probes=entries, runner="slurm")["status"] == "probe"
    failed = dict(entries[0], status="failed", error="ProbeFailure: LSTM step failed")
    assert verdict("tf-1.2", host, probes=[failed], runner="slurm")["status"] == "blocked"
    # the cache is read for a Slurm container launcher, not for the local launcher
    monkeypatch.setenv(probe_cache.CACHE_ENV, str(cache))
    assert host_preflight.host_probes(host, "slurm") == (entries, None)
    assert host_preflight.host_probes(slurm_host(node, "local"), "slurm") == ([], None)


def test_the_slurm_local_launcher_runs_no_image_and_is_not_gated():
    v = verdict("tf-1.2", slurm_host(stored("h100"), "local"), probes=[], runner="slurm")
    assert v["status"] == "jit" and v["runnable"]
    assert not any(c["name"] == "probe" for c in v["checks"])


def test_the_collector_of_a_slurm_run_records_a_probe_under_its_node(tmp_path, monkeypatch):
    """execute_concurrent's collector (the Slurm runner's) records a finished probe cell in the cache,
    as the serial executor does for the Docker runner."""
    from types import SimpleNamespace

    from reprokit import files
    from reprokit.run import record
    from reprokit.run.execute_concurrent import _Collector
    from reprokit.runners.base import CellOutcome

    cache = tmp_path / "gpu-probes.json"
    monkeypatch.setenv(probe_cache.CACHE_ENV, str(cache))
    c = suites.load_suite("gpu-smoke").cell("gpu-smoke/tf-1.2")
    rundir = results.RunDir(tmp_path / "20261125T100000Z-gpu-smoke")
    rundir.cells_dir.mkdir(parents=True)
    run = {"schema_version": formats.version("run"), "kind": "run", "run_id": rundir.path.name,
           "suite": "gpu-smoke", "runner": "slurm", "protocol": "budget", "started": "2026-11-25T09:00:00Z",
           "finished": None, "wall_s": None, "host_fingerprint": login_host(), "kit": files.kit_info(),
           "cells": [], "current": None, "stacks": {},
           "driver": {"pid": 1, "host": "elsewhere", "start_ticks": None}}
    record.set_entry(run, c, "pending", "not run yet", None)
    write_run(rundir, run)
    node = stored("h100")
    said = []
    runner = SimpleNamespace(name="slurm", say=said.append)
    collect = _Collector(record.RunRecord(rundir, rundir.load_run()), rundir.path.name, runner, "gpu", 1,
                         suites.load_stacks(), None, {})
    info = {"launcher": "pyxis", "node": "gpu-node-1", "node_fingerprint": node, "gpus": ["0"],
            "image_id": "sha256:" + "9" * 64, "squashfs": "/images/legacy-2017-tensorflow-gpu.sqsh"}
    collect(SimpleNamespace(cell=c, process=None, job_cell={}), CellOutcome("ok", None, 30.0, None, info))
    (entry,) = probe_cache.load(cache)["entries"]
    assert entry["host"]["host_id"] == node["host_id"] and entry["runner"] == "slurm/pyxis"
    assert entry["image_id"] == "sha256:" + "9" * 64 and entry["stack"] == "tf-1.2"
    assert any(s.startswith("probe cache: tf-1.2 on ") and "slurm/pyxis" in s for s in said), said
