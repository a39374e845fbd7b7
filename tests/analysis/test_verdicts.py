"""Verdicts on published numbers from stored runs (tests/data/runs, made by tests/data/make_runs.py)."""

import dataclasses
from pathlib import Path

import pytest

from reprokit import results, validate
from reprokit.analysis import devices, diff, flops, roofline, verdicts
from reprokit.catalog import suites
from reprokit.probes import cpu_peak
from reprokit.reader import load as reader
from reprokit.reader.frozen import freeze, thaw
from tests import models

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def load(name):
    """A stored run as the model (reprokit/reader/load.py validates run.json and each result)."""
    return reader.load(RUNS / name)


def by_id(run_name, sources=("000", "001")):
    run = load(run_name)
    nums = [n for s in sources for n in suites.load_published(s)]
    return {v["number_id"]: v for v in verdicts.verdicts_for_run(nums, run, suites.load_sources())}


def with_cpu_peak(run, **fields):
    """The run with its CPU probe's fields replaced."""
    return dataclasses.replace(run, cpu_peak=freeze({**run.cpu_peak, **fields}))


def test_stored_runs_validate():
    for name in ("m40-same", "cpu-a", "cpu-b", "haswell-same", "v100-other"):
        rd = results.RunDir(RUNS / name)  # load_run/load_cells validate against the schemas
        cells = rd.load_cells()
        assert not validate.errors("run", rd.load_run())
        assert cells and all(not validate.errors("cell_result", c) for c in cells)


def test_same_gpu_same_stack_verdicts():
    v = by_id("m40-same")
    assert v["000-L012"]["verdict"] == "REPRODUCED"  # cudnn train 0.1404 ms
    assert v["000-L012"]["comparison"] == "same_hardware"
    assert v["000-L013"]["verdict"] == "DEVIATES_FASTER"  # cudnn forward measured ~0.060 vs 0.079
    assert v["000-L009"]["verdict"] == "DEVIATES_SLOWER"  # fused train ~0.30 vs 0.2052
    # fused forward [0.1138, 0.1188] vs 0.1044 +- 8.05 % (the flat 10 % made it overlap the edge)
    assert v["000-L010"]["verdict"] == "DEVIATES_SLOWER"
    lo, hi = v["000-L012"]["band"]
    tol = 0.00005 / 0.1404 + 0.08  # the figure's rounding + between GPUs of one model (unit_variation.yaml)
    assert v["000-L012"]["tolerance"] == pytest.approx(tol)
    assert lo == pytest.approx(0.1404 * (1 - tol)) and hi == pytest.approx(0.1404 * (1 + tol))
    m = v["000-L012"]["measured"]
    assert lo <= m["ci_low"] <= m["ci_high"] <= hi


def test_same_gpu_other_stack_says_so():
    v = by_id("m40-same")["000-L006"]  # TensorFlow 1.4.0 substituting 1.2.1: a version stand-in
    assert v["comparison"] == "same_hardware_other_stack"
    assert v["verdict"] == "REPRODUCED" and "TensorFlow 1.4.0 instead of TensorFlow 1.2.1" in v["reason"]
    assert [s["kind"] for s in v["standins"]] == ["version"]


def test_not_run_reasons():
    v = by_id("m40-same")
    assert v["000-L024"]["verdict"] == "NOT_RUN" and "failed: ValueError" in v["000-L024"]["reason"]
    assert "not part of this run" in v["000-L015"]["reason"]
    # the stored run lists 000-L030's cell as skipped by preflight but has no result file for it (the
    # kit writes a placeholder): read from the files, it is missing; as run.json recorded it, skipped
    assert v["000-L030"]["verdict"] == "NOT_RUN" and "is missing" in v["000-L030"]["reason"]
    rd = results.RunDir(RUNS / "m40-same")
    recorded = models.run(rd.load_run(), rd.load_cells())
    n = next(n for n in suites.load_published("000") if n["id"] == "000-L030")
    got = verdicts.verdict(n, recorded.result(n["cell"]), recorded, None, recorded.entry(n["cell"]))
    assert got["verdict"] == "NOT_RUN" and "skipped: preflight" in got["reason"]


