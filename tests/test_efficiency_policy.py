"""Issue 20: peaks of the precision that ran, the cross-generation efficiency policy, the device a cell
ran on (cell.gpus, Slurm node, MIG), and flags on achieved rates above the peak.

Synthetic cells and runs only (pure logic); the stored runs in tests/data/runs give the measurements.
"""

from pathlib import Path

import pytest

from reprokit import results, suites
from reprokit.analysis import devices, flops, verdicts

RUNS = Path(__file__).resolve().parent / "data" / "runs"
FP32 = {"requested": "fp32", "effective": "fp32", "why": "set and read back (synthetic)"}
TF32 = {"requested": "framework_default", "effective": "tf32", "why": "allow_tf32 read back True (synthetic)"}


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
