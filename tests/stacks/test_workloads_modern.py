"""The `modern` suite (the control arm): the suite data, every cell through the real harness with tiny
shapes (JAX really runs), and the JAX building blocks against PyTorch references."""

import importlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reprokit import kitdata
from reprokit.catalog import suites
from reprokit.plan.plan import Options, bench_facts, budget_for

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

MODERN_STACKS = {"torch-modern", "tf-modern", "jax-modern"}
SUITE = suites.load_suite("modern")
# the fp32 cells; each GPU one has a framework_default twin (reprokit/catalog/suites.py), skipped on a CPU run
FP32_CELLS = [c for c in SUITE.cells if c.precision == "fp32"]
BUDGET = {"min_samples": 3, "max_samples": 50, "time_budget_s": 0, "warmup": 1}
# tiny shapes per workload: the suite's params are kept where these do not override them
TINY = {
    "s000_pytorch": {"batch": 4, "seq_len": 5, "hidden": 8},
    "s000_tensorflow": {"batch": 4, "seq_len": 5, "hidden": 8},
    "s000_jax": {"batch": 4, "seq_len": 5, "hidden": 8},
    "s001_pytorch": {"batch": 4, "seq_len": 8, "hidden": 16, "emb": 16, "vocab_override": 50},
    "s001_jax": {"batch": 4, "seq_len": 8, "hidden": 16, "emb": 16, "vocab_override": 50},
    "s002_keras": {"hidden": 8, "seq_len": 5, "vocab": 20, "batch": 16, "n_samples": 200},
    "s002_jax": {"hidden": 8, "seq_len": 5, "vocab": 20, "batch": 16, "n_samples": 200},
    "s003_pytorch": {"batch": 4, "seq_len": 6, "hidden": 8, "emb": 8, "vocab": 50,
                     "corpus_tokens": 2000},
    "s003_tensorflow": {"batch": 4, "seq_len": 6, "hidden": 8, "emb": 8, "vocab": 50,
                        "corpus_tokens": 2000},
    "s003_jax": {"batch": 4, "seq_len": 6, "hidden": 8, "emb": 8, "vocab": 50,
                 "corpus_tokens": 2000},
    "s004_pytorch": {"batch": 4, "seq_len": 5, "hidden": 16, "vocab": 50, "n_tokens": 3000},
    "s004_tensorflow": {"batch": 4, "seq_len": 5, "hidden": 16, "vocab": 50, "n_tokens": 3000},
    "s004_jax": {"batch": 4, "seq_len": 5, "hidden": 16, "vocab": 50, "n_tokens": 3000},
}
DROP = {"s001_pytorch": ("vocab",), "s001_jax": ("vocab",)}  # checks the full-size vocabulary


def _available(module):
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


FRAMEWORK_OF = {"torch-modern": "torch", "tf-modern": "tensorflow", "jax-modern": "jax"}
AVAILABLE = {s for s, m in FRAMEWORK_OF.items() if _available(m)}


# -- the suite data ------------------------------------------------------------------------------
def test_suite_covers_every_source_on_the_modern_stacks():
    assert SUITE.sources == []  # no published counterparts
    assert {c.stack for c in SUITE.cells} == MODERN_STACKS
    have = {(c.source, c.stack) for c in SUITE.cells}
    for src in ("000", "003", "004"):
        assert {(src, s) for s in MODERN_STACKS} <= have, src
    assert {("001", "torch-modern"), ("001", "jax-modern")} <= have
    assert {("002", "tf-modern"), ("002", "jax-modern")} <= have
    assert all(c.implemented and c.id.startswith("modern/" + c.source + "/") for c in SUITE.cells)
    assert len(FP32_CELLS) == 23
    assert {c.id + suites.TWIN_SUFFIX for c in FP32_CELLS if c.device != "cpu"} == \
        {c.id for c in SUITE.cells if c.precision == "framework_default"}
    ids = {c.id for c in SUITE.cells}
    for fw in ("pytorch/nn_lstm", "tensorflow/cudnn_lstm", "jax/scan"):
        assert {"modern/000/%s/b128-s30-h512" % fw, "modern/000/%s/b128-s100-h1024" % fw} <= ids
    assert "modern/003/jax/jit_scan_fine_grained/train" in ids


