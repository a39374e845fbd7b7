"""Source 004 workloads (bench/workloads/s004_tensorflow.py, s004_pytorch.py) through the real
harness with tiny shapes: the three TensorFlow cells build and train, the PyTorch cell runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import suite_params

from reprokit.analysis import published_metric
from reprokit.catalog import suites
from reprokit.plan.plan import bench_facts

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
TF_METRICS = ["train_wps", "time_per_batch"]
# every batch of the "repeat" data holds the same windows, so a few SGD steps must lower the loss
TINY_TF = {"batch": 4, "seq_len": 5, "hidden": 8, "layers": 2, "vocab": 20, "keep_prob": 1.0,
           "dataset": "repeat", "n_tokens": 400, "gpus": 0}
TINY_PT = dict(suite_params("s004_pytorch"), batch=4, seq_len=5, hidden=8, layers=2, vocab=20,
               n_tokens=400)


def _cell(workload, variant, name, params, metrics, samples=3):
    return {"id": "004/%s/%s" % (variant, name), "source": "004", "workload": workload,
            "variant": variant, "params": params, "metrics": metrics,
            "budget": {"min_samples": samples, "time_budget_s": 0, "warmup": 1}}


def _run(tmp, name, cells, env=None):
    job = {"schema_version": 1, "run_id": "test-004", "stack": "test", "kit": {"version": "test"},
           "out_dir": str(tmp / "cells"), "facts": bench_facts(), "device": "cpu", "cells": cells}
    path = tmp / ("%s.json" % name)
    path.write_text(json.dumps(job))
    proc = subprocess.run([sys.executable, str(BENCH / "harness.py"), str(path)],
                          capture_output=True, text=True, timeout=600, cwd=str(BENCH),
                          env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict((c["id"].split("/", 1)[1],
                 json.loads((tmp / "cells" / (c["id"].replace("/", "__") + ".json")).read_text()))
                for c in cells)


@pytest.fixture(scope="module")
def tf_results(tmp_path_factory):
    pytest.importorskip("tensorflow")
    w = "s004_tensorflow"
    cells = [_cell(w, v, "repeat", TINY_TF, TF_METRICS, samples=6)
             for v in ("basic", "block", "cudnn")]
    cells += [
        _cell(w, "basic", "ptb-two-towers", dict(TINY_TF, dataset="ptb", n_tokens=2000,
                                                 keep_prob=0.35, gpus=2,
                                                 tower_devices=["/cpu:0", "/cpu:0"]), TF_METRICS),
        _cell(w, "basic", "needs-gpu", dict(TINY_TF, gpus=2), TF_METRICS),
        _cell(w, "block", "one-gpu-row", dict(TINY_TF, gpus=1), TF_METRICS),
        _cell(w, "block", "bad", dict(TINY_TF, hiden=8), TF_METRICS),
    ]
    return _run(tmp_path_factory.mktemp("s004tf"), "tf", cells)


@pytest.fixture(scope="module")
def pt_results(tmp_path_factory):
    pytest.importorskip("torch")
    w = "s004_pytorch"
    cells = [_cell(w, "word_language_model", "tiny", TINY_PT, ["time_per_batch"]),
             _cell(w, "word_language_model", "wrong-vocab", dict(TINY_PT, vocab=33278, n_tokens=
                                                                  400), ["time_per_batch"])]
    return _run(tmp_path_factory.mktemp("s004pt"), "pt", cells)


@pytest.fixture(scope="module")
def pt_no_backward(tmp_path_factory):
    """The PyTorch cell with a backward pass that propagates nothing (a sitecustomize module makes
    torch.Tensor.backward back-propagate loss * 0: every gradient zero, so the SGD step adds zero).
    Skipping backward altogether would leave the gradients None and crash the update instead."""
    pytest.importorskip("torch")
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(
        "import torch\n"
        "_backward = torch.Tensor.backward\n"
        "torch.Tensor.backward = lambda self, *a, **k: _backward(self * 0, *a, **k)  # the patch\n")
    cell = _cell("s004_pytorch", "word_language_model", "tiny", TINY_PT, ["time_per_batch"])
    return _run(tmp_path_factory.mktemp("s004pt-nobw"), "pt", [cell],
                env={"PYTHONPATH": str(site)})["word_language_model/tiny"]


def _check_timed(r, words):
    assert r["status"] == "ok", r.get("traceback")
    wps, ms = r["metrics"]["train_wps"], r["metrics"]["time_per_batch"]
    assert wps["unit"] == "words/s" and ms["unit"] == "ms"
    assert len(wps["samples"]) >= 3 and wps["raw_seconds"] == ms["raw_seconds"]
    assert wps["items_per_sample"] == words
    assert wps["samples"] == pytest.approx([words / s for s in wps["raw_seconds"]])
    assert ms["samples"] == pytest.approx([1000 * s for s in ms["raw_seconds"]])
    cum = r["extra"]["cumulative_wps"]
    raw = wps["raw_seconds"]
    assert cum["timed_steps"] == pytest.approx(words * len(raw) / sum(raw))
    _check_real_work(r, ["train_wps", "time_per_batch"])


def _check_real_work(r, names):
    """The metrics of one set of samples carry one check: every part of the weights
    (embedding, LSTM, softmax / decoder) moved over the timed steps."""
    rw = r["metrics"][names[0]]["real_work"]
    assert rw["ok"] and rw["phase"] == "train", rw
    assert all(r["metrics"][n]["real_work"] == rw for n in names)
    assert len(rw["checks"]) == 3 and {c["part"] for c in rw["checks"]} >= {"embedding", "lstm"}
    assert all(c["ok"] and c["before"] != c["after"] for c in rw["checks"])


@pytest.mark.parametrize("variant", ["basic", "block", "cudnn"])
def test_tf_variant_builds_and_trains(tf_results, variant):
    r = tf_results["%s/repeat" % variant]
    _check_timed(r, 4 * 5)
    losses = r["extra"]["loss"]
    assert len(losses) == 6
    assert losses[-1] < losses[0] - 0.5 and losses[-1] < min(losses[:3])
    assert r["extra"]["model"]["parameters"] == (
        20 * 8 + 2 * (16 * 32 + 32) + 8 * 20 + 20)  # embedding, 2 cells, softmax w and b


def test_block_gradient_matches_basic(tf_results):
    """LSTMBlockCell's gradient is registered by the workload: same arithmetic, same init order,
    so its losses must follow BasicLSTMCell's step for step."""
    basic = tf_results["basic/repeat"]["extra"]["loss"]
    block = tf_results["block/repeat"]["extra"]["loss"]
    assert block == pytest.approx(basic, rel=1e-4)


