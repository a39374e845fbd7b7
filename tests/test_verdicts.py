"""Verdicts on published numbers from stored runs (tests/data/runs, made by tests/data/make_runs.py)."""

from pathlib import Path

import pytest

from reprokit import cpu_peak, results, suites, validate
from reprokit.analysis import diff, flops, verdicts

RUNS = Path(__file__).resolve().parent / "data" / "runs"


def load(name):
    rd = results.RunDir(RUNS / name)  # load_run/load_cells validate against the schemas
    return rd.load_run(), {c["cell_id"]: c for c in rd.load_cells()}


def by_id(run_name, sources=("000", "001")):
    run, cells = load(run_name)
    nums = [n for s in sources for n in suites.load_published(s)]
    return {v["number_id"]: v for v in verdicts.verdicts_for_run(nums, cells, run, suites.load_sources())}


def test_stored_runs_validate():
    for name in ("m40-same", "cpu-a", "cpu-b"):
        run, cells = load(name)
        assert not validate.errors("run", run)
        assert cells and all(not validate.errors("cell_result", c) for c in cells.values())


def test_same_gpu_same_stack_verdicts():
    v = by_id("m40-same")
    assert v["000-L012"]["verdict"] == "REPRODUCED"  # cudnn train 0.1404 ms
    assert v["000-L012"]["comparison"] == "same_hardware"
    assert v["000-L013"]["verdict"] == "DEVIATES_FASTER"  # cudnn forward measured ~0.060 vs 0.079
    assert v["000-L009"]["verdict"] == "DEVIATES_SLOWER"  # fused train ~0.30 vs 0.2052
    assert v["000-L010"]["verdict"] == "INCONCLUSIVE"  # fused forward: CI over the band edge
    assert "overlaps an edge" in v["000-L010"]["reason"]
    lo, hi = v["000-L012"]["band"]
    assert lo == pytest.approx(0.1404 * 0.9) and hi == pytest.approx(0.1404 * 1.1)
    m = v["000-L012"]["measured"]
    assert lo <= m["ci_low"] <= m["ci_high"] <= hi


def test_same_gpu_other_stack_says_so():
    v = by_id("m40-same")["000-L003"]  # Theano 1.0.5 substituting 0.9.0
    assert v["comparison"] == "same_hardware_other_stack"
    assert v["verdict"] == "REPRODUCED" and "Theano 1.0.5 instead of Theano 0.9.0" in v["reason"]


def test_not_run_reasons():
    v = by_id("m40-same")
    assert v["000-L024"]["verdict"] == "NOT_RUN" and "failed: ValueError" in v["000-L024"]["reason"]
    assert "skipped: preflight" in v["000-L030"]["reason"]
    assert "not part of this run" in v["000-L015"]["reason"]


def test_different_hardware_compares_efficiency():
    v = by_id("cpu-a")
    assert v["000-L012"]["verdict"] == "EFFICIENCY_LOWER"
    assert v["000-L013"]["verdict"] == "EFFICIENCY_SIMILAR"
    assert v["000-L006"]["verdict"] == "EFFICIENCY_HIGHER"
    e = v["000-L013"]["efficiency"]
    assert e["measured"]["peak_tflops"] == pytest.approx(0.1)  # the run's stored CPU probe
    assert e["published"]["peak_tflops"] == pytest.approx(7.0)  # Tesla M40 from peaks.yaml
    assert "different hardware" in v["000-L013"]["reason"] and "efficiency" in v["000-L013"]["reason"]
    assert v["000-L011"]["verdict"] == "NOT_COMPARABLE"  # compile time has no FLOP model


def test_missing_cpu_peak_is_not_comparable():
    run, cells = load("cpu-a")
    run = {k: x for k, x in run.items() if k != "cpu_peak"}
    n = next(n for n in suites.load_published("000") if n["id"] == "000-L012")
    v = verdicts.verdict(n, cells[n["cell"]], run)
    assert v["verdict"] == "NOT_COMPARABLE" and "no CPU peak" in v["reason"]


