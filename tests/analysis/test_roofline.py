"""Roofline plausibility bound of published numbers (reprokit.analysis.roofline)."""

import copy

import pytest
import yaml

from reprokit import validate
from reprokit.analysis import flops, roofline
from reprokit.catalog import suites


def published():
    return {n["id"]: n for s in suites.load_sources() for n in suites.load_published(s)}


def gpu_device(label, bandwidth=True):
    """A publication-device dict as reprokit.analysis.devices builds it for a GPU (peaks.yaml)."""
    hit = flops.find_gpu(label)
    assert hit is not None, label
    bw = hit["memory_bandwidth_gbs"]
    return {"kind": "gpu", "label": label, "entry": hit["entry"], "count": hit["count"],
            "peak_tflops": hit["peak_tflops"], "bandwidth_gbs": hit["count"] * bw if bandwidth else None,
            "verified": hit["verified"]}


def bound_of(number, **kw):
    return roofline.bound(number, gpu_device(number["environment"]["gpu"], **kw))


def with_value(number, value):
    n = copy.deepcopy(number)
    n["value"] = value
    return n


# -- data files ------------------------------------------------------------------------------------
def test_data_files_validate():
    from importlib import resources

    for name in ("flops", "peaks"):
        doc = yaml.safe_load(resources.files("reprokit.data").joinpath(f"{name}.yaml").read_text())
        assert validate.errors(name, doc) == []
    models = flops.load_models()
    pol = models["roofline"]
    assert 0 < pol["suspicious_fraction"] < 1 and pol["why"].strip()
    for mid, m in models["models"].items():
        keys = {"optional_flops_per_item", "no_input_grad_flops_per_item", "weights", "bytes_per_step"}
        assert keys <= set(m["roofline"]), mid
    for eid, e in flops.load_peaks()["gpus"].items():
        assert e["memory_bandwidth_gbs"] > 0 and e["bandwidth_sources"], eid
        assert all("http" in s or "seed_workloads" in s for s in e["bandwidth_sources"]), eid


def test_find_gpu_exposes_bandwidth():
    assert flops.find_gpu("Tesla M40 24GB")["memory_bandwidth_gbs"] == pytest.approx(288.4)
    assert flops.find_gpu("Tesla P100-PCIE-16GB")["memory_bandwidth_gbs"] == pytest.approx(732)
    assert flops.find_gpu("NVIDIA H100 80GB HBM3")["memory_bandwidth_gbs"] == pytest.approx(3350)
    assert flops.find_gpu("NVIDIA H100 PCIe")["memory_bandwidth_gbs"] == pytest.approx(2000)


def test_conventions_say_which_train_bound():
    text = " ".join(roofline.CONVENTIONS)
    assert all(isinstance(c, str) and c for c in roofline.CONVENTIONS)
    assert "3 x forward" in text and "2 x forward" in text and "multiply-add = 2" in text
    assert "Bytes" in text and "peaks.yaml" in text


# -- the published numbers -------------------------------------------------------------------------
def test_source_001_words_per_second_are_implausible():
    nums = [n for n in published().values() if n["provenance"]["source"] == "001" and n["unit"] == "words/s"]
    assert len(nums) == 6
    for n in nums:
        b = bound_of(n)
        assert b["tier"] == "IMPLAUSIBLE", n["id"]
        assert b["bound_unit"] == "words/s"
        assert b["fraction_of_bound"] > 10  # 1,247-5,333 %
        assert b["bound_value"] == pytest.approx(n["value"] / b["fraction_of_bound"])
        assert b["bound_value"] < n["value"] / 10
        assert b["binding"] == "compute"
        assert "words/s" in b["arithmetic"] and "% of the bound" in b["arithmetic"]


