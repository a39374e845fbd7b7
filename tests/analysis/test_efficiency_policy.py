"""Peaks of the precision that ran, the cross-generation efficiency policy, the device a cell
ran on (cell.gpus, Slurm node, MIG), and flags on achieved rates above the peak.

Synthetic cells and runs only (pure logic); the stored runs in tests/data/runs give the measurements.
"""

from pathlib import Path

import pytest

from reprokit import results
from reprokit.analysis import devices, flops, verdicts
from reprokit.catalog import suites
from reprokit.reader import load as reader
from reprokit.reader.frozen import thaw
from reprokit.reader.result import CellResult
from tests import models

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
FP32 = {"requested": "fp32", "effective": "fp32", "why": "set and read back (synthetic)",
        "settings": {"torch.backends.cuda.matmul.allow_tf32": False}, "env": {}, "autotune": {}}
TF32 = {"requested": "framework_default", "effective": "tf32", "why": "allow_tf32 read back True (synthetic)",
        "settings": {"torch.backends.cuda.matmul.allow_tf32": True}, "env": {}, "autotune": {}}


# -- peaks.yaml --------------------------------------------------------------------------------------
def test_h200_nvl_is_not_the_sxm_part():
    sxm, nvl = flops.find_gpu("NVIDIA H200"), flops.find_gpu("NVIDIA H200 NVL")
    assert (sxm["entry"], nvl["entry"]) == ("h200-sxm", "h200-nvl")
    assert nvl["fp32_tflops"] < sxm["fp32_tflops"]
    assert nvl["tf32_tensor_tflops"] < sxm["tf32_tensor_tflops"]
    assert flops.find_gpu("NVIDIA H100 NVL")["entry"] == "h100-nvl"


def test_p40_at_nvidias_figure():
    p40 = flops.find_gpu("Tesla P40")
    assert p40["fp32_tflops"] == 12.0
    assert flops.find_gpu("2x Tesla P40")["peak_tflops"] == 24.0


@pytest.mark.parametrize("name", ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe",
                                  "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA B200",
                                  "NVIDIA GeForce RTX 5090"])
def test_tf32_gpus_have_a_sourced_dense_tf32_peak(name):
    hit = flops.find_gpu(name)
    e = flops.load_peaks()["gpus"][hit["entry"]]
    assert hit["tf32_tensor_tflops"] >= e["fp32_tflops"]
    assert e["tf32_sources"] and isinstance(e["tf32_verified"], bool)
    if not e["tf32_verified"]:
        assert e.get("tf32_notes"), f"{hit['entry']}: an unverified TF32 figure says why"


def test_pre_ampere_gpus_have_no_tf32_peak():
    for name in ("Tesla M40 24GB", "Tesla V100-PCIE-16GB", "GeForce RTX 2080 Ti", "Tesla P40"):
        assert flops.find_gpu(name)["tf32_tensor_tflops"] is None


# -- synthetic results -------------------------------------------------------------------------------
def load(name):
    run = reader.load(RUNS / name)
    return run, run.results


NUMBERS = {n["id"]: n for n in suites.load_published("000")}


def scaled(cell, metric, factor):
    """The cell with every sample of `metric` (and its as-published figure, if any) times `factor`."""
    doc = thaw(cell.doc)
    m = doc["metrics"][metric]
    m["samples"] = [x * factor for x in m["samples"]]
    if isinstance(m.get("as_published"), dict):
        m["as_published"] = {k: (v * factor if isinstance(v, float) else v)
                             for k, v in m["as_published"].items()}
    return models.cell(doc)


def on_gpu(cell, name, precision=None, mig=None):
    """The cell (a CellResult or a stored document) as if it recorded its GPU (and precision)."""
    doc = thaw(cell.doc if isinstance(cell, CellResult) else cell)
    doc["gpus"] = [{"index": 0, "uuid": "GPU-synthetic", "name": name, "visible_as": "0", "mig": mig}]
    doc["gpus_source"] = "synthetic: Docker device ids"
    if precision:
        doc["precision"] = precision
    return models.cell(doc)


def verdict_of(nid, cell, run):
    return verdicts.verdict(NUMBERS[nid], cell, run)