def test_gpu_numbers_are_not_testable_on_a_cpu_host():
    """A CPU run gives no verdict on a GPU number: NOT_TESTABLE_HERE, efficiency kept as context only."""
    v = by_id("cpu-a")
    for nid in ("000-L012", "000-L013", "000-L006", "000-L011"):
        assert v[nid]["verdict"] == "NOT_TESTABLE_HERE" and v[nid]["labels"] == ["NOT_TESTABLE_HERE"]
        assert "published on a GPU (Tesla M40 24GB), measured on a CPU" in v[nid]["reason"]
    ctx = v["000-L013"]
    assert ctx["efficiency_is_context"]
    assert ctx["efficiency"]["published"]["peak_tflops"] == pytest.approx(7.0)
    assert ctx["comparison"] == "other_class" and ctx["hardware"]["same_class"] is False
    # numbers whose cell is not in the run: the host has no GPU, so they are not testable here either
    assert v["000-L015"]["verdict"] == "NOT_TESTABLE_HERE"
    assert "this host has no GPU" in v["000-L015"]["reason"]


def test_multi_gpu_numbers_need_that_many_gpus():
    v = by_id("v100-other", ("002",))
    eight = [x for x in v.values() if x["published"]["gpu"].startswith("8x")]
    assert eight and all(x["verdict"] == "NOT_TESTABLE_HERE" for x in eight)
    assert all("published on 8 GPUs" in x["reason"] and "this host has 1" in x["reason"] for x in eight)


def _with_precision(run, effective="fp32"):
    """The stored GPU cells have no precision record: give them one (synthetic)."""
    rec = {"requested": "fp32", "effective": effective, "why": "synthetic", "settings": {}, "env": {},
           "autotune": {}}
    cells = [models.cell({**thaw(c.doc), "precision": rec}) for c in run.cell_results()]
    return dataclasses.replace(run, results=freeze({c.cell_id: c for c in cells}))


def test_same_gpu_class_other_model_compares_efficiency(monkeypatch):
    run = load("v100-other")
    nums = [n for n in suites.load_published("000")]
    fp32 = _with_precision(run)
    # a V100 (15.7 TFLOP/s) against an M40 (7.0): 2.24x apart, beyond the policy's max_peak_ratio (1.5),
    # so the efficiencies are context; the band rule's answer is kept beside them
    v = {x["number_id"]: x for x in verdicts.verdicts_for_run(nums, fp32, suites.load_sources())}
    for nid, rule in (("000-L012", "EFFICIENCY_SIMILAR"), ("000-L013", "EFFICIENCY_HIGHER"),
                      ("000-L009", "EFFICIENCY_LOWER")):
        assert v[nid]["verdict"] == "NOT_COMPARABLE" and v[nid]["labels"] == ["NOT_COMPARABLE",
                                                                             "EFFICIENCY_CONTEXT"]
        assert v[nid]["policy"]["band_rule"] == rule and v[nid]["efficiency_is_context"]
        assert "2.24x apart, more than the policy's 1.5x" in v[nid]["reason"]
    e = v["000-L013"]["efficiency"]
    assert e["measured"]["peak_tflops"] == pytest.approx(15.7)
    assert e["published"]["peak_tflops"] == pytest.approx(7.0)
    assert "same device class, other model" in v["000-L013"]["reason"]
    assert v["000-L013"]["comparison"] == "efficiency"
    # within the ratio, the band rule decides
    pol = verdicts.load_policy()
    wide = {**pol, "efficiency": {**pol["efficiency"], "max_peak_ratio": 3.0}}
    monkeypatch.setattr(verdicts, "load_policy", lambda: wide)
    v = {x["number_id"]: x for x in verdicts.verdicts_for_run(nums, fp32, suites.load_sources())}
    assert v["000-L012"]["verdict"] == "EFFICIENCY_SIMILAR"
    assert v["000-L013"]["verdict"] == "EFFICIENCY_HIGHER"
    assert v["000-L009"]["verdict"] == "EFFICIENCY_LOWER"
    assert not v["000-L013"]["efficiency_is_context"]


def test_a_gpu_cell_without_a_precision_record_gets_no_efficiency():
    """A GPU result without a precision record does not say whether TF32 ran: no efficiency, said why."""
    v = by_id("v100-other")
    for nid in ("000-L012", "000-L013", "000-L009"):
        assert v[nid]["verdict"] == "NOT_COMPARABLE"
        assert v[nid]["labels"] == ["NOT_COMPARABLE", "PRECISION_UNKNOWN"]
        assert "precision that ran is unknown" in v[nid]["reason"] and v[nid]["efficiency"] is None