def test_source_000_time_bound_is_a_minimum_time():
    n = published()["000-L048"]  # cudnn train, s=100, h=1024: 0.9583 ms per example on an M40
    b = bound_of(n)
    assert b["tier"] in ("PLAUSIBLE", "SUSPICIOUS")
    assert b["bound_unit"] == "ms"
    # lower bound: 3 x forward - the first layer's input product - 3 x the t=0 recurrent product
    s, h = 100, 1024
    fwd, first_input, t0 = s * 8 * h * (h + h), s * 8 * h * h, 8 * h * h
    lower = 3 * fwd - first_input - 3 * t0
    assert b["flops_per_item"] == pytest.approx(lower)
    assert b["flops_per_item"] < flops.flops_per_item(n["cell"], n["metric"], n["workload"])["flops_per_item"]
    assert b["bound_value"] == pytest.approx(lower / 7.0e12 * 1e3)  # ms per example, compute-bound
    assert b["bound_value"] < n["value"]
    assert b["fraction_of_bound"] == pytest.approx(b["bound_value"] / n["value"])
    assert "needs at least" in b["arithmetic"]
    fwd_only = bound_of(published()["000-L013"])  # cudnn forward, 0.079 ms
    assert fwd_only["tier"] == "PLAUSIBLE" and fwd_only["bound_value"] < 0.079


def test_transform_scale_bound_is_in_the_published_terms():
    nums = published()
    per_batch, fifty = bound_of(nums["003-L428"]), bound_of(nums["003-L429"])  # 0.0058 s vs 0.2883 s (x 50)
    assert fifty["bound_value"] == pytest.approx(50 * per_batch["bound_value"])
    assert fifty["fraction_of_bound"] == pytest.approx(per_batch["fraction_of_bound"], rel=0.01)
    assert "50 x time_per_batch" in fifty["arithmetic"]


def test_not_covered_gives_none():
    nums = published()
    assert bound_of(nums["000-L002"]) is None  # compile time: no FLOP model for the metric
    jit = next(n for n in nums.values()
               if "/jit_" in (n["cell"] or "") and n["environment"]["gpu"].startswith("GeForce"))
    assert bound_of(jit) is None  # d003-jit-broken: the model does not describe the work
    no_peak = {"kind": "cpu", "label": "CPU", "count": 1, "peak_tflops": None, "bandwidth_gbs": 100.0}
    assert roofline.bound(nums["002-L056"], no_peak) is None


def test_every_bound_is_below_the_convention_and_above_twice_forward():
    for n in published().values():
        if not n["cell"] or n["environment"]["gpu"].lower().startswith("none"):
            continue
        b = bound_of(n)
        if b is None:
            continue
        conv = flops.flops_per_item(n["cell"], n["metric"], n["workload"])
        assert b["flops_per_item"] <= conv["flops_per_item"], n["id"]
        w = roofline.work_per_item(n["cell"], n["metric"], n["workload"])
        fwd_lower = w["forward_flops_per_item"] - w["optional_flops_per_item"]
        assert b["flops_per_item"] >= (2 if b["phase"] == "train" else 1) * fwd_lower - 1e-6, n["id"]
        assert b["bytes_per_item"] > 0 and b["tier"] in roofline.TIERS


# -- thresholds ------------------------------------------------------------------------------------
def test_fabricated_numbers_around_the_bound():
    frac = flops.load_models()["roofline"]["suspicious_fraction"]
    assert frac == 0.5
    rate = published()["001-L050"]
    top = bound_of(rate)["bound_value"]
    assert bound_of(with_value(rate, top * 1.001))["tier"] == "IMPLAUSIBLE"
    assert bound_of(with_value(rate, top * 0.9))["tier"] == "SUSPICIOUS"
    assert bound_of(with_value(rate, top * 0.4))["tier"] == "PLAUSIBLE"
    time = published()["000-L048"]
    least = bound_of(time)["bound_value"]
    just_faster = bound_of(with_value(time, least * 0.999))
    assert just_faster["tier"] == "IMPLAUSIBLE"
    assert just_faster["fraction_of_bound"] == pytest.approx(1 / 0.999)
    nine_tenths = bound_of(with_value(time, least / 0.9))
    assert nine_tenths["tier"] == "SUSPICIOUS" and nine_tenths["fraction_of_bound"] == pytest.approx(0.9)
    assert bound_of(with_value(time, least / 0.4))["tier"] == "PLAUSIBLE"


