"""Source-003 workloads (bench/workloads/s003_*.py): every suite cell through the real harness with
tiny shapes, the two published code defects (as-published vs corrected variants), and the real-work
check of every cell (bench/real_work.py): as the defects leave it, and failing a cell whose
backward pass is skipped."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reprokit.catalog.suites import load_suite
from reprokit.plan.plan import bench_facts

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from workloads import _lm003  # noqa: E402

TINY = {"batch": 4, "seq_len": 6, "hidden": 8, "emb": 8, "layers": 3, "vocab": 50,
        "corpus_tokens": 2000}
BUDGET = {"min_samples": 3, "max_samples": 50, "time_budget_s": 0, "warmup": 1}
SUITE_CELLS = [c for c in load_suite("stacked-lstm-2019").cells]


def _job_cell(cell):
    params = dict(cell.params)
    params.update(TINY)
    return {"id": cell.id, "source": cell.source, "workload": cell.workload,
            "variant": cell.variant, "params": params, "metrics": list(cell.metrics),
            "budget": BUDGET, "protocol": "budget", "timeout_s": 300}


def _write_job(d, cells):
    job = {"schema_version": 1, "run_id": "test-003", "stack": "host", "kit": {},
           "out_dir": str(d / "cells"), "facts": bench_facts(), "device": "cpu",
           "cells": [_job_cell(c) for c in cells]}
    path = d / "job.json"
    path.write_text(json.dumps(job))
    return path


def _harness(job_path, *extra, env=None):
    return subprocess.run([sys.executable, str(BENCH / "harness.py"), str(job_path), *extra],
                          capture_output=True, text=True, timeout=600, env=env)


def _result(d, cell_id):
    path = d / "cells" / (cell_id.replace("/", "__") + ".json")
    return json.loads(path.read_text()) if path.exists() else None


@pytest.fixture(scope="module")
def harness_results(tmp_path_factory):
    """Every suite cell through the real harness. One harness process per framework runs all of
    that framework's cells (the harness's own loop over a job), the two processes side by side:
    a process per cell would spend most of this test's time importing the frameworks again.
    test_single_cell_flag covers `--cell`."""
    jobs = {}
    for fw in ("tensorflow", "pytorch"):
        d = tmp_path_factory.mktemp("s003-" + fw)
        jobs[fw] = (d, _write_job(d, [c for c in SUITE_CELLS if c.framework == fw]))
    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = dict(zip(jobs, pool.map(lambda fw: _harness(jobs[fw][1]), list(jobs))))
    return {c.id: (procs[c.framework], _result(jobs[c.framework][0], c.id)) for c in SUITE_CELLS}


def test_single_cell_flag(tmp_path):
    """`harness.py JOB --cell ID` runs that cell only, in its own process."""
    cells = [c for c in SUITE_CELLS if c.framework == "pytorch"][:2]
    proc = _harness(_write_job(tmp_path, cells), "--cell", cells[1].id)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _result(tmp_path, cells[0].id) is None
    assert _result(tmp_path, cells[1].id)["status"] == "ok"


def test_suite_lists_every_variant_and_the_corrections():
    ids = {c.id for c in SUITE_CELLS}
    assert len(ids) == 39
    for v in ("graph_whileop_fine_grained", "graph_whileop_fine_grained_fixed"):
        assert {"003/tensorflow/%s/forward" % v, "003/tensorflow/%s/train" % v} <= ids
    for v in ("graph_fine_grained", "graph_static", "graph_cudnn", "eager_fine_grained",
              "eager_static", "eager_cudnn"):
        assert "003/tensorflow/%s_fixed/forward" % v in ids
    for v in ("eager_fine_grained", "eager_static", "eager_cudnn"):
        assert "003/pytorch/%s_fixed/forward" % v in ids
    for v in ("jit_fine_grained", "jit_static", "jit_fine_grained_fixed", "jit_static_fixed"):
        assert {"003/pytorch/%s/forward" % v, "003/pytorch/%s/train" % v} <= ids
    assert all(c.implemented for c in SUITE_CELLS)


@pytest.mark.parametrize("cell_id", [c.id for c in SUITE_CELLS])
def test_cell_runs_through_harness(harness_results, cell_id):
    proc, r = harness_results[cell_id]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert r is not None, proc.stdout + proc.stderr[-2000:]
    assert r["status"] == "ok", (r.get("reason"), r.get("traceback"))
    tpb, sps = r["metrics"]["time_per_batch"], r["metrics"]["seq_per_s"]
    assert len(tpb["samples"]) >= 3 and tpb["warmup"] == 1
    assert tpb["raw_seconds"] == sps["raw_seconds"]  # one set of batches, two views
    assert tpb["unit"] == "s" and sps["unit"] == "seq/s"
    for s, v in zip(sps["raw_seconds"], sps["samples"]):
        assert v == pytest.approx(TINY["batch"] / s)
    assert r["implementation"]["framework"] in ("torch", "tensorflow")
    assert r["implementation"]["framework_version"]
    ds = r["extra"]["dataset"]
    assert ds["stand_in"] is True and ds["vocab_size"] == TINY["vocab"] - 1
    assert ds["n_tokens"] == TINY["corpus_tokens"]
    assert r["extra"]["windows"]["stride"] == 3
    notes = " ".join(r["implementation"]["notes"])
    # an as-published cell with a defect its _fixed variant corrects says so
    as_published_bug = cell_id in ("003/tensorflow/graph_whileop_fine_grained/train",) or (
        "/jit_" in cell_id and "_fixed/" not in cell_id) or (
        cell_id.startswith("003/tensorflow/graph_") and cell_id.endswith("/forward")
        and "_fixed/" not in cell_id)
    assert ("AS PUBLISHED" in notes) == as_published_bug
    if "_fixed/forward" in cell_id:
        assert "corrected" in notes
        method = tpb["method"]
        if "/tensorflow/graph_" in cell_id:
            assert "logits.op" in method and "not fetched" in method
        elif "/pytorch/" in cell_id:
            assert "under torch.no_grad()" in method
        else:
            assert "GPU round trip" in method
    _assert_real_work(r)


def _assert_real_work(r):
    """An ok 003 cell records one ok real-work check, the same on both timed metrics."""
    tpb, sps = r["metrics"]["time_per_batch"], r["metrics"]["seq_per_s"]
    rw = tpb["real_work"]
    assert rw["ok"] and rw["reason"] is None and rw["checks"], rw
    assert all(c["ok"] for c in rw["checks"]), rw
    assert sps["real_work"] == rw
    assert rw["phase"] == r["params"]["phase"], rw
    if rw["phase"] == "forward":  # the last timed batch's logits against an untimed rerun
        (c,) = rw["checks"]
        assert c["timed"] > 0 and c["timed"] == pytest.approx(c["reference"], rel=1e-3)
    json.dumps(r, allow_nan=False)


def _parts(rw):
    """The train check's weight digests by part of the model."""
    return {c["part"]: c for c in rw["checks"] if "part" in c}