def test_modern_stacks_are_data():
    stacks = suites.load_stacks()
    compat = kitdata.load_file("compat.yaml")["stacks"]
    for name in MODERN_STACKS:
        spec = stacks[name]
        assert spec["image"] == "modern" and compat[name]["gpu"]  # stacks.yaml alone names the image
        assert spec["era"] == "modern" and spec["local"]["env"] == "host"
        assert spec["local"]["substitutes"], name
    assert stacks["jax-modern"]["local"]["requirements"] == ["jax==0.10.2", "jaxlib==0.10.2"]


def test_quick_budget_keeps_five_samples():
    for c in SUITE.cells:
        b = budget_for(c, SUITE, Options(quick=True))
        assert b["min_samples"] >= 5 and b["time_budget_s"] == 0


@pytest.mark.parametrize("cell", SUITE.cells, ids=lambda c: c.id)
def test_every_cell_names_an_existing_workload_and_variant(cell):
    assert (BENCH / "workloads" / (cell.workload + ".py")).is_file()
    module = importlib.import_module("workloads." + cell.workload)  # imports no framework
    assert callable(module.run)
    variants = getattr(module, "VARIANTS", None)
    if variants is not None:
        assert cell.variant in variants, (cell.id, variants)
    if cell.workload in ("s003_pytorch", "s003_tensorflow", "s003_jax"):
        assert cell.params["phase"] in ("forward", "train")


def test_jax_cells_run_jax_workloads():
    for c in SUITE.cells:
        assert (c.stack == "jax-modern") == c.workload.endswith("_jax"), c.id


# -- every cell, tiny, through the real harness ---------------------------------------------------
def _job_cell(cell):
    params = {k: v for k, v in cell.params.items() if k not in DROP.get(cell.workload, ())}
    params.update(TINY[cell.workload])
    return {"id": cell.id, "source": cell.source, "workload": cell.workload,
            "variant": cell.variant, "params": params, "metrics": list(cell.metrics),
            "budget": BUDGET, "protocol": "budget", "timeout_s": 300}


@pytest.fixture(scope="module")
def harness_results(tmp_path_factory):
    """All cells of a stack in one harness process (framework imports once); stacks side by side."""
    jobs = {}
    for stack in sorted(AVAILABLE):
        d = tmp_path_factory.mktemp(stack)
        cells = [c for c in FP32_CELLS if c.stack == stack]
        job = {"schema_version": 1, "run_id": "test-modern", "stack": stack, "kit": {},
               "out_dir": str(d / "cells"), "facts": bench_facts(), "device": "cpu",
               "cells": [_job_cell(c) for c in cells]}
        (d / "job.json").write_text(json.dumps(job))
        jobs[stack] = d
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("KERAS_BACKEND", None)

    def run(stack):
        return subprocess.run([sys.executable, str(BENCH / "harness.py"),
                               str(jobs[stack] / "job.json")], capture_output=True, text=True,
                              timeout=900, env=env, cwd=str(BENCH))
    with ThreadPoolExecutor(max_workers=len(jobs) or 1) as pool:
        procs = dict(zip(jobs, pool.map(run, list(jobs))))
    out = {}
    for c in FP32_CELLS:
        if c.stack in jobs:
            path = jobs[c.stack] / "cells" / (c.id.replace("/", "__") + ".json")
            out[c.id] = (procs[c.stack], json.loads(path.read_text()) if path.exists() else None)
    return out


@pytest.mark.parametrize("cell", FP32_CELLS, ids=lambda c: c.id)
def test_cell_runs_tiny_through_the_harness(harness_results, cell):
    if cell.stack not in AVAILABLE:
        pytest.skip("%s is not installed here" % FRAMEWORK_OF[cell.stack])
    proc, r = harness_results[cell.id]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert r is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert r["status"] == "ok", (r.get("reason"), r.get("traceback"))
    # fp32 set and read back (bench/float_mode.py), on the CPU the framework says it used
    assert r["ran_on"]["device"] == "cpu", r["ran_on"]
    assert (r["precision"]["requested"], r["precision"]["effective"]) == ("fp32", "fp32"), r["precision"]
    for name in cell.metrics:
        m = r["metrics"][name]
        assert m["samples"], name
        if m["stop_reason"] != "single":
            assert len(m["samples"]) >= BUDGET["min_samples"] and m["warmup"] >= 1, name
            assert all(s > 0 for s in m["raw_seconds"]), name
    if cell.stack == "jax-modern":
        impl = r["implementation"]
        assert impl.get("backend") in ("cpu", "jax"), impl
        fp = r["stack_fingerprint"]
        assert "jax" in json.dumps(fp), "fingerprint does not record JAX"