def test_source_001_is_implausible_with_arithmetic():
    for n in suites.load_published("001"):
        p = verdicts.plausibility(n)
        assert p["implausible"] and p["percent_of_peak"] > 1000
    dgx = verdicts.plausibility(suites.load_published("001")[0])
    assert dgx["implied_tflops"] == pytest.approx(139.4, rel=0.01)  # seed_workloads.md 2.2: ~139
    assert dgx["peak_tflops"] == pytest.approx(10.6)
    assert dgx["flops_per_item"] == pytest.approx(3 * (2 * 4 * 1024 * 2048 + 2 * 1024 * 33279))
    for part in ("254.8 MFLOP per word", "5.471e+05 words/s", "139.4 TFLOP/s", "10.6 TFLOP/s", "1,315%"):
        assert part in dgx["arithmetic"]
    # implausibility coexists with the measured comparison
    v = by_id("cpu-a")["001-L050"]
    assert v["verdict"] == "EFFICIENCY_LOWER" and v["labels"] == ["EFFICIENCY_LOWER", "IMPLAUSIBLE"]
    assert by_id("cpu-a")["001-L051"]["labels"] == ["NOT_RUN", "IMPLAUSIBLE"]


def test_source_000_numbers_are_plausible():
    for n in suites.load_published("000"):
        p = verdicts.plausibility(n)
        assert p is None or not p["implausible"]
    cudnn = next(n for n in suites.load_published("000") if n["id"] == "000-L048")
    assert verdicts.plausibility(cudnn)["implied_tflops"] == pytest.approx(5.3, abs=0.1)  # seed 1.4 item 8


def test_convert_and_scale():
    assert verdicts.convert(1.5, "s", "ms") == pytest.approx(1500)
    assert verdicts.convert(919, "us", "ms") == pytest.approx(0.919)
    assert verdicts.convert(1024, "MiB", "MB") == pytest.approx(1073.741824)
    assert verdicts.convert(5.0, "words/s", "words/s") == 5.0
    with pytest.raises(ValueError):
        verdicts.convert(1, "s", "MB")
    with pytest.raises(ValueError):
        verdicts.convert(1, "words/s", "seq/s")
    elapsed = next(n for n in suites.load_published("003") if (n.get("transform") or {}).get("scale") == 50)
    value, unit, how = verdicts.published_value(elapsed, "ms")
    assert value == pytest.approx(elapsed["value"] / 50 * 1000) and unit == "ms" and "transform.scale" in how


def test_band_position():
    assert verdicts.band_position(0.95, 1.05, 0.9, 1.1) == "inside"
    assert verdicts.band_position(1.2, 1.3, 0.9, 1.1) == "above"
    assert verdicts.band_position(0.5, 0.8, 0.9, 1.1) == "below"
    assert verdicts.band_position(1.0, 1.2, 0.9, 1.1) == "overlap"
    assert verdicts.band_position(0.8, 1.2, 0.9, 1.1) == "overlap"


@pytest.mark.parametrize(
    "name,entry,count",
    [
        ("Tesla P100-SXM2-16GB (DGX1)", "tesla-p100-sxm2", 1),
        ("Tesla P100-PCIE-16GB", "tesla-p100-pcie", 1),
        ("GeForce GTX TITAN X", "gtx-titan-x-maxwell", 1),
        ("NVIDIA TITAN X (Pascal)", None, None),
        ("1x Tesla V100-16GB (AWS p3.8xlarge)", "v100-sxm2", 1),
        ("8x Tesla V100-16GB (AWS p3.16xlarge)", "v100-sxm2", 8),
        ("Tesla V100-PCIE-16GB", "v100-pcie", 1),
        ("GeForce RTX 2080 Ti", "rtx-2080-ti", 1),
        ("2x Tesla P40", "tesla-p40", 2),
        ("Tesla M40 24GB", "tesla-m40", 1),
        ("GeForce GTX 1080 Ti", "gtx-1080-ti", 1),
        ("NVIDIA A100-SXM4-40GB", "a100", 1),
        ("NVIDIA H100 PCIe", "h100-pcie", 1),
        ("NVIDIA H100 80GB HBM3", "h100-sxm", 1),
        ("NVIDIA H200", "h200", 1),
        ("none (AWS c5.18xlarge CPU)", None, None),
    ],
)
def test_gpu_names_map_to_peaks(name, entry, count):
    hit = flops.find_gpu(name)
    if entry is None:
        assert hit is None
    else:
        assert hit["entry"] == entry and hit["count"] == count
        assert hit["peak_tflops"] == pytest.approx(count * hit["fp32_tflops"])