@pytest.mark.parametrize("variant", ["jit_fine_grained", "jit_static"])
def test_as_published_jit_train_keeps_the_lstm_and_embedding_still(harness_results, variant):
    """Defect d003-jit-broken seen by running: the loss does not depend on the LSTM or the
    embedding, which stay still over the timed steps; the head (its bias) trains."""
    _, r = harness_results["003/pytorch/%s/train" % variant]
    assert r["status"] == "ok", r.get("reason")
    parts = _parts(r["metrics"]["time_per_batch"]["real_work"])
    assert set(parts) == {"embedding", "rnn", "head"}
    for name in ("embedding", "rnn"):
        c = parts[name]
        assert c["ok"] and c["expected_still"] == "d003-jit-broken" and c["before"] == c["after"], c
        assert "defect seen by running" in c["seen"]
    assert parts["head"]["ok"] and "expected_still" not in parts["head"]
    assert parts["head"]["before"] != parts["head"]["after"]


@pytest.mark.parametrize("variant", ["jit_fine_grained_fixed", "jit_static_fixed", "eager_cudnn"])
def test_corrected_and_eager_train_move_every_part(harness_results, variant):
    _, r = harness_results["003/pytorch/%s/train" % variant]
    assert r["status"] == "ok", r.get("reason")
    parts = _parts(r["metrics"]["time_per_batch"]["real_work"])
    assert set(parts) == {"embedding", "rnn", "head"}
    for name, c in parts.items():
        assert c["ok"] and "expected_still" not in c and c["before"] != c["after"], (name, c)


def test_as_published_whileop_train_cell_trains_nothing_and_computes_the_forward(harness_results):
    """Defect d003-whileop-forward-only seen by running: no part moves; the forward it runs is real."""
    _, r = harness_results["003/tensorflow/graph_whileop_fine_grained/train"]
    assert r["status"] == "ok", r.get("reason")
    rw = r["metrics"]["time_per_batch"]["real_work"]
    parts = _parts(rw)
    assert {c["expected_still"] for c in parts.values()} == {"d003-whileop-forward-only"}
    assert set(parts) == {"embedding", "rnn", "head"}
    assert all(c["ok"] and c["before"] == c["after"] for c in parts.values())
    (out,) = [c for c in rw["checks"] if "timed" in c]
    assert out["ok"] and out["timed"] == pytest.approx(out["reference"], rel=1e-3)


