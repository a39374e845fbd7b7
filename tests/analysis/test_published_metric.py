"""Every published number is compared with the figure computed as its source defined it.

One test per definition, on synthetic per-iteration seconds: the workload's own recording function
(bench/workloads/*) builds the `as_published` record through the real harness CellContext, the verdict
(reprokit.analysis.verdicts) then compares the published number with that figure, whose value the test
computes by hand from the same seconds. The seconds are chosen so that the figure and the median of the
per-iteration samples differ (slow first iterations, stalls, time between iterations): on a kit that
compares medians these tests fail.
"""

import copy
import json
import math
import statistics
import sys
from pathlib import Path

import pytest

from reprokit import formats, validate
from reprokit.analysis import published_metric, verdicts
from reprokit.catalog import suites
from reprokit.plan.plan import bench_facts
from reprokit.report.report_rows import row as report_row
from tests import models

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import harness  # noqa: E402
from workloads import _lm003, _lstm000, s001_pytorch, s002_keras, s004_pytorch, s004_tensorflow  # noqa: E402

M40_RUN = REPO / "tests" / "data" / "runs" / "m40-same"
HASWELL_RUN = REPO / "tests" / "data" / "runs" / "haswell-same"


def number(nid):
    src = nid.split("-")[0]
    return next(n for n in suites.load_published(src) if n["id"] == nid)


def context(device="gpu", params=None):
    return harness.CellContext({"id": "test/cell", "params": params or {}},
                               {"device": device, "facts": bench_facts()})


def timed(warm, raw, wall=None):
    return {"raw_seconds": list(raw), "warmup_seconds": list(warm), "stop_reason": "max_samples",
            "wall_seconds": sum(warm) + sum(raw) if wall is None else wall}


def cell_for(n, ctx, device="gpu", framework="tensorflow", version=None, params=None):
    """The cell result of `n`'s cell with the metrics `ctx` recorded."""
    return models.cell({
        "schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": "synthetic",
        "cell_id": n["cell"], "source": n["provenance"]["source"], "stack": "synthetic",
        "workload": "synthetic", "status": "ok", "reason": None, "device": device, "params": params or {},
        "implementation": {"framework": framework,
                           "framework_version": version or n["environment"]["framework_version"],
                           "substitutes": [], "notes": []},
        "metrics": copy.deepcopy(ctx.metrics)})


def stored_run(path, cells=()):
    """The run.json of a stored run with `cells` as its results."""
    return models.run(json.loads((path / "run.json").read_text()), cells=cells)


def gpu_run(name):
    return models.run(host={"gpus": [{"index": 0, "name": name}]})


def test_000_mean_over_the_published_1000_iterations():
    """000 printed elapsed / (1000 x 128): the mean. 20 stalls in 1000 iterations leave the median in the
    band of 000-L012 (cuDNN train, 0.1404 ms) and put the mean above it."""
    ctx = context()
    raw = [0.018] * 980 + [0.5] * 20
    ctx.record_timed("train_time_per_example", timed([], raw), "ms", "ms_per_item", 128, "synthetic")
    _lstm000.record_as_published(ctx, "train_time_per_example", 128)
    n = number("000-L012")
    run = stored_run(M40_RUN)
    cell = cell_for(n, ctx, version="1.2.1", params={"batch": 128, "seq_len": 30, "hidden": 512})
    assert not validate.errors("cell_result", cell.doc)
    v = verdicts.verdict(n, cell, run)
    mean_ms = 1000 * sum(raw) / (1000 * 128)
    assert v["measured"]["median"] == pytest.approx(mean_ms)
    assert statistics.median(cell.metrics["train_time_per_example"]["samples"]) == pytest.approx(0.140625)
    assert v["basis"]["statistic"] == "as_published" and v["basis"]["definition"] == "mean_over_iterations"
    # one process: INCONCLUSIVE, the band rule says DEVIATES_SLOWER (the median alone would be REPRODUCED)
    assert v["verdict"] == "INCONCLUSIVE" and v["undecided_rule"] == "DEVIATES_SLOWER", v["reason"]
    assert "figure as published" in v["reason"]
    r = report_row(n, v, cell)
    assert r["measured"] == pytest.approx(mean_ms) and r["robust_median"] == pytest.approx(0.140625)
    assert r["basis"]["label"].startswith("as published: mean over 1,000 iterations")


