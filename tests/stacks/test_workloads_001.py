"""Source 001 workload (bench/workloads/s001_pytorch.py) through the real harness, tiny shapes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import suite_params

from reprokit.plan.plan import bench_facts

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
METRICS = ["train_wps", "eval_wps", "train_wps_synced", "eval_wps_synced"]
# the suite cell's params (the published ones) at tiny sizes; the full-size vocabulary check left out
_PUBLISHED = {k: v for k, v in suite_params("s001_pytorch").items()
              if k not in ("vocab", "published_iterations")}
TINY = dict(_PUBLISHED, vocab_override=50, emb=16, hidden=16, batch=4, seq_len=8)


def _cell(cell_id, params):
    return {"id": cell_id, "source": "001", "workload": "s001_pytorch", "params": params,
            "metrics": METRICS, "budget": {"min_samples": 3, "time_budget_s": 0}}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("s001")
    job = {"schema_version": 1, "run_id": "test-001", "stack": "torch-0.1",
           "kit": {"version": "test"}, "out_dir": str(tmp / "cells"), "facts": bench_facts(), "device": "cpu",
           "cells": [_cell("001/pytorch/tiny", TINY),
                     _cell("001/pytorch/bad", dict(TINY, hiden=16)),
                     _cell("001/pytorch/wrong-vocab", dict(TINY, vocab=33279))]}
    path = tmp / "job.json"
    path.write_text(json.dumps(job))
    proc = subprocess.run([sys.executable, str(BENCH / "harness.py"), str(path)],
                          capture_output=True, text=True, timeout=600)
    out = {}
    for name in ("tiny", "bad", "wrong-vocab"):
        out[name] = json.loads((tmp / "cells" / ("001__pytorch__%s.json" % name)).read_text())
    out["returncode"] = proc.returncode
    return out


def test_tiny_cell_ok_with_all_metrics(results):
    r = results["tiny"]
    assert r["status"] == "ok", r.get("traceback")
    for name in METRICS:
        m = r["metrics"][name]
        assert m["unit"] == "words/s"
        assert m["items_per_sample"] == 4 * 8
        assert len(m["samples"]) >= 3 and len(m["raw_seconds"]) == len(m["samples"])
        assert all(v > 0 for v in m["samples"])
        assert m["samples"] == pytest.approx([32 / s for s in m["raw_seconds"]])
        assert m["warmup"] >= 1
    # CPU: one timed loop per kind, recorded under both names (not two runs)
    for kind in ("train", "eval"):
        a, b = r["metrics"][kind + "_wps"], r["metrics"][kind + "_wps_synced"]
        assert a["raw_seconds"] == b["raw_seconds"]
        assert "as published" in a["sync"] and "synchronous" in b["sync"]


def test_tiny_cell_records_a_real_work_check_on_every_timed_metric(results):
    """Train moves every part of the weights (embedding = tied softmax weight, LSTM,
    softmax bias) over the timed batches; eval's last timed summed loss equals the same batch run
    again untimed from the same carried state. On the CPU one loop per kind gives both names, so
    both carry the same check."""
    m = results["tiny"]["metrics"]
    for kind in ("train", "eval"):
        rw = m[kind + "_wps"]["real_work"]
        assert rw["ok"] and rw == m[kind + "_wps_synced"]["real_work"]
    train = m["train_wps"]["real_work"]
    assert train["phase"] == "train"
    assert [c["part"] for c in train["checks"]] == ["embedding", "lstm", "softmax"]
    assert all(c["ok"] and c["before"] != c["after"] for c in train["checks"])
    ev = m["eval_wps"]["real_work"]
    (check,) = ev["checks"]
    assert ev["phase"] == "forward" and check["timed"] > 0
    assert check["timed"] == pytest.approx(check["reference"], rel=1e-6)


def test_tiny_cell_records_the_published_per_epoch_figure(results):
    """train_wps / eval_wps carry the source's figure (tokens / summed seconds per epoch, mean over 10
    epochs), computed from every batch of the epoch the cell ran (its warm-up batches first)."""
    from reprokit.analysis import published_metric

    r = results["tiny"]
    for name, split in (("train_wps", "train"), ("eval_wps", "valid")):
        m = r["metrics"][name]
        ap = m["as_published"]
        assert ap["definition"] == "tokens_over_epoch_seconds_mean" and ap["planned"]["segments"] == 10
        assert ap["planned"]["iterations_per_segment"] == r["extra"]["model"]["batches_per_epoch"][
            "train" if split == "train" else "valid"]
        seconds = [x for seg in ap["segments"] for x in seg["seconds"]]
        assert seconds == m["warmup_seconds"] + m["raw_seconds"]
        s = published_metric.summary(m)
        assert s["consistent"] and not s["complete"] and s["label"].startswith("partial estimate")


def test_tiny_cell_provenance(results):
    r = results["tiny"]
    ds = r["extra"]["dataset"]
    assert ds["train"]["stand_in"] is True and ds["valid"]["split"] == "valid"
    assert ds["train"]["name"] == "wikitext-2-kawakami"
    assert ds["train"]["overrides"] == {"vocab_size": 50}
    assert ds["valid"]["n_tokens"] == 216347  # real count kept, only the vocabulary shrunk
    model = r["extra"]["model"]
    v, e, h = 51, 16, 16
    assert model["vocab_model"] == v and model["tied"] is True
    # tied: one V x E matrix shared by embedding and softmax, plus LSTM weights and biases
    assert model["parameters"] == v * e + 4 * h * (e + h) + 8 * h + v
    assert "mean" in r["extra"]["aggregation"]["published"]
    used = " ".join(s["used"] for s in r["implementation"]["substitutes"])
    assert "stand-in" in used
    assert any("synchronous" in n for n in r["implementation"]["notes"])
    losses = r["extra"]["loss_per_token"]
    assert len(losses["train"]) == len(r["metrics"]["train_wps"]["samples"])
    assert all(0 < x < 10 for x in losses["train"] + losses["eval"])


def test_bad_params_fail_as_data(results):
    assert results["returncode"] in (0, 1)  # the harness records failures, it does not crash
    assert results["bad"]["status"] == "failed"
    assert "hiden" in results["bad"]["reason"]
    assert results["wrong-vocab"]["status"] == "failed"
    assert "33279" in results["wrong-vocab"]["reason"]


def test_published_shapes_come_from_the_suite_and_the_workload_keeps_no_copy():
    sys.path.insert(0, str(BENCH))
    try:
        from workloads import s001_pytorch as w
    finally:
        sys.path.remove(str(BENCH))
    p = suite_params("s001_pytorch")
    assert (p["emb"], p["hidden"], p["layers"], p["batch"], p["seq_len"]) == (1024, 1024, 1, 128, 128)
    assert p["lr"] == 0.002 and p["tied"] is True and p["dataset"] == "wikitext-2"
    d = w.DEFAULTS
    given = ("emb", "hidden", "layers", "batch", "lr", "tied", "dataset")
    assert all(d[k] == w.params_.GIVEN for k in given), {k: d[k] for k in given}
    assert d["vocab_override"] is None and d["reading"] == "kawakami"


def test_layout_continues_streams():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(BENCH))
    try:
        from array import array

        from workloads import s001_pytorch as w
    finally:
        sys.path.remove(str(BENCH))
    tokens = array("i", range(1000))
    x, t, nb = w._layout(torch, tokens, batch=4, seq=8)
    assert nb == 999 // 32 and tuple(x.shape) == (nb * 4, 8)
    assert torch.equal(t, x + 1)  # targets are the next token
    for b in range(nb - 1):
        for r in range(4):
            assert int(x[(b + 1) * 4 + r, 0]) == int(x[b * 4 + r, -1]) + 1


def _in_process_ctx(device, params):
    sys.path.insert(0, str(BENCH))
    try:
        import harness
        from workloads import s001_pytorch as w
    finally:
        sys.path.remove(str(BENCH))
    cell = {"id": "001/pytorch/in-process", "workload": "s001_pytorch", "params": params,
            "budget": {"min_samples": 3, "time_budget_s": 0}}
    return harness.CellContext(cell, {"device": device, "facts": bench_facts()}), w


def test_gpu_requested_without_cuda_fails_clearly():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    ctx, w = _in_process_ctx("gpu", TINY)
    with pytest.raises(RuntimeError, match="GPU"):
        w.run(ctx)


def test_gpu_branch_logic_with_cuda_calls_stubbed(monkeypatch):
    """Not a GPU run: CUDA calls are replaced by no-ops on the CPU to check the GPU branch's
    bookkeeping (two separate loops per kind, synchronize inside the second one only)."""
    torch = pytest.importorskip("torch")
    syncs = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: syncs.append(1))
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", torch.backends.cudnn.benchmark)
    ctx, w = _in_process_ctx("gpu", TINY)
    w.run(ctx)
    assert torch.backends.cudnn.benchmark is True
    m = ctx.metrics
    assert set(m) == set(METRICS)
    for kind in ("train", "eval"):
        a, b = m[kind + "_wps"], m[kind + "_wps_synced"]
        assert a["raw_seconds"] != b["raw_seconds"]  # two loops, not one recorded twice
        assert "none (as published)" in a["sync"] and "synchronize()" in b["sync"]
    # each loop's samples carry their own real-work check
    for kind in ("train", "eval"):
        a, b = m[kind + "_wps"]["real_work"], m[kind + "_wps_synced"]["real_work"]
        assert a["ok"] and b["ok"] and a is not b
    # the synced train loop's digests are its own (taken after its own warm-up), not the first's
    first, second = m["train_wps"]["real_work"]["checks"], m["train_wps_synced"]["real_work"]["checks"]
    assert all(a["after"] != b["before"] != b["after"] for a, b in zip(first, second))
    n_synced = sum(len(m[k]["raw_seconds"]) + m[k]["warmup"] for k in METRICS if "synced" in k)
    assert len(syncs) == n_synced
    # what is known of this GPU path, for the torch that ran it (>= 0.4.1 here: the H100 session)
    assert any("ran on one GPU during development" in n for n in ctx.implementation["notes"])
