"""Preflight verdicts for cells, with hosts and GPUs given as data (no GPU exists here).

Every GPU rule below is checked only against the compatibility tables; none was run on a GPU.
"""

from pathlib import Path

import pytest
import yaml

from reprokit.errors import UserError
from reprokit.plan import compat as compat_data
from reprokit.plan import preflight
from reprokit.plan.compat import load_compat
from reprokit.plan.preflight import (
    check_cell,
    check_stack_cell,
    coverage_mode,
    host_from_fingerprint,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def gpu(name="NVIDIA H100 80GB HBM3", cc="9.0", driver="580.95.05", cuda="13.0"):
    return {"name": name, "compute_capability": cc, "driver_version": driver, "cuda_driver_version": cuda}


def fingerprint(*gpus, available=True):
    return {"nvidia": {"available": available}, "gpus": list(gpus)}


def host(*gpus, engine=True, image_state="present"):
    images = {}
    if image_state is not None:
        for stack_image in (
            "legacy-2017-tensorflow",
            "2019-pytorch",
            "modern",
            "2019-tensorflow",
            "legacy-2017-theano",
            "smoke-python",
            "2018-keras-mxnet",
        ):
            for flavour in ("cpu", "gpu"):
                images[f"reprokit/{stack_image}:{flavour}"] = image_state
    fp = fingerprint(*gpus, available=bool(gpus))
    return host_from_fingerprint(fp, engine_present=engine, images=images)


def failed(verdict):
    return [c["name"] for c in verdict["checks"] if not c["ok"]]


# ------------------------------------------------------------------------------ required cases


def test_no_engine_blocks_docker_runner(compat):
    verdict = check_stack_cell("smoke-python", host(engine=False), 0, runner="docker", compat=compat)
    assert verdict["status"] == "blocked" and not verdict["runnable"]
    assert failed(verdict) == ["engine"]
    assert any("docker engine not reachable" in r for r in verdict["reasons"])


def test_no_engine_is_irrelevant_for_local_runner(compat):
    verdict = check_stack_cell("smoke-python", host(engine=False), 0, runner="local", compat=compat)
    assert verdict == {"runnable": True, "status": "ok", "reasons": [], "checks": [], "env": {}}


def test_gpu_cell_without_gpu_is_blocked(compat):
    verdict = check_stack_cell("tf-1.2", host(), 1, compat=compat)
    assert verdict["status"] == "blocked"
    assert failed(verdict) == ["gpu_count"]
    assert verdict["reasons"] == ["cell needs 1 GPU(s), host has 0 (no NVIDIA driver/NVML)"]


def test_more_gpus_needed_than_present(compat):
    verdict = check_stack_cell("torch-modern", host(gpu()), 2, compat=compat)
    assert verdict["status"] == "blocked"
    assert "cell needs 2 GPU(s), host has 1" in verdict["reasons"]


def test_cuda8_tensorflow_on_hopper_needs_a_probe_and_warns_of_jit(compat):
    # reaching sm_90 only through PTX JIT is "needs a probe", not runnable, until a
    # probe of the image on this host passed (tests/plan/test_probes.py); the local runner runs no image
    verdict = check_stack_cell("tf-1.2", host(gpu()), 1, compat=compat)
    assert verdict["status"] == "probe" and not verdict["runnable"]
    assert failed(verdict) == []
    assert check_stack_cell("tf-1.2", host(gpu()), 1, runner="local", compat=compat)["status"] == "jit"
    verdict = check_stack_cell("tf-1.2", host(gpu()), 1, runner="local", compat=compat)
    tf = next(c for c in verdict["checks"] if c["name"] == "arch:tf-1.2.1-source-cuda8")
    assert "no SASS for sm_90" in tf["detail"] and "compute_61" in tf["detail"]
    jit = [r for r in verdict["reasons"] if r.startswith("warning: expect PTX JIT")]
    assert len(jit) == 1
    assert "~30 minutes" in jit[0] and "CUDA_CACHE_PATH=" in jit[0] and "excluded from timings" in jit[0]
    assert verdict["env"] == compat["jit"]["cache_env"]


def test_pytorch13_on_hopper_is_blocked_by_pruned_cudnn_cublas(compat):
    verdict = check_stack_cell("torch-1.3", host(gpu()), 1, compat=compat)
    assert verdict["status"] == "blocked" and not verdict["runnable"]
    assert set(failed(verdict)) == {
        "arch:torch-1.3.0-static-cudnn-cublas",
        "blocker:torch13-pruned-cudnn-cublas",
    }
    assert any("neither SASS nor PTX for sm_90" in r and "do not launch" in r for r in verdict["reasons"])


def test_pytorch13_on_turing_is_native(compat):
    verdict = check_stack_cell(
        "torch-1.3", host(gpu("GeForce RTX 2080 Ti", "7.5", "418.87.00", "10.1")), 1, compat=compat
    )
    assert verdict["status"] == "ok", verdict["reasons"]
    assert verdict["reasons"] == []


def test_modern_torch_on_hopper_is_native(compat):
    verdict = check_stack_cell("torch-modern", host(gpu()), 1, compat=compat)
    assert verdict["status"] == "ok" and verdict["runnable"]
    arch = [c for c in verdict["checks"] if c["name"].startswith("arch:")]
    assert arch and all("native SASS for sm_90" in c["detail"] for c in arch)
    assert verdict["env"] == {}


def test_driver_too_old_for_cuda10_is_blocked(compat):
    volta_old_driver = gpu("Tesla V100-SXM2-16GB", "7.0", "396.26", "9.2")
    verdict = check_stack_cell("tf-2.0", host(volta_old_driver), 1, compat=compat)
    assert verdict["status"] == "blocked"
    assert "driver" in failed(verdict) and "driver_cuda" in failed(verdict)
    assert any("driver 396.26 < 410.48 needed by CUDA 10.0.130" in r for r in verdict["reasons"])


def test_driver_new_enough_for_cuda10(compat):
    verdict = check_stack_cell(
        "tf-2.0", host(gpu("Tesla V100-SXM2-16GB", "7.0", "410.48", "10.0")), 1, compat=compat
    )
    assert "driver" not in failed(verdict)


# ------------------------------------------------------------------------------ more behaviour


def test_theano_on_hopper_relies_on_image_mitigations(compat):
    verdict = check_stack_cell("theano-0.9", host(gpu()), 1, compat=compat)
    assert verdict["status"] == "probe"  # PTX JIT on sm_90: a probe decides
    mitigated = [r for r in verdict["reasons"] if "mitigated in the image" in r]
    # libgpuarray's driver-version check and its NVRTC arch cap (the old backend's nvcc -arch blocker
    # went with that backend: the kit runs device=cuda)
    assert len(mitigated) == 2


def test_unmitigated_blocker_blocks(compat):
    stack = compat_data.stack_from_compat("theano-0.9", compat)
    for blocker in stack["blockers"]:
        blocker["mitigated_in_image"] = False
    verdict = check_cell(stack, host(gpu()), 1, compat=compat)
    assert verdict["status"] == "blocked"
    assert "blocker:libgpuarray-driver-cuda-version" in failed(verdict)
    assert "blocker:nvrtc8-no-compute70" in failed(verdict)
    # the seed's own GPU (M40, CC 5.2) under a CUDA 8 driver trips neither condition; the gpuarray
    # backend the kit runs (device=cuda) loads libgpuarray's NVRTC PTX there too: a JIT, not a block
    m40 = gpu("Tesla M40 24GB", "5.2", "375.26", "8.0")
    verdict = check_cell(stack, host(m40), 1, compat=compat)
    assert verdict["status"] == "probe", verdict["reasons"]  # a PTX-JIT stack needs its probe first
    assert not failed(verdict) and any("expect PTX JIT" in r for r in verdict["reasons"])
    assert "arch:theano-0.9-nvcc-sm52" not in {c["name"] for c in verdict["checks"]}


def test_mxnet_handtuned_cudnn_is_a_warning_not_a_block(compat):
    verdict = check_stack_cell("keras-mxnet-1.2", host(gpu()), 1, compat=compat)
    assert verdict["status"] == "probe"  # PTX JIT on sm_90: a probe decides
    assert any("hand-tuned" in r for r in verdict["reasons"])


def test_image_missing_and_not_buildable_blocks(compat):
    verdict = check_stack_cell("smoke-python", host(image_state="missing"), 0, compat=compat)
    assert failed(verdict) == ["image"]
    buildable = check_stack_cell("smoke-python", host(image_state="buildable"), 0, compat=compat)
    assert buildable["status"] == "ok"
    unknown = check_stack_cell("smoke-python", host(image_state=None), 0, compat=compat)
    assert failed(unknown) == ["image"]


def test_cpu_cell_needs_cpu_flavour_gpu_cell_needs_gpu_flavour(compat):
    h = host_from_fingerprint(
        fingerprint(gpu()), engine_present=True, images={"reprokit/modern:cpu": "present"}
    )
    assert check_stack_cell("torch-modern", h, 0, compat=compat)["status"] == "ok"
    verdict = check_stack_cell("torch-modern", h, 1, compat=compat)
    assert failed(verdict) == ["image"] and "reprokit/modern:gpu" in verdict["reasons"][0]


def test_stack_without_gpu_flavour(compat):
    verdict = check_stack_cell("smoke-python", host(gpu()), 1, compat=compat)
    assert failed(verdict) == ["gpu_flavour"]


def test_unknown_coverage_warns_but_does_not_block(compat):
    pascal = gpu("Tesla P100-PCIE-16GB", "6.0", "410.48", "10.0")
    verdict = check_stack_cell("tf-1.2", host(pascal), 1, compat=compat)
    assert verdict["status"] == "ok"
    assert any("cudnn-6.0.21 is unverified [U]" in r for r in verdict["reasons"])


def test_host_from_fingerprint_normalises_gpus():
    fp = {
        "nvidia": {"available": True, "driver_version": "550.54.15"},
        "gpus": [{"name": "A100", "compute_capability": [8, 0], "cuda_driver_version": 12040}],
    }
    h = host_from_fingerprint(fp, engine_present=False)
    assert h["engine_present"] is False and h["nvidia_available"] is True
    assert h["gpus"] == [
        {
            "index": 0,
            "name": "A100",
            "compute_capability": [8, 0],
            "driver_version": "550.54.15",
            "cuda_driver_version": 12040,
        }
    ]
    assert preflight.parse_cc(h["gpus"][0]["compute_capability"]) == (8, 0)
    assert preflight.parse_cuda_driver_version(12040) == (12, 4)
    assert preflight.parse_cuda_driver_version("13.0") == (13, 0)
    assert host_from_fingerprint({"nvidia": {"available": False}, "gpus": [{"name": "x"}]})["gpus"] == []


def test_coverage_mode_rules():
    binary = {"sass": ["6.0", "7.0"], "ptx": ["7.0"]}
    assert coverage_mode(binary, (6, 1)) == "native"  # same major, higher minor
    assert coverage_mode(binary, (7, 5)) == "native"
    assert coverage_mode(binary, (8, 0)) == "jit"  # sm_7x SASS never runs on 8.x
    assert coverage_mode(binary, (5, 2)) == "none"
    assert coverage_mode({"sass": ["7.5"], "ptx": []}, (9, 0)) == "none"
    assert coverage_mode({"sass": None, "ptx": None}, (9, 0)) == "unknown"


def test_unknown_runner_is_an_error(compat):
    with pytest.raises(ValueError, match="unknown runner"):
        check_stack_cell("smoke-python", host(), 0, runner="kubernetes", compat=compat)


# ------------------------------------------------------------------------------ the data itself


def test_compat_data_validates_and_references_resolve(compat):
    assert compat["schema_version"] == 1
    for binary in compat["binaries"].values():
        assert binary["evidence"] in ("V", "S", "U") and binary["source"]


def test_compat_schema_rejects_a_misspelt_field(tmp_path):
    data = yaml.safe_load((ROOT / "reprokit/data/compat.yaml").read_text())
    data["binaries"]["torch-1.3.0"]["ptxx"] = ["5.0"]
    bad = tmp_path / "compat.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(UserError, match=f"^{bad} does not match the compat schema: .*ptxx"):
        load_compat(bad)


def test_compat_rejects_unknown_binary_reference(tmp_path):
    data = yaml.safe_load((ROOT / "reprokit/data/compat.yaml").read_text())
    data["stacks"]["tf-1.2"]["binaries"].append("no-such-binary")
    bad = tmp_path / "compat.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(compat_data.CompatError, match="no-such-binary"):
        load_compat(bad)


def test_compat_and_stacks_yaml_name_the_same_stacks_and_only_stacks_yaml_names_images(compat):
    stacks = yaml.safe_load((ROOT / "reprokit/data/stacks.yaml").read_text())["stacks"]
    assert set(compat["stacks"]) == set(stacks)
    assert not any("image" in entry for entry in compat["stacks"].values())
    for name, stack in stacks.items():
        assert check_stack_cell(name, host(), 0, runner="local", compat=compat) is not None
        assert compat_data.stack_from_compat(name, compat)["image"] == stack["image"]
        assert (ROOT / "images" / stack["image"] / "Dockerfile").is_file()


def test_a_compat_stack_that_stacks_yaml_does_not_define_is_rejected(tmp_path):
    data = yaml.safe_load((ROOT / "reprokit/data/compat.yaml").read_text())
    data["stacks"]["tf-9.9"] = dict(data["stacks"]["tf-1.2"])
    bad = tmp_path / "compat.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(compat_data.CompatError, match="stacks.yaml does not define"):
        load_compat(bad)