def test_cpu_published_numbers_get_cpu_verdicts():
    """003's CPU rows (6-core Haswell) on another CPU model: efficiency against theoretical peaks of both;
    on the same CPU model: raw time against published +- tolerance."""
    v = by_id("cpu-a", ("003",))
    assert v["003-L377"]["verdict"] == "EFFICIENCY_HIGHER"
    assert v["003-L380"]["verdict"] == "EFFICIENCY_SIMILAR"
    assert v["003-L392"]["verdict"] == "EFFICIENCY_LOWER"
    e = v["003-L380"]["efficiency"]
    assert e["published"]["peak_tflops"] == pytest.approx(6 * 3.5 * 32 / 1000)  # cores x GHz x FLOP/cycle
    assert e["measured"]["peak_tflops"] == pytest.approx(8 * 2.45 * 32 / 1000)  # Zen 3, from the fingerprint
    assert e["measured"]["probe_tflops"] == pytest.approx(0.1)  # the GEMM probe: context, not the peak
    assert "Intel Haswell-E (family 6 model 63), 6 cores" in v["003-L380"]["reason"]
    assert "AMD Zen 3 (family 25 model 1), 8 cores" in v["003-L380"]["reason"]
    same = by_id("haswell-same", ("003",))
    assert same["003-L380"]["verdict"] == "REPRODUCED" and same["003-L380"]["comparison"] == "same_hardware"
    assert same["003-L377"]["verdict"] == "DEVIATES_FASTER"
    assert same["003-L392"]["verdict"] == "DEVIATES_SLOWER"
    # the GPU rows of 003 stay untestable on either CPU host
    gpu_rows = [x for x in same.values() if not x["published"]["gpu"].lower().startswith("none")]
    assert gpu_rows and all(x["verdict"] in ("NOT_TESTABLE_HERE", "IMPLAUSIBLE") for x in gpu_rows)


def test_no_flop_model_or_no_cpu_peak_is_not_comparable():
    v = by_id("cpu-a", ("003",))
    assert v["003-L395"]["verdict"] == "NOT_COMPARABLE" and "d003-jit-broken" in v["003-L395"]["reason"]
    run = load("cpu-a")
    cpu = {k: x for k, x in run.host["cpu"].items() if k not in ("mhz", "model_name")}
    run = dataclasses.replace(run, host=freeze({**run.host, "cpu": cpu}))
    n = next(n for n in suites.load_published("003") if n["id"] == "003-L380")
    got = verdicts.verdict(n, run.result(n["cell"]), run)
    assert got["verdict"] == "NOT_COMPARABLE" and "no 'cpu MHz'" in got["reason"]


def test_standin_for_the_mechanism_gets_no_verdict():
    v = by_id("m40-same")
    for nid in ("000-L002", "000-L003", "000-L004"):  # Theano ran its Python scan loop
        assert v[nid]["verdict"] == "NOT_TESTABLE_STANDIN" and "Python scan loop" in v[nid]["reason"]
        assert v[nid]["standins"][0]["id"] == "theano-python-scan"


def test_single_samples_decide_nothing():
    """A compile time measured once has no interval: no verdict until compile_min_samples processes."""
    v = by_id("m40-same")
    assert v["000-L005"]["verdict"] == "INCONCLUSIVE" and "1 sample" in v["000-L005"]["reason"]
    assert v["000-L008"]["verdict"] == "DEVIATES_FASTER"  # 3 processes: decided on their re-run interval
    assert "95 % CI over 3 processes" in v["000-L008"]["reason"]


def test_source_001_is_implausible_and_nothing_else():
    for n in suites.load_published("001"):
        b = roofline.bound(n, devices.publication_device(n))
        assert b["tier"] == "IMPLAUSIBLE" and b["fraction_of_bound"] > 12
    first = suites.load_published("001")[0]
    dgx = roofline.bound(first, devices.publication_device(first))
    assert dgx["peak_tflops"] == pytest.approx(10.6) and dgx["binding"] == "compute"
    assert dgx["bound_value"] == pytest.approx(10.6e12 / dgx["flops_per_item"])
    for part in ("can do at most 43,100 words/s", "246.2 MFLOP per word lower bound", "1,271 % of the bound"):
        assert part in dgx["arithmetic"]
    for run in ("cpu-a", "m40-same"):
        v = by_id(run)
        for n in suites.load_published("001"):
            assert v[n["id"]]["verdict"] == "IMPLAUSIBLE" and v[n["id"]]["labels"] == ["IMPLAUSIBLE"]
    # measured or not, an impossible number gets no other verdict; the measurement stays as context
    assert by_id("cpu-a")["001-L050"]["measured"]["n"] == 8