def test_tf_records_the_tutorials_cumulative_wps(tf_results):
    r = tf_results["basic/repeat"]
    m = r["metrics"]["train_wps"]
    ap = m["as_published"]
    assert ap["definition"] == "cumulative_wps_at_last_print" and ap["figure"] == "rate"
    assert ap["segments"][0]["seconds"] == m["warmup_seconds"] + m["raw_seconds"]
    assert ap["segments"][0]["items_per_iteration"] == m["items_per_sample"]
    assert published_metric.summary(m)["consistent"]


def test_tf_substitutes_recorded(tf_results):
    subs = {v: " ".join(s["used"] for s in tf_results["%s/repeat" % v]["implementation"]
                        ["substitutes"]) for v in ("basic", "block", "cudnn")}
    assert "LSTMBlockCell" in subs["block"]
    assert "BlockLSTM" in subs["cudnn"]
    assert "tf.compat.v1" in subs["basic"]
    assert "CPU substitute" in tf_results["cudnn/repeat"]["metrics"]["train_wps"]["method"]


def test_tf_ptb_stand_in_dropout_two_towers(tf_results):
    r = tf_results["basic/ptb-two-towers"]
    _check_timed(r, 2 * 4 * 5)  # each tower trains on its own batch: words count twice
    assert r["extra"]["model"]["towers"] == 2
    assert r["extra"]["dataset"]["name"] == "ptb"
    assert r["extra"]["dataset"]["overrides"] == {"vocab_size": 20, "n_tokens": 2000}
    assert any("towers" in s["used"] for s in r["implementation"]["substitutes"])