def test_an_h200_result_with_tf32_gets_no_fp32_efficiency_verdict():
    run, cells = load("v100-other")
    n = NUMBERS["000-L012"]
    v = verdict_of("000-L012", on_gpu(cells[n["cell"]], "NVIDIA H200", TF32), run)
    assert v["verdict"] == "NOT_COMPARABLE" and "EFFICIENCY_CONTEXT" in v["labels"]
    assert not any(label.startswith("EFFICIENCY_") and label != "EFFICIENCY_CONTEXT" for label in v["labels"])
    m = v["efficiency"]["measured"]
    assert m["precision"] == "tf32" and m["peak_kind"] == "TF32 tensor peak"
    assert m["peak_tflops"] == pytest.approx(494.7)  # the tensor peak, not the 66.9 fp32 one
    assert "this cell ran in tf32" in v["reason"] and v["efficiency_is_context"]


def test_an_h200_result_in_fp32_is_context_because_the_peaks_are_far_apart():
    run, cells = load("v100-other")
    n = NUMBERS["000-L012"]
    v = verdict_of("000-L012", on_gpu(cells[n["cell"]], "NVIDIA H200", FP32), run)
    assert v["verdict"] == "NOT_COMPARABLE" and v["labels"][-1] == "EFFICIENCY_CONTEXT"
    assert v["policy"]["peak_ratio"] == pytest.approx(66.9 / 7.0)
    assert v["efficiency"]["measured"]["peak_kind"] == "fp32 peak"


def test_peak_ratio_rule_at_the_limit():
    """An A100 (19.5) against an RTX 2080 Ti (13.45) is 1.45x: a verdict; against an M40 (7.0) 2.8x: not."""
    e = {"measured": {"peak_tflops": 19.5}, "published": {"peak_tflops": 13.45}}
    assert verdicts.peak_ratio(e) == pytest.approx(1.4498, abs=1e-3)
    assert verdicts.peak_ratio({"measured": {"peak_tflops": 7.0}, "published": {"peak_tflops": 19.5}}) > 2.7
    assert verdicts.load_policy()["efficiency"]["max_peak_ratio"] == 1.5
    run, cells = load("v100-other")
    n = NUMBERS["000-L012"]
    v = verdict_of("000-L012", on_gpu(cells[n["cell"]], "NVIDIA A100-SXM4-80GB", FP32), run)
    assert v["verdict"] == "NOT_COMPARABLE" and "2.79x apart" in v["reason"]


def test_a_result_above_the_peak_is_flagged_never_a_verdict():
    run, cells = load("v100-other")
    n = NUMBERS["000-L012"]
    fast = scaled(on_gpu(cells[n["cell"]], "NVIDIA H200", TF32), n["metric"], 1e-4)
    v = verdict_of("000-L012", fast, run)
    assert v["verdict"] == "NOT_COMPARABLE" and "ABOVE_PEAK" in v["labels"]
    assert v["above_peak"]["fraction"] > 1 and v["above_peak"]["peak_tflops"] == pytest.approx(494.7)
    assert "faster than its device can compute" in v["reason"]
    # the same on the publication's own GPU model: no DEVIATES_FASTER from an impossible timing
    run, cells = load("m40-same")
    v = verdict_of("000-L012", scaled(cells[n["cell"]], n["metric"], 1e-3), run)
    assert v["verdict"] == "NOT_COMPARABLE" and v["labels"] == ["NOT_COMPARABLE", "ABOVE_PEAK"]
    assert v["comparison"] == "above_peak"
    assert verdict_of("000-L012", cells[n["cell"]], run)["verdict"] == "REPRODUCED"  # the real one


# -- the device a cell ran on ------------------------------------------------------------------------
def test_precision_of_cells_without_a_record():
    assert devices.cell_precision(models.cell(device="cpu"))[0] == "fp32"
    assert "no reduced-precision default" in devices.cell_precision(models.cell(device="cpu"))[1]
    assert devices.cell_precision(models.cell(device="gpu"))[0] == "unknown"
    assert devices.cell_precision(models.cell(device="gpu", precision=TF32)) == ("tf32", TF32["why"])


def test_cell_gpus_are_preferred_over_the_driver_hosts_fingerprint():
    run, cells = load("v100-other")  # the host fingerprint says Tesla V100-SXM2-16GB
    cell = next(iter(cells.values()))
    d = devices.measured_device(on_gpu(cell, "NVIDIA H200 NVL"), run.machine)
    assert d["label"] == "NVIDIA H200 NVL" and d["entry"] == "h200-nvl"
    assert d["gpus_source"] == "synthetic: Docker device ids"
    host = devices.measured_device(cell, run.machine)
    assert host["entry"] == "v100-sxm2"
    assert host["gpus_source"] == "from the driver host's fingerprint (the cell recorded no GPUs)"
    assert "from the driver host's fingerprint" in host["peak_source"]