def test_tier_edges():
    assert roofline.tier_of(1.0, 0.5) == "SUSPICIOUS"
    assert roofline.tier_of(1.0000001, 0.5) == "IMPLAUSIBLE"
    assert roofline.tier_of(0.5, 0.5) == "PLAUSIBLE"


# -- memory vs compute -----------------------------------------------------------------------------
def tiny_model_doc():
    """A FLOP model with almost no arithmetic and a lot of bytes per step."""
    return {
        "schema_version": 1, "convention": "test", "train_factor": 3,
        "roofline": {"suspicious_fraction": 0.5, "why": "test"},
        "metric_quantities": {"train_time_per_example": "item", "time_per_batch": "batch"},
        "models": {"copy": {
            "source": "test", "description": "a copy kernel", "cells": ["^test/copy"], "item": "example",
            "forward_flops_per_item": "2 * n", "items_per_batch": "batch", "reference": "test",
            "phase_by_metric": {"train_time_per_example": "train", "time_per_batch": "train"},
            "roofline": {"optional_flops_per_item": "0", "no_input_grad_flops_per_item": "0", "weights": "n",
                         "bytes_per_step": {"forward": "4 * weights * batch", "train": "8 * weights * batch"},
                         "notes": "test"},
        }},
    }


def copy_number():
    return {"id": "t", "value": 1.0, "unit": "ms", "metric": "train_time_per_example", "cell": "test/copy/a",
            "workload": {"n": 1e6, "batch": 10}}


def test_memory_bound_binds_for_tiny_flops_and_large_bytes():
    doc = tiny_model_doc()
    assert validate.errors("flops", doc) == []
    number = copy_number()
    dev = {"label": "Test GPU", "count": 1, "peak_tflops": 10.0, "bandwidth_gbs": 100.0, "verified": True}
    b = roofline.bound(number, dev, models=doc)
    assert b["binding"] == "memory"
    assert b["flops_per_item"] == pytest.approx(3 * 2e6)
    assert b["bytes_per_item"] == pytest.approx(8e6)  # 8 B per weight per step, 1 item per batch row
    assert b["bound_value"] == pytest.approx(8e6 / 100e9 * 1e3)  # 0.08 ms
    assert b["fraction_of_bound"] == pytest.approx(0.08)
    assert b["arithmetic"].index("memory-bound") < b["arithmetic"].index("TFLOP/s")
    batch_number = {**number, "metric": "time_per_batch", "value": 0.5, "unit": "s"}
    per_batch = roofline.bound(batch_number, dev, models=doc)
    assert per_batch["bound_value"] == pytest.approx(10 * 8e6 / 100e9)  # 10 items per batch, seconds
    # the same model on a real one: a huge peak against the M40's bandwidth also binds on memory
    real = published()["000-L048"]
    fast = {**gpu_device("Tesla M40 24GB"), "peak_tflops": 1e6}
    assert roofline.bound(real, fast)["binding"] == "memory"


def test_device_without_bandwidth_is_compute_only():
    n = published()["001-L050"]
    with_bw, without = bound_of(n), bound_of(n, bandwidth=False)
    assert without["binding"] == "compute" and without["bandwidth_gbs"] is None
    assert without["memory_items_per_s"] is None
    assert "memory bound unknown" in without["arithmetic"]
    assert without["bound_value"] == pytest.approx(with_bw["bound_value"])  # compute binds anyway here
    doc = tiny_model_doc()
    number = copy_number()
    dev = {"label": "Test GPU", "count": 1, "peak_tflops": 10.0, "bandwidth_gbs": None}
    b = roofline.bound(number, dev, models=doc)
    assert b["binding"] == "compute" and b["bound_value"] == pytest.approx(6e6 / 10e12 * 1e3)


def test_multi_gpu_scales_peak_and_bandwidth():
    nums = published()
    one, two = bound_of(nums["004-L440"]), bound_of(nums["004-L443"])  # 1x vs 2x Tesla P40, BasicLSTMCell
    assert two["peak_tflops"] == pytest.approx(2 * one["peak_tflops"])
    assert two["bandwidth_gbs"] == pytest.approx(2 * one["bandwidth_gbs"])
    assert two["bound_value"] == pytest.approx(2 * one["bound_value"])
    assert "(2 GPUs)" in two["arithmetic"]