def test_source_000_numbers_are_plausible_or_suspicious():
    tiers = {}
    for n in suites.load_published("000"):
        b = roofline.bound(n, devices.publication_device(n))
        tiers[n["id"]] = b and b["tier"]
    assert set(tiers.values()) <= {None, "PLAUSIBLE", "SUSPICIOUS"}
    assert sorted(k for k, t in tiers.items() if t == "SUSPICIOUS") == ["000-L024", "000-L048"]
    assert all(t is None for k, t in tiers.items() if "compile" in next(
        n["metric"] for n in suites.load_published("000") if n["id"] == k))
    v = by_id("m40-same")["000-L024"]  # suspicious and not run: both said, and that no defect explains it
    assert v["labels"] == ["NOT_RUN", "SUSPICIOUS", "UNEXPLAINED"]
    (e,) = v["explanations"]
    need = v["roofline"]["fraction_of_bound"] / v["roofline"]["suspicious_fraction"]
    assert e["defect"] is None and e["inflation_needed"] == pytest.approx(need)
    assert "no known defect of source 000 explains it" in e["arithmetic"]


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
        ("NVIDIA H200", "h200-sxm", 1),
        ("NVIDIA H200 NVL", "h200-nvl", 1),
        ("NVIDIA H100 NVL", "h100-nvl", 1),
        ("NVIDIA GH200 480GB", None, None),
        ("NVIDIA B200", "b200", 1),
        ("NVIDIA GeForce RTX 5090", "rtx-5090", 1),
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
    run = load("m40-same")
    n = next(n for n in suites.load_published("000") if n["id"] == "000-L012")
    rows = {
        r["field"]: r
        for r in diff.environment_diff(
            n, suites.load_sources()["000"], run.host, run.result(n["cell"])
        )
    }
    assert rows["gpu"]["differs"] is False and rows["framework_version"]["differs"] is False
    assert rows["substitutes"]["differs"] is False and rows["python"]["differs"] is None  # unstated
    theano = next(n for n in suites.load_published("000") if n["id"] == "000-L003")
    rows = {
        r["field"]: r
        for r in diff.environment_diff(
            theano, suites.load_sources()["000"], run.host, run.result(theano["cell"])
        )
    }
    assert rows["framework_version"]["differs"] is True and rows["substitutes"]["differs"] is True
    assert diff.versions_differ("8.0", "8.0.44") is False and diff.versions_differ("1.2.1", "2.21.0") is True


def test_cpu_peak_is_measured():
    r = cpu_peak.measure(sizes=(64, 128), repeats=2)
    assert r["gflops"] > 0 and r["method"].startswith("measured") and set(r["per_size"]) == {64, 128}


def test_a_cpu_cells_device_carries_the_runs_probe_as_context():
    """devices.measured_device (the one the verdicts use; flops.measured_device, which nothing
    called, is gone): the run's GEMM probe is context beside the theoretical peak, its method quoted."""
    from reprokit.analysis.devices import measured_device
    probe = cpu_peak.measure(sizes=(64,), repeats=1)
    dev = measured_device(models.cell(device="cpu"), models.machine({}, probe))
    assert dev["probe_source"] == probe["method"] and dev["probe_tflops"] == probe["gflops"] / 1000.0
    none = measured_device(models.cell(device="cpu"), models.machine({}))
    assert none["probe_tflops"] is None and none["probe_source"] is None


@pytest.mark.parametrize("measured_mb,verdict", [(16000.0, "REPRODUCED"), (20000.0, "DEVIATES_HIGHER"),
                                                 (8000.0, "DEVIATES_LOWER")])
def test_memory_on_the_same_gpu_deviates_higher_or_lower(measured_mb, verdict):
    """Metrics that are not speeds (GPU memory) deviate HIGHER/LOWER, not faster/slower."""
    run = load("v100-other")
    n = next(n for n in suites.load_published("002") if n["id"] == "002-L061")  # 15360 MB, 1x V100
    cell = models.cell({"cell_id": n["cell"], "status": "ok", "device": "gpu", "params": {"gpus": 1},
            "implementation": {"framework": "tensorflow", "framework_version": "1.8.0", "substitutes": []},
            "metrics": {"gpu_memory": {"unit": "MB",
                                       "samples": [measured_mb * (1 + i / 1000) for i in range(6)],
                                       "processes": [2, 2, 2]}}})
    v = verdicts.verdict(n, cell, run)
    assert v["verdict"] == verdict and v["comparison"].startswith("same_hardware")
    if verdict != "REPRODUCED":
        assert f"({verdict.split('_')[1].lower()}," in v["reason"]