def test_tf_failures_are_data(tf_results):
    assert tf_results["basic/needs-gpu"]["status"] == "failed"
    assert "cell needs 2 GPUs, this host has 0" in tf_results["basic/needs-gpu"]["reason"]
    assert tf_results["block/bad"]["status"] == "failed"
    assert "hiden" in tf_results["block/bad"]["reason"]


def test_tf_one_gpu_row_runs_on_the_jobs_device(tf_results):
    """A row published on one GPU runs on the job's device (here the CPU) as 000/001's rows do."""
    r = tf_results["block/one-gpu-row"]
    assert r["status"] == "ok", r.get("traceback")
    assert r["device"] == "cpu" and r["extra"]["model"]["devices"] == ["/cpu:0"]
    assert any("ran on one GPU" in n for n in r["implementation"]["notes"])


def test_pytorch_cell(pt_results):
    r = pt_results["word_language_model/tiny"]
    assert r["status"] == "ok", r.get("traceback")
    m = r["metrics"]["time_per_batch"]
    assert m["unit"] == "ms" and len(m["samples"]) >= 3
    assert all(0 < x < 20 for x in r["extra"]["loss"])
    assert r["extra"]["model"]["parameters"] == (20 * 8 + 2 * (4 * 8 * 16 + 8 * 8) + 8 * 20 + 20)
    _check_real_work(r, ["time_per_batch"])
    assert {c["part"] for c in m["real_work"]["checks"]} == {"embedding", "lstm", "decoder"}
    used = " ".join(s["used"] for s in r["implementation"]["substitutes"])
    assert "WikiText-2" in used and "33,278" in used
    ap = m["as_published"]  # the example's first log window: 201 batches / 200, wall time
    assert ap["definition"] == "log_window_ms_per_batch" and ap["planned"]["iterations_per_segment"] == 201
    assert ap["segments"][0]["seconds"] == m["warmup_seconds"] + m["raw_seconds"]
    s = published_metric.summary(m)
    assert s["consistent"] and not s["complete"] and s["label"].startswith("partial estimate")
    bad = pt_results["word_language_model/wrong-vocab"]
    assert bad["status"] == "failed" and "33278" in bad["reason"]


def test_pytorch_cell_whose_backward_propagates_nothing_fails_its_check(pt_no_backward):
    r = pt_no_backward
    assert r["status"] == "failed"
    assert r["reason"].startswith("RealWorkFailed: real-work check of time_per_batch failed: the "
                                  "decoder weights did not change over the timed train steps"), r["reason"]
    rw = r["metrics"]["time_per_batch"]["real_work"]  # the samples stay recorded beside the check
    assert not rw["ok"] and r["metrics"]["time_per_batch"]["raw_seconds"]
    assert all(not c["ok"] and c["before"] == c["after"] for c in rw["checks"])


def test_suite_gpu_needs_and_pytorch_cell():
    suite = suites.load_suite("cudnn-lstm-2018")
    assert all(c.implemented for c in suite.cells)
    tf_cells = {c.id: c for c in suite.cells if c.workload == "s004_tensorflow"}
    assert tf_cells["004/tensorflow/ptb_large_basic/g2"].needs_gpus == 2
    for v in ("basic", "block", "cudnn"):  # one-GPU rows: the run's device, as the PyTorch row
        assert tf_cells["004/tensorflow/ptb_large_%s/g1" % v].needs_gpus == 0
        assert tf_cells["004/tensorflow/ptb_large_%s/g1" % v].device is None
    assert not any(c.endswith("/g0") for c in tf_cells)  # no CPU-only duplicate of the g1 rows
    pt = suite.cell("004/pytorch/word_lm_large/b20-s35-h1500")
    assert pt.params["vocab"] == 33278 and pt.needs_gpus == 0 and pt.device is None