def test_000_fewer_iterations_are_a_labelled_partial_estimate():
    ctx = context()
    raw = [0.018] * 40 + [0.5] * 2
    ctx.record_timed("train_time_per_example", timed([], raw), "ms", "ms_per_item", 128, "synthetic")
    _lstm000.record_as_published(ctx, "train_time_per_example", 128)
    ap = ctx.metrics["train_time_per_example"]["as_published"]
    assert ap["complete"] is False
    s = published_metric.summary(ctx.metrics["train_time_per_example"])
    assert s["median"] == pytest.approx(1000 * sum(raw) / (42 * 128))  # mean over what ran
    assert s["label"].startswith("partial estimate, not the published figure: 42 of 1,000 iterations")
    v = verdicts.verdict(number("000-L012"), cell_for(number("000-L012"), ctx), gpu_run("Tesla M40 24GB"))
    assert v["basis"]["statistic"] == "partial" and "partial estimate" in v["reason"]


def test_001_tokens_over_epoch_seconds_averaged_over_10_epochs():
    """001: per epoch, 126 x 16,384 target tokens / the epoch's summed batch seconds, then the mean of 10
    epochs; a slow first batch per epoch (and slower later epochs) move it away from the median batch."""
    ctx = context(params={})
    epochs = [[2.0 + e / 10] + [0.03 + e / 1000] * 125 for e in range(10)]
    raw = [s for ep in epochs for s in ep]
    ctx.record_timed("train_wps", timed([], raw), "words/s", "items_per_s", 16384, "synthetic")
    s001_pytorch.record_as_published(ctx, "train_wps", timed([], raw), 126, 128, 128, 10)
    n = number("001-L050")
    v = verdicts.verdict(n, cell_for(n, ctx, framework="torch"), gpu_run("Tesla P100-SXM2-16GB"))
    figure = statistics.fmean(126 * 16384 / sum(ep) for ep in epochs)
    assert v["measured"]["median"] == pytest.approx(figure)
    assert figure < 0.7 * statistics.median(ctx.metrics["train_wps"]["samples"])
    assert v["basis"]["statistic"] == "as_published"
    assert v["measured"]["label"].startswith("as published: tokens / summed seconds per epoch, mean over 10")


def test_001_one_partial_epoch_after_a_warm_up_batch():
    ctx = context()
    warm, raw = [1.5], [0.03] * 20
    t = timed(warm, raw)
    ctx.record_timed("eval_wps", t, "words/s", "items_per_s", 16384, "synthetic")
    s001_pytorch.record_as_published(ctx, "eval_wps", t, 13, 128, 128, 10)
    ap = ctx.metrics["eval_wps"]["as_published"]
    assert [len(s["seconds"]) for s in ap["segments"]] == [13, 8]  # the warm-up batch is batch 0
    s = published_metric.summary(ctx.metrics["eval_wps"])
    first = 13 * 16384 / (1.5 + 12 * 0.03)
    second = 13 * 16384 / (13 * 0.03)  # 8 batches ran, 5 more at their mean
    assert s["median"] == pytest.approx((first + second) / 2)
    assert not s["complete"] and "2 of 10 epochs ran, with 13, 8 of 13 batches" in s["label"]


def test_002_whole_epoch_wall_time_with_setup_and_callbacks():
    """002: TimeHistory's wall time of a whole fit epoch, the first batch's set-up and the time between
    batches included, not per-batch seconds scaled to an epoch; Keras's us/step = that / samples."""
    ctx = context(device="cpu")
    warm, raw = [3.0], [0.05] * 389  # 50,000 samples: 390 full batches of 128
    t = timed(warm, raw, wall=3.0 + 389 * 0.05 + 390 * 0.002)
    for name, unit in (("time_per_epoch", "s"), ("time_per_sample", "us")):
        ctx.record_timed(name, t, unit, "s", 128, "synthetic")
    s002_keras.record_as_published(ctx, t, 50000, 128)
    epoch = 3.0 + 389 * 0.05 + 390 * 0.002
    cell_id = "002/keras-mxnet/lstm128-unroll/synthetic-b128-g0"
    n = next(x for x in suites.load_published("002")
             if x["cell"] == cell_id and x["metric"] == "time_per_epoch")
    v = verdicts.verdict(n, cell_for(n, ctx, device="cpu", framework="mxnet", version="1.2.0",
                                     params={"dataset": "synthetic", "batch": 128, "gpus": 0}))
    assert v["measured"]["median"] == pytest.approx(epoch)
    assert v["basis"]["definition"] == "epoch_wall_time" and v["basis"]["statistic"] == "as_published"
    per_sample = published_metric.summary(ctx.metrics["time_per_sample"])
    assert per_sample["median"] == pytest.approx(1e6 * epoch / 50000)


