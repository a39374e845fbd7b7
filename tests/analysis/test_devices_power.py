"""The H200 NVL (PCIe card, 600 W) and the H200 SXM (700 W) have one peaks.yaml entry
each; a GPU whose NVML name does not say NVL is told apart by its power limit (peaks.yaml
`by_power_limit`). Pure lookups on the kit's own data."""

from reprokit.analysis import devices, flops
from tests import models


def test_an_h200_at_600_w_is_the_nvl_card_and_at_700_w_the_sxm_module():
    assert flops.find_gpu("NVIDIA H200")["entry"] == "h200-sxm"
    assert flops.find_gpu("NVIDIA H200", power_limit_w=700.0)["entry"] == "h200-sxm"
    assert flops.find_gpu("NVIDIA H200", power_limit_w=600.0)["entry"] == "h200-nvl"
    assert flops.find_gpu("NVIDIA H200 NVL")["entry"] == "h200-nvl"
    assert flops.find_gpu("NVIDIA H100 80GB HBM3", power_limit_w=600.0)["entry"] == "h100-sxm"


def test_a_cells_gpu_takes_its_power_limit_from_its_nvml_state():
    def cell(power_limit_w):
        gpu = {"index": 0, "uuid": "GPU-x", "name": "NVIDIA H200", "mig": None}
        return models.cell(device="gpu", gpus=[gpu],
                           gpu_state={"before": [{"uuid": "GPU-x", "power_limit_w": power_limit_w}]})

    assert devices.measured_device(cell(600.0), None)["entry"] == "h200-nvl"
    assert devices.measured_device(cell(700.0), None)["entry"] == "h200-sxm"