def test_a_slurm_cells_node_gpus_come_before_the_login_nodes():
    run, cells = load("v100-other")
    cell = next(iter(cells.values()))
    login = models.machine({**run.host, "gpus": []}, run.cpu_peak)
    node = models.cell({**thaw(cell.doc), "runner": {
        **thaw(cell.runner), "node": "gpu07",
        "node_fingerprint": {"gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB"}]}}})
    d = devices.measured_device(node, login)
    assert d["entry"] == "a100" and "Slurm node gpu07" in d["gpus_source"]
    assert devices.measured_device(cell, login)["peak_tflops"] is None  # no GPU anywhere: no peak


def test_a_mig_slice_scales_the_peak_or_refuses_it():
    run, cells = load("v100-other")
    cell = next(iter(cells.values()))
    mig = {"uuid": "MIG-x", "parent_uuid": "GPU-synthetic", "profile": "1g.10gb", "sm_fraction": 14 / 98}
    d = devices.measured_device(on_gpu(cell, "NVIDIA A100-SXM4-80GB", mig=mig), run.machine)
    assert d["peaks"]["fp32"] == pytest.approx(19.5 * 14 / 98)
    assert d["peaks"]["tf32"] == pytest.approx(156.0 * 14 / 98)
    assert d["entry"] != "a100" and "MIG 1g.10gb" in d["label"]
    no_fraction = {**mig, "sm_fraction": None}
    unknown = devices.measured_device(on_gpu(cell, "NVIDIA A100-SXM4-80GB", mig=no_fraction), run.machine)
    assert unknown["peak_tflops"] is None and "MIG slice" in unknown["reason"]
    # MIG mode on the host's GPU and no slice recorded by the cell: its share is unknown as well
    mig_host = models.machine({**run.host, "gpus": [
        {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "mig_mode": {"current": True, "pending": True}}]},
        run.cpu_peak)
    assert devices.measured_device(cell, mig_host)["peak_tflops"] is None
    n = NUMBERS["000-L012"]
    v = verdict_of("000-L012", on_gpu(cells[n["cell"]], "NVIDIA A100-SXM4-80GB", FP32,
                                      mig={**mig, "sm_fraction": None}), run)
    assert v["verdict"] == "NOT_COMPARABLE" and "MIG slice" in v["reason"]


# -- the report shows what the policy changed --------------------------------------------------------
def test_the_report_labels_the_numbers_the_policy_keeps_from_a_verdict(tmp_path):
    import json
    import shutil

    from reprokit.report import report

    dst = tmp_path / "v100-other"
    shutil.copytree(RUNS / "v100-other", dst)
    for f in (dst / "cells").glob("*cudnn_lstm*.json"):
        c = json.loads(f.read_text())
        f.write_text(json.dumps(on_gpu(c, "NVIDIA H200", TF32).doc))
    rd = results.RunDir(dst)
    report.render(rd)
    md = (dst / "report.md").read_text()
    row = next(line for line in md.splitlines() if "| 000-L012 |" in line and "ms" in line)
    assert "| NOT_COMPARABLE EFFICIENCY_CONTEXT" in row and "this cell ran in tf32" in row
    assert "Efficiency policy (reprokit/data/verdict_policy.yaml)" in md
    assert ("- 000-L012: EFFICIENCY_CONTEXT: ran in tf32, published in fp32; the efficiency band alone would "
            "say EFFICIENCY_") in md
    html = (dst / "report.html").read_text()
    assert 'id="efficiency-policy"' in html and "EFFICIENCY_CONTEXT: ran in tf32" in html


@pytest.mark.parametrize("name", sorted(p.stem for p in (RUNS.parent / "fingerprints").glob("*.json")))
def test_every_stored_gpu_fingerprint_has_fp32_and_tf32_peaks(name):
    """The GPUs of the stored fingerprints (A100, B200, H100, H200, RTX 5090 ...) are the ones a re-run
    lands on: each has a peak for both precisions a cell can record."""
    import json

    fp = json.loads((RUNS.parent / "fingerprints" / f"{name}.json").read_text())
    d = devices.measured_device(models.cell(device="gpu"), models.machine(fp))
    assert d["peaks"]["fp32"] and d["peaks"]["tf32"], (name, d.get("reason"))
    assert d["gpus_source"] == "from the driver host's fingerprint (the cell recorded no GPUs)"