def test_jax_cells_time_synchronised_steps_and_compile_apart(harness_results):
    if "jax-modern" not in AVAILABLE:
        pytest.skip("jax is not installed here")
    for cid, (_, r) in harness_results.items():
        if not r or r["stack"] != "jax-modern":
            continue
        assert r["status"] == "ok", (cid, r.get("reason"))
        timed = [m for m in r["metrics"].values() if m["stop_reason"] != "single"
                 and m["raw_seconds"]]
        if r["workload"] == "s002_jax":
            assert r["implementation"]["backend"] == "jax"
            assert r["stack_fingerprint"]["framework"]["backend"] == "jax"
            assert r["extra"]["first_batch_seconds"][0] > 0
            continue
        assert all("block_until_ready" in m["sync"] for m in timed), cid
        if r["workload"] == "s000_jax":
            br = r["extra"]["compile_breakdown_s"]
            assert br["compile_train"] > 0 and br["compile_forward_excluded"] > 0
            num = r["extra"]["numerics"]
            assert num["loss_after_timed_train"] < num["loss_first_train_step"]  # SGD learns
        else:
            assert all(v > 0 for k, v in r["extra"]["compile_s"].items() if k != "note"), cid


# sources 001, 002 and 004 check that their timed steps did the work (bench/real_work.py)
CHECKED_001_002_004 = [c for c in FP32_CELLS if c.source in ("001", "002", "004")]


@pytest.mark.parametrize("cell", CHECKED_001_002_004, ids=lambda c: c.id)
def test_001_002_004_record_an_ok_real_work_check_on_every_timed_metric(harness_results, cell):
    if cell.stack not in AVAILABLE:
        pytest.skip("%s is not installed here" % FRAMEWORK_OF[cell.stack])
    _, r = harness_results[cell.id]
    assert r is not None and r["status"] == "ok", r and r.get("reason")
    timed = {n: m for n, m in r["metrics"].items() if m["raw_seconds"] and m["stop_reason"] != "single"}
    assert timed
    for name, m in timed.items():
        rw = m.get("real_work")
        assert rw and rw["ok"], (name, rw)
        # 001's eval is a forward pass: its last timed loss against the same batch run again untimed
        assert rw["phase"] == ("forward" if name.startswith("eval") else "train"), name
        for c in rw["checks"]:
            if rw["phase"] == "train":
                assert c["before"] != c["after"], (name, c)
            else:
                assert c["timed"] == pytest.approx(c["reference"], rel=1e-6), (name, c)
    if cell.source == "001":  # one loop per kind on the CPU: both names carry its one check
        for kind in ("train", "eval"):
            assert timed[kind + "_wps"]["real_work"] == timed[kind + "_wps_synced"]["real_work"]
        assert {c["part"] for c in timed["train_wps"]["real_work"]["checks"]} >= {"embedding", "lstm"}


@pytest.mark.parametrize("cell", [c for c in FP32_CELLS if c.source == "003"], ids=lambda c: c.id)
def test_003_records_an_ok_real_work_check_on_both_timed_metrics(harness_results, cell):
    """Train moves the embedding, the LSTM and the head; forward's last logits match an untimed rerun."""
    if cell.stack not in AVAILABLE:
        pytest.skip("%s is not installed here" % FRAMEWORK_OF[cell.stack])
    _, r = harness_results[cell.id]
    assert r is not None and r["status"] == "ok", r and r.get("reason")
    rw = r["metrics"]["time_per_batch"]["real_work"]
    assert r["metrics"]["seq_per_s"]["real_work"] == rw
    assert rw["ok"] and rw["phase"] == cell.params["phase"], rw
    if rw["phase"] == "train":
        assert {c["part"] for c in rw["checks"]} == {"embedding", "rnn", "head"}
        assert all(c["ok"] and c["before"] != c["after"] for c in rw["checks"]), rw
    else:
        (c,) = rw["checks"]
        assert c["ok"] and c["timed"] > 0 and c["timed"] == pytest.approx(c["reference"], rel=1e-3), c