def test_003_elapsed_of_the_50_batches_after_warm_up():
    """003 printed Elapsed (seconds of 50 batches after 10 untimed warm-up ones), Avg = Elapsed / 50 and
    seq/s = 50 x 128 / Elapsed. 003-L380 (0.2406 s per batch, on the same 6-core Haswell as the stored
    run's host): four slow batches leave the median in its band and put the mean above it."""
    ctx = context(device="cpu", params={"published_iterations": {"default": 50}})
    raw = [0.24] * 36 + [0.5] * 14
    t = timed([0.9] * 10, raw)  # the 10 warm-up batches are not part of Elapsed
    _lm003.record(ctx, t, 128, "synthetic", None)
    n = number("003-L380")
    run = stored_run(HASWELL_RUN)
    cell = cell_for(n, ctx, device="cpu", framework="torch", version="1.3.0",
                    params={"batch": 128, "seq_len": 50, "hidden": 256})
    v = verdicts.verdict(n, cell, run)
    assert v["measured"]["median"] == pytest.approx(sum(raw) / 50)
    assert v["basis"]["statistic"] == "as_published", v["basis"]
    # one process: INCONCLUSIVE, the band rule says DEVIATES_SLOWER (the median batch alone: REPRODUCED)
    assert v["verdict"] == "INCONCLUSIVE" and v["undecided_rule"] == "DEVIATES_SLOWER", v["reason"]
    seq = published_metric.summary(ctx.metrics["seq_per_s"])
    assert seq["median"] == pytest.approx(50 * 128 / sum(raw)) and seq["complete"]


def test_004_cumulative_words_per_second_at_the_tutorials_last_print():
    """004: run_epoch printed steps x 700 / seconds since the epoch start; its last print of a 1,327-step
    epoch is at step 1,198. A slow first step and the time between steps put it inside the band of 004-L440
    (15k words/s, BasicLSTMCell, P40) where the median step (17,500 words/s) lies above it."""
    assert s004_tensorflow.print_steps(1327)[-1] == 1198 and len(s004_tensorflow.print_steps(1327)) == 10
    ctx = context()
    warm, raw = [5.0], [0.04] * 1198
    t = timed(warm, raw, wall=5.0 + 1198 * 0.04 + 1199 * 0.001)
    ctx.record_timed("train_wps", t, "words/s", "items_per_s", 700, "synthetic")
    s004_tensorflow.record_as_published(ctx, t, 700, 1327)
    n = number("004-L440")
    assert n["cell"] == "004/tensorflow/ptb_large_basic/g1"
    v = verdicts.verdict(n, cell_for(n, ctx, version="1.8.0", params={"gpus": 1}), gpu_run("Tesla P40"))
    figure = 700 * 1199 / (5.0 + 1198 * 0.04 + 1199 * 0.001)
    assert v["measured"]["median"] == pytest.approx(figure)
    # one process: INCONCLUSIVE, the band rule says REPRODUCED (the median step alone: DEVIATES_FASTER)
    assert v["verdict"] == "INCONCLUSIVE" and v["undecided_rule"] == "REPRODUCED", v["reason"]
    assert "step 1,198" in v["basis"]["label"]


def test_004_pytorch_ms_per_batch_of_the_first_log_window():
    """The PyTorch example printed elapsed x 1000 / 200 at batch 200: 201 batches from the epoch start."""
    ctx = context()
    warm, raw = [4.0], [0.1] * 200
    t = timed(warm, raw, wall=4.0 + 20.0 + 201 * 0.0005)
    ctx.record_timed("time_per_batch", t, "ms", "ms", 1, "synthetic")
    s004_pytorch.record_as_published(ctx, t)
    n = number("004-L445")
    assert n["cell"].startswith("004/pytorch/")
    v = verdicts.verdict(n, cell_for(n, ctx, framework="torch", version="0.4.0"), gpu_run("Tesla P40"))
    assert v["measured"]["median"] == pytest.approx(1000 * (4.0 + 20.0 + 201 * 0.0005) / 200)
    # one process: INCONCLUSIVE, the band rule says DEVIATES_SLOWER (the median batch is the published 100)
    assert v["verdict"] == "INCONCLUSIVE" and v["undecided_rule"] == "DEVIATES_SLOWER", v["reason"]