# -- unit conversion -------------------------------------------------------------------------------
@pytest.mark.parametrize("nid", ["000-L003", "001-L051", "002-L058", "003-L398", "003-L400", "004-L444"])
def test_value_at_rate_reverses_items_per_second(nid):
    n = published()[nid]
    w = roofline.work_per_item(n["cell"], n["metric"], n["workload"])
    value = float(n["value"]) / float((n.get("transform") or {}).get("scale", 1))
    ips = flops.items_per_second(value, n["unit"], n["metric"], w["_est"])
    assert roofline.value_at_rate(ips, n["unit"], n["metric"], w["_est"]) == pytest.approx(value)


def test_publication_device_carries_bandwidth():
    from reprokit.analysis import devices
    n = published()["001-L054"]
    pub = devices.publication_device(n)
    assert pub["bandwidth_gbs"] == pytest.approx(336.5)
    b = roofline.bound(n, pub)
    assert b["tier"] == "IMPLAUSIBLE" and b["bandwidth_gbs"] == pytest.approx(336.5)


def test_a_cheaper_algorithm_named_by_the_model_scales_the_bound_and_is_said():
    """A model's `minimal_arithmetic` (Winograd for small convolutions: cuDNN runs 3x3 stride-1
    convolutions with far fewer multiplies than direct convolution, so a direct count flagged an honest
    figure SUSPICIOUS) scales every pass's FLOPs by its saving, and the arithmetic names it."""
    n = published()["000-L048"]
    direct = bound_of(n)
    assert "algorithm" not in direct and " with " not in direct["arithmetic"].split("lower bound")[1][:6]
    doc = copy.deepcopy(flops.load_models())
    model = doc["models"]["lstm-000"]
    model["minimal_arithmetic"] = {"algorithm": "a made-up algorithm at 40 %", "source": "this test",
                                   "forward_flops_per_item": f"0.4 * ({model['forward_flops_per_item']})"}
    assert not validate.errors("flops", doc)
    cheap = roofline.bound(n, gpu_device(n["environment"]["gpu"]), doc)
    assert cheap["flops_per_item"] == pytest.approx(0.4 * direct["flops_per_item"])
    assert cheap["algorithm"] == {"name": "a made-up algorithm at 40 %", "source": "this test",
                                  "saving": pytest.approx(0.4)}
    assert "lower bound with a made-up algorithm at 40 %, 40 % of the direct products (this test)" in \
        cheap["arithmetic"]
    assert cheap["fraction_of_bound"] < direct["fraction_of_bound"]
    model["minimal_arithmetic"]["forward_flops_per_item"] = f"2 * ({model['forward_flops_per_item']})"
    assert roofline.bound(n, gpu_device(n["environment"]["gpu"]), doc) is None  # above direct: refused


def test_a_backward_metric_is_bounded_by_both_gradients():
    """A metric of the backward pass alone (a table's Backward column): training's lower bound less
    its forward, 2 x forward - the first layer's input product, and efficiency's factor 2."""
    n = copy.deepcopy(published()["000-L048"])  # cudnn train, s=100, h=1024
    doc = copy.deepcopy(flops.load_models())
    doc["models"]["lstm-000"].setdefault("phase_by_metric", {})["backward_time_per_example"] = "backward"
    doc["metric_quantities"]["backward_time_per_example"] = "item"
    assert not validate.errors("flops", doc)
    n["metric"] = "backward_time_per_example"
    b = roofline.bound(n, gpu_device(n["environment"]["gpu"]), doc)
    s, h = 100, 1024
    fwd, first_input, t0 = s * 8 * h * (h + h), s * 8 * h * h, 8 * h * h
    assert b["phase"] == "backward" and b["flops_per_item"] == pytest.approx(2 * fwd - first_input - 2 * t0)
    est = flops.flops_per_item(n["cell"], n["metric"], n["workload"], doc)
    assert est["factor"] == 2 and est["flops_per_item"] == pytest.approx(2 * fwd)