def test_jax_bad_variant_and_param_fail_as_data(tmp_path):
    pytest.importorskip("jax")
    cells = [{"id": "bad/variant", "source": "000", "workload": "s000_jax", "variant": "cudnn",
              "params": TINY["s000_jax"], "metrics": ["compile_time"], "budget": BUDGET},
             {"id": "bad/param", "source": "004", "workload": "s004_jax", "variant": "scan",
              "params": dict(TINY["s004_jax"], hiden=3), "metrics": ["train_wps"],
              "budget": BUDGET}]
    job = {"schema_version": 1, "run_id": "t", "stack": "jax-modern", "kit": {},
           "out_dir": str(tmp_path / "cells"), "facts": bench_facts(), "device": "cpu", "cells": cells}
    (tmp_path / "job.json").write_text(json.dumps(job))
    proc = subprocess.run([sys.executable, str(BENCH / "harness.py"), str(tmp_path / "job.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for cid, word in (("bad/variant", "variant"), ("bad/param", "hiden")):
        r = json.loads((tmp_path / "cells" / (cid.replace("/", "__") + ".json")).read_text())
        assert r["status"] == "failed" and word in r["reason"], r["reason"]


# -- the JAX building blocks against PyTorch ----------------------------------------------------
def test_jax_lstm_layer_computes_torch_nn_lstm():
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from workloads import _jax_lstm as jl
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(6, 5)  # gate order i, f, g, o, like _jax_lstm
    x = torch.rand(7, 3, 6)
    h0, c0 = torch.rand(1, 3, 5), torch.rand(1, 3, 5)
    ref, (h_ref, c_ref) = lstm(x, (h0, c0))
    layer = {"wx": jnp.asarray(lstm.weight_ih_l0.detach().numpy().T),
             "wh": jnp.asarray(lstm.weight_hh_l0.detach().numpy().T),
             "b": jnp.asarray((lstm.bias_ih_l0 + lstm.bias_hh_l0).detach().numpy())}
    hs, (h, c) = jax.jit(lambda p, xs, h, c: jl.lstm_layer(jnp, lax, p, xs, h, c))(
        layer, jnp.asarray(x.numpy()), jnp.asarray(h0[0].numpy()), jnp.asarray(c0[0].numpy()))
    np.testing.assert_allclose(np.asarray(hs), ref.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(np.asarray(h), h_ref[0].detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(np.asarray(c), c_ref[0].detach().numpy(), atol=1e-5)


def test_jax_adam_matches_torch_adam():
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    import jax.numpy as jnp
    import numpy as np
    from workloads import _jax_lstm as jl
    w0 = np.array([[0.5, -1.0], [2.0, 0.1]], dtype=np.float32)
    tw = torch.tensor(w0, requires_grad=True)
    opt = torch.optim.Adam([tw], lr=0.002)
    params = {"w": jnp.asarray(w0)}
    state = jl.adam_init(jax, jnp, params)
    for k in range(3):
        g = np.array([[0.3, -0.2], [k + 1.0, 1e-3]], dtype=np.float32)
        tw.grad = torch.tensor(g)
        opt.step()
        params, state = jl.adam(jax, jnp, params, {"w": jnp.asarray(g)}, state, 0.002)
    np.testing.assert_allclose(np.asarray(params["w"]), tw.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_clip_by_global_norm_scales_only_above_the_limit():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import numpy as np
    from workloads import _jax_lstm as jl
    grads = {"a": jnp.asarray([3.0, 0.0]), "b": jnp.asarray([[4.0]])}  # global norm 5
    clipped, norm = jl.clip_by_global_norm(jax, jnp, grads, 2.5)
    assert float(norm) == pytest.approx(5.0)
    np.testing.assert_allclose(np.asarray(clipped["a"]), [1.5, 0.0], rtol=1e-6)
    same, _ = jl.clip_by_global_norm(jax, jnp, grads, 10.0)
    np.testing.assert_allclose(np.asarray(same["b"]), [[4.0]])