def test_repeat_processes_give_the_median_figure_and_its_interval():
    from reprokit.reader import merge

    parts = []
    for stall in (0.2, 0.3, 0.4):
        ctx = context()
        raw = [0.018] * 990 + [stall] * 10
        ctx.record_timed("train_time_per_example", timed([], raw), "ms", "ms_per_item", 128, "s")
        _lstm000.record_as_published(ctx, "train_time_per_example", 128)
        parts.append({"metrics": copy.deepcopy(ctx.metrics)})
    merged = merge.merge_metrics(parts)["train_time_per_example"]
    s = published_metric.summary(merged)
    values = [1000 * (990 * 0.018 + 10 * x) / (1000 * 128) for x in (0.2, 0.3, 0.4)]
    assert s["median"] == pytest.approx(values[1]) and s["n"] == 3
    # the confidence interval over the 3 process figures: t(0.975, 2) x sd(log) / sqrt(3) about their
    # median, and the re-run prediction interval beside it: x sqrt(2/3)
    sd = statistics.stdev([math.log(v) for v in values])
    half, pi = 4.302652729749464 * sd / 3 ** 0.5, 4.302652729749464 * sd * (2 / 3) ** 0.5
    assert (s["ci_low"], s["ci_high"]) == (pytest.approx(values[1] * math.exp(-half)),
                                           pytest.approx(values[1] * math.exp(half)))
    assert (s["pi_low"], s["pi_high"]) == (pytest.approx(values[1] * math.exp(-pi)),
                                           pytest.approx(values[1] * math.exp(pi)))
    assert s["ci_label"] == "95 % CI over 3 processes" and s["ci_covers"] == "median"
    assert s["pi_label"] == "95 % prediction interval for a re-run of 3 processes"


def test_bench_and_host_arithmetic_agree():
    sys_timing = __import__("timing")
    segs = sys_timing.split_segments([0.5, 0.1, 0.12, 0.11, 0.2, 0.13, 0.1], 3, 1, 7.0, other_seconds=0.3)
    for figure, scale in (("rate", 1.0), ("time", 1.0), ("time_per_item", 1000.0)):
        ap = {"figure": figure, "scale": scale, "segments": segs,
              "planned": {"segments": 4, "iterations_per_segment": 5}}
        assert published_metric.value_of(ap) == pytest.approx(
            sys_timing.as_published_value(figure, segs, 5, scale), rel=1e-12)
    # one copy: the host has no arithmetic of its own, and bench's errors reach it as Inconsistent
    source = Path(published_metric.__file__).read_text()
    assert "sum(secs)" not in source and "items / total" not in source
    with pytest.raises(published_metric.Inconsistent, match="no iteration"):
        published_metric.segment_totals({"seconds": [], "items_per_iteration": 1}, None)
    with pytest.raises(published_metric.Inconsistent, match="unknown figure"):
        published_metric.figure_of("speed", 1.0, 1.0)


def test_000_claims_compare_the_figures_as_published_not_the_medians():
    """A claim compares what its source compared. 000's Train column orders cuDNN before fused by the
    mean over 1000 iterations: with 20 stalls the cuDNN side's median is the faster (0.018 s against
    0.022 s) and its mean the slower (0.0276 s), so a checker comparing medians says the order HOLDS
    and one comparing the published figures says it is REVERSED."""
    from reprokit.analysis import claims

    cells = []
    for variant, raw in (("cudnn_lstm", [0.018] * 980 + [0.5] * 20), ("fused_lstm", [0.022] * 1000)):
        ctx = context()
        ctx.record_timed("train_time_per_example", timed([], raw), "ms", "ms_per_item", 128, "synthetic")
        _lstm000.record_as_published(ctx, "train_time_per_example", 128)
        n = next(x for x in suites.load_published("000")
                 if x["cell"] == f"000/tensorflow/{variant}/b128-s30-h512"
                 and x["metric"] == "train_time_per_example")
        cells.append(cell_for(n, ctx, version="1.2.1", params={"batch": 128, "seq_len": 30, "hidden": 512}))
    claim = next(c for c in claims.load_claims()["claims"] if c["id"] == "c000-train-s30-h512")
    run = stored_run(M40_RUN, cells)
    res = claims.check_claim(claim, claims.observations_from_cells(run), machine=run.machine)
    pair = next(p for p in res["pairs"] if p["better"].endswith("cudnn_lstm/b128-s30-h512")
                and p["worse"].endswith("fused_lstm/b128-s30-h512"))
    # one process per side: not decided, but the figures give the reversed order
    assert pair["status"] == "INCONCLUSIVE" and "ran in one process" in pair["reason"], pair["reason"]
    assert pair["speedup"][1] < 1 and pair["speedup_median"] < 1
    assert pair["better_value"]["statistic"] == "as_published"
    samples = cells[0].metrics["train_time_per_example"]["samples"]
    assert pair["better_value"]["median"] == pytest.approx(sum(samples) / len(samples))  # the mean