def test_a_measured_gemm_rate_above_the_theoretical_peak_replaces_it():
    """A VM reports its base clock: when the run's GEMM probe beats cores x clock x FLOP/cycle, the
    theoretical figure is provably too low and the measured rate is the peak (a lower bound)."""
    run = load("cpu-a")  # Zen 3, 8 cores x 2.45 GHz x 32 = 627 GFLOP/s theoretical
    fast = with_cpu_peak(run, gflops=900.0)
    d = devices.measured_device(models.cell(device="cpu"), fast.machine)
    assert d["peak_tflops"] == pytest.approx(0.9) and d["theoretical_tflops"] == pytest.approx(0.6272)
    assert d["verified"] is False and "exceeds the theoretical" in d["peak_source"]
    slow = devices.measured_device(models.cell(device="cpu"), run.machine)  # probe 100 GFLOP/s: context only
    assert slow["peak_tflops"] == pytest.approx(0.6272) and slow["probe_tflops"] == pytest.approx(0.1)


def test_a_hypervisor_model_number_does_not_hide_amx():
    """This project's KVM hosts report model 167 (Rocket Lake's number) with AMX flags."""
    from reprokit.analysis import cpus

    cpu = {"vendor": "GenuineIntel", "family": "6", "model": "167", "stepping": "1", "mhz": [2600.0] * 2,
           "physical_cores": 2, "usable_cores": 2, "flags": ["avx512f", "amx_tile", "fma", "hypervisor"]}
    c = cpus.host_cpu({"cpu": cpu})
    assert c["uarch"] == "intel-amx-by-flags" and c["flops_per_cycle"] == 64
    rocket = cpus.host_cpu({"cpu": {**cpu, "flags": ["avx512f", "fma"]}})
    assert rocket["uarch"] == "rocket-lake" and rocket["flops_per_cycle"] == 32


def test_a_peak_known_only_as_a_lower_bound_concludes_only_lower():
    """With the GEMM probe as the peak (a lower bound), the run's efficiency is an upper bound: HIGHER or
    SIMILAR cannot be concluded (INCONCLUSIVE, said why), LOWER still can."""
    fast = with_cpu_peak(load("cpu-a"), gflops=900.0)  # beats 627 GFLOP/s theoretical
    nums = {n["id"]: n for n in suites.load_published("003")}
    higher = verdicts.verdict(nums["003-L377"], fast.result(nums["003-L377"]["cell"]), fast)
    assert higher["verdict"] == "INCONCLUSIVE" and "known only as a lower bound" in higher["reason"]
    lower = verdicts.verdict(nums["003-L392"], fast.result(nums["003-L392"]["cell"]), fast)
    assert lower["verdict"] == "EFFICIENCY_LOWER"


def test_an_impossible_published_number_still_has_its_measurement_checked_against_its_device():
    """The stored H100 run (docs/gpu-run) measured 001's word LM at 1.6M and 6.2M
    words/s with the source's unsynchronised timer, 6-8x the H100's own bound. IMPLAUSIBLE (from the
    published number) used to return before that check: the rows now carry ABOVE_PEAK with the
    arithmetic, and their hardware (a P100 publication, an H100 measurement: same class, another
    model) instead of 'hardware unknown'."""
    from reprokit.report import reproduction

    gpu_run = Path(__file__).resolve().parents[2] / "docs" / "gpu-run"
    run = reader.load(gpu_run / "20261126T175757Z-legacy-2017")
    rows = [n for n in suites.load_published("001") if n["cell"] in run.results]
    assert rows
    for n in rows:
        v = verdicts.verdict(n, run.result(n["cell"]), run)
        assert v["verdict"] == "IMPLAUSIBLE" and "ABOVE_PEAK" in v["labels"], (n["id"], v["labels"])
        assert "faster than its own device can compute too" in v["reason"] and v["above_peak"]["fraction"] > 1
        assert v["hardware"]["same_class"] is True and v["hardware"]["same_model"] is False
        assert reproduction.kind(v, True)["hardware"] == "same class"