def test_every_published_gpu_has_a_peak_and_every_peak_a_source():
    for n in suites.all_sources_published():
        gpu = n["environment"]["gpu"]
        assert gpu.lower().startswith("none") or flops.find_gpu(gpu), gpu
    for eid, e in flops.load_peaks()["gpus"].items():
        assert e["sources"], eid
        if not e["verified"]:
            assert e.get("notes"), f"{eid}: an unverified value must say where it came from"


def test_flop_models_cover_published_throughputs():
    a = flops.achieved(
        547106.703,
        "words/s",
        "train_wps",
        "001/pytorch/word_lm/b128-s128-h1024",
        {"batch": 128, "seq_len": 128, "hidden": 1024},
    )
    assert a["forward_flops_per_item"] == pytest.approx(16.8e6 + 68.2e6, rel=0.01)  # seed 2.2
    jit = {"batch": 128, "seq_len": 50, "hidden": 256, "layers": 3}
    with pytest.raises(flops.NotApplicable, match="d003-jit-broken"):
        flops.achieved(0.0169, "s", "time_per_batch", "003/pytorch/jit_static/train", jit)
    whileop = flops.flops_per_item("003/tensorflow/graph_whileop_fine_grained/train", "time_per_batch", jit)
    assert whileop["phase"] == "forward"
    assert flops.evaluate("2 * a + b ** 2", {"a": 3, "b": 2}) == 10
    with pytest.raises(ValueError):
        flops.evaluate("__import__('os')", {})


def test_environment_diff_fields():
    run, cells = load("m40-same")
    n = next(n for n in suites.load_published("000") if n["id"] == "000-L012")
    rows = {
        r["field"]: r
        for r in diff.environment_diff(
            n, suites.load_sources()["000"], run["host_fingerprint"], cells[n["cell"]]
        )
    }
    assert rows["gpu"]["differs"] is False and rows["framework_version"]["differs"] is False
    assert rows["substitutes"]["differs"] is False and rows["python"]["differs"] is None  # unstated
    theano = next(n for n in suites.load_published("000") if n["id"] == "000-L003")
    rows = {
        r["field"]: r
        for r in diff.environment_diff(
            theano, suites.load_sources()["000"], run["host_fingerprint"], cells[theano["cell"]]
        )
    }
    assert rows["framework_version"]["differs"] is True and rows["substitutes"]["differs"] is True
    assert diff.versions_differ("8.0", "8.0.44") is False and diff.versions_differ("1.2.1", "2.21.0") is True


def test_cpu_peak_is_measured():
    r = cpu_peak.measure(sizes=(64, 128), repeats=2)
    assert r["gflops"] > 0 and r["method"].startswith("measured") and set(r["per_size"]) == {64, 128}


def test_cpu_peak_source_quotes_the_probe_method_once():
    from reprokit.analysis.flops import measured_device
    probe = cpu_peak.measure(sizes=(64,), repeats=1)
    dev = measured_device({"device": "cpu"}, {"cpu_peak": probe, "host_fingerprint": {}})
    assert dev["peak_source"] == probe["method"] and dev["peak_source"].count("measured") == 1
    old = measured_device({"device": "cpu"},
                          {"cpu_peak": {"gflops": 1.0, "method": "numpy matmul"}, "host_fingerprint": {}})
    assert old["peak_source"] == "measured: numpy matmul"