@pytest.fixture(scope="module")
def skipped_backward(tmp_path_factory):
    """Two PyTorch train cells with torch.Tensor.backward patched to a no-op (a sitecustomize)."""
    pytest.importorskip("torch")
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(
        "import torch\n"
        "torch.Tensor.backward = lambda self, *a, **k: None  # the patch: no backward pass\n")
    d = tmp_path_factory.mktemp("s003-skipped")
    cells = [c for c in SUITE_CELLS
             if c.id in ("003/pytorch/eager_cudnn/train", "003/pytorch/jit_static/train")]
    proc = _harness(_write_job(d, cells), env=dict(os.environ, PYTHONPATH=str(site)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {c.id: _result(d, c.id) for c in cells}


def test_a_train_cell_that_skips_its_backward_pass_fails_its_check(skipped_backward):
    r = skipped_backward["003/pytorch/eager_cudnn/train"]
    assert r["status"] == "failed"
    assert r["reason"].startswith("RealWorkFailed: real-work check of time_per_batch and seq_per_s "
                                  "failed: the embedding weights did not change over the timed "
                                  "train steps"), r["reason"]
    rw = r["metrics"]["time_per_batch"]["real_work"]
    assert not rw["ok"] and r["metrics"]["seq_per_s"]["real_work"] == rw
    assert all(not c["ok"] and c["before"] == c["after"] for c in _parts(rw).values())


def test_an_as_published_jit_cell_whose_head_does_not_train_fails_its_check(skipped_backward):
    """The still LSTM and embedding are the published defect; a still head is not."""
    r = skipped_backward["003/pytorch/jit_static/train"]
    assert r["status"] == "failed"
    assert r["reason"].startswith("RealWorkFailed: real-work check of time_per_batch and seq_per_s "
                                  "failed: the head weights did not change"), r["reason"]
    parts = _parts(r["metrics"]["time_per_batch"]["real_work"])
    assert parts["embedding"]["ok"] and parts["rnn"]["ok"] and not parts["head"]["ok"]


def test_window_count_matches_section_4_1():
    assert _lm003.n_windows(929589, 50, 3) == 309846


def test_windows_overlap_with_stride_and_shifted_targets():
    from array import array
    tokens = array("i", range(100))
    xs, ys = _lm003.windows(tokens, 5, 3, 4)
    assert list(xs[:5]) == [0, 1, 2, 3, 4] and list(xs[5:10]) == [3, 4, 5, 6, 7]
    assert list(ys[:5]) == [1, 2, 3, 4, 5] and list(ys[15:20]) == [10, 11, 12, 13, 14]


# ---------------------------------------------------------------------------------------------
# Defect 4.3 item 2: the published JIT stack never updates h
# ---------------------------------------------------------------------------------------------
def _torch_model(variant, seed=0):
    torch = pytest.importorskip("torch")
    from workloads import s003_pytorch
    torch.manual_seed(seed)
    return torch, s003_pytorch, s003_pytorch.build_model(torch, variant, 50, 8, 8, 3)


def _batch(torch):
    g = torch.Generator().manual_seed(1)
    return (torch.randint(0, 50, (4, 6), generator=g), torch.randint(0, 50, (4, 6), generator=g))


@pytest.mark.parametrize("variant", ["jit_fine_grained", "jit_static"])
def test_as_published_jit_loss_does_not_depend_on_lstm(variant):
    torch, mod, model = _torch_model(variant)
    x, y = _batch(torch)
    loss = mod.loss_fn(torch, model(x), y)
    loss.backward()
    rnn_params = list(model.rnn.parameters())
    assert rnn_params
    assert all(p.grad is None or not p.grad.abs().sum() for p in rnn_params)
    # the head sees all-zero features: only its bias gets a gradient
    assert not model.head.weight.grad.abs().sum() and model.head.bias.grad.abs().sum() > 0
    before = model(x).detach()
    with torch.no_grad():
        for p in rnn_params:
            p.mul_(3.0).add_(0.5)
    assert torch.equal(model(x).detach(), before)


@pytest.mark.parametrize("variant", ["jit_fine_grained_fixed", "jit_static_fixed"])
def test_fixed_jit_trains_every_lstm_parameter(variant):
    torch, mod, model = _torch_model(variant)
    x, y = _batch(torch)
    mod.loss_fn(torch, model(x), y).backward()
    for name, p in model.rnn.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("fixed,eager", [("jit_fine_grained_fixed", "eager_fine_grained"),
                                         ("jit_static_fixed", "eager_static")])
def test_fixed_jit_computes_the_eager_network(fixed, eager):
    torch, _, ref = _torch_model(eager)
    _, _, model = _torch_model(fixed, seed=5)
    model.load_state_dict(ref.state_dict())
    x, _ = _batch(torch)
    assert torch.allclose(model(x), ref(x), atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Defect 4.3 item 1: the published while-op "train" rows run the forward step
# ---------------------------------------------------------------------------------------------
def _tf_step(variant, phase):
    tf = pytest.importorskip("tensorflow")
    import numpy as np
    from workloads import s003_tensorflow
    p = dict(_lm003.DEFAULTS, phase=phase, **{k: v for k, v in TINY.items()
                                               if k != "corpus_tokens"})
    rng = np.random.RandomState(0)
    x = rng.randint(0, 49, size=(8, 6)).astype(np.int64)
    y = rng.randint(0, 49, size=(8, 6)).astype(np.int64)
    return s003_tensorflow.build_step(tf, variant, phase, p, x, y)


@pytest.mark.parametrize("variant", ["graph_fine_grained", "graph_static", "graph_cudnn",
                                     "graph_whileop_fine_grained"])
def test_fixed_graph_forward_fetches_no_logits(variant):
    """Defect d003-graph-fetch corrected: the as-published forward returns the full logits to the
    host, the fixed one runs the op and returns nothing."""
    runner = _tf_step(variant, "forward")
    out = runner.step()
    runner.close()
    assert out.shape == (4 * 6, 50)
    fixed = _tf_step(variant + "_fixed", "forward")
    out = fixed.step()
    fixed.close()
    assert out is None and not fixed.trains


@pytest.mark.parametrize("variant", ["graph_fine_grained_fixed", "eager_static_fixed"])
def test_fixed_variants_without_a_train_defect_refuse_train(variant):
    with pytest.raises(ValueError, match="phase 'forward' only"):
        _tf_step(variant, "train")


def test_as_published_whileop_train_cell_updates_nothing():
    runner = _tf_step("graph_whileop_fine_grained", "train")
    before = runner.values()
    out = runner.step()
    after = runner.values()
    runner.close()
    assert not runner.trains
    assert out.shape == (4 * 6, 50)  # the full logits, as the forward fetch
    assert all((a == b).all() for a, b in zip(before, after))


@pytest.mark.parametrize("variant", ["graph_whileop_fine_grained_fixed", "graph_fine_grained"])
def test_training_cells_update_the_lstm(variant):
    runner = _tf_step(variant, "train")
    before = runner.values()
    runner.step()
    after = runner.values()
    used = len(after) - len(runner.model.extra_vars)
    runner.close()
    assert runner.trains
    # every used variable moves (Adam lr 1.0); the whileop's unused output variables stay put
    assert all((a != b).any() for a, b in zip(before[:used], after[:used]))
    assert all((a == b).all() for a, b in zip(before[used:], after[used:]))


# ---------------------------------------------------------------------------------------------
# The real-work check of the TF graph cells: the batch the in-graph iterator gave the last step
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["graph_fine_grained", "graph_whileop_fine_grained"])
def test_graph_reference_feeds_the_batch_the_iterator_gave(variant):
    """The reference of the as-published graph forward (which returns the full logits) feeds the
    batch that counting the steps names: it is the batch the in-graph iterator gave that step."""
    import numpy as np
    runner = _tf_step(variant, "forward")
    outs = [runner.step() for _ in range(2)]  # the 8 rows are two batches of 4
    try:
        for k, out in enumerate(outs):
            np.testing.assert_allclose(runner.logits_for(k), out, rtol=1e-6)
        assert not np.allclose(outs[0], outs[1])
    finally:
        runner.close()


def test_corrected_graph_forward_check_finds_the_iterator_where_the_steps_left_it():
    """The corrected graph forward returns no logits: its check runs the next batch through the
    in-graph iterator, which must be where the timed steps left it."""
    import numpy as np
    import real_work
    runner = _tf_step("graph_fine_grained_fixed", "forward")
    try:
        assert runner.step_op() is runner and runner.n_batches == 2
        np.testing.assert_allclose(runner.next_through_iterator(1), runner.logits_for(1), rtol=1e-6)
        # two steps (one above, one by the check) spent the data (no repeat): the check sees the
        # end and starts the iterator again at batch 0
        np.testing.assert_allclose(runner.next_through_iterator(2), runner.logits_for(0), rtol=1e-6)
        with pytest.raises(real_work.RealWorkFailed, match="in-graph iterator is not where 3 steps"):
            runner.next_through_iterator(3)  # one batch was taken, not three
    finally:
        runner.close()
