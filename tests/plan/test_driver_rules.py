"""Driver rules that follow the images: each image's own NVIDIA_REQUIRE_CUDA, which the
NVIDIA container toolkit checks before a container starts, and CUDA forward compatibility (a newer CUDA
major on an older driver through the cuda-compat package, data-center GPUs only).

Preflight runs for real on stored host fingerprints (tests/data/fingerprints: an H100 and an RTX 5090
on R570, an H200 on R580); the R535 host is the H100's fingerprint with the driver of that branch
written in (driver 535.247.01, CUDA 12.2), since no R535 fingerprint is stored. On today's main the
modern image required cuda>=12.9, so TF and JAX, which preflight called runnable on R535-R570 under
minor-version compatibility, would not have started there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit import files
from reprokit.plan import preflight
from reprokit.plan.compat import image_requirement, load_compat, requirement_holds, stack_from_compat

REPO = Path(__file__).resolve().parents[2]
COMPAT = load_compat()


def fingerprint(name: str, driver: str | None = None, cuda: str | None = None) -> dict:
    fp = json.loads((REPO / "tests" / "data" / "fingerprints" / f"{name}.json").read_text())
    if driver:
        for rec in [fp["nvidia"]] + fp["gpus"]:
            rec["driver_version"], rec["cuda_driver_version"] = driver, cuda
            rec.pop("cuda_driver_version_int", None)
    return fp


HOSTS = {
    "H100 R535": fingerprint("h100", "535.247.01", "12.2"),
    "H100 R570": fingerprint("h100"),
    "H200 R580": fingerprint("h200"),
    "RTX 5090 R570": fingerprint("rtx5090"),
}


def driver_checks(stack_name: str, fp: dict, runner: str = "docker", **stack_fields) -> dict:
    host = preflight.host_from_fingerprint(fp, engine_present=True, images={})
    stack = dict(stack_from_compat(stack_name, COMPAT, needs_gpu=True), **stack_fields)
    verdict = preflight.check_cell(stack, host, 1, runner=runner, compat=COMPAT)
    return {c["name"]: c for c in verdict["checks"]
            if c["name"] in ("driver", "driver_cuda", "image_requirement")}


# (host, stack) -> whether the driver rules let it start: the table of the note
EXPECTED = {
    ("H100 R535", "torch-modern"): False, ("H100 R535", "tf-modern"): True,
    ("H100 R535", "jax-modern"): True, ("H100 R535", "torch-1.3"): True,
    ("H100 R570", "torch-modern"): False, ("H100 R570", "tf-modern"): True,
    ("H100 R570", "jax-modern"): True, ("H100 R570", "torch-1.3"): True,
    ("H200 R580", "torch-modern"): True, ("H200 R580", "tf-modern"): True,
    ("H200 R580", "jax-modern"): True, ("H200 R580", "torch-1.3"): True,
    ("RTX 5090 R570", "torch-modern"): False, ("RTX 5090 R570", "tf-modern"): True,
}


@pytest.mark.parametrize("host, stack", sorted(EXPECTED))
def test_the_driver_rules_on_stored_hosts(host, stack):
    checks = driver_checks(stack, HOSTS[host])
    assert all(c["ok"] for c in checks.values()) is EXPECTED[(host, stack)], checks
    assert "image_requirement" in checks  # the image's own gate is checked under Docker


def test_the_modern_image_asks_the_container_toolkit_for_its_loosest_stack_only():
    assert image_requirement("modern") == "cuda>=12.0"
    dockerfile = (files.IMAGES / "modern" / "Dockerfile").read_text()
    assert "NVIDIA_REQUIRE_CUDA=${NVIDIA_REQUIRE_CUDA}" in dockerfile  # set from that build arg
    for stack in ("torch-modern", "tf-modern", "jax-modern"):  # no stack of it needs less than 12.0
        assert tuple(map(int, COMPAT["stacks"][stack]["cuda"].split(".")))[:2] >= (12, 0)


def test_an_image_requirement_the_driver_misses_blocks_the_cell():
    checks = driver_checks("tf-modern", HOSTS["H100 R570"], require_cuda="cuda>=12.9")
    assert not checks["image_requirement"]["ok"]
    assert "refuses to start the container" in checks["image_requirement"]["detail"]
    assert "cuda>=12.9" in checks["image_requirement"]["detail"]
    # the local runner starts no image: only the stack's own rule applies there
    assert "image_requirement" not in driver_checks("tf-modern", HOSTS["H100 R570"], runner="local",
                                                    require_cuda="cuda>=12.9")


def test_forward_compatibility_is_named_on_data_center_gpus_and_taken_where_the_image_has_it():
    plain = driver_checks("torch-modern", HOSTS["H100 R570"])
    assert "could run through forward compatibility" in plain["driver_cuda"]["detail"]
    assert "cuda-compat-13-x" in plain["driver_cuda"]["detail"]
    with_package = driver_checks("torch-modern", HOSTS["H100 R570"], cuda_compat="cuda-compat-13-0")
    assert all(c["ok"] for c in with_package.values())
    consumer = driver_checks("torch-modern", HOSTS["RTX 5090 R570"], cuda_compat="cuda-compat-13-0")
    assert not consumer["driver_cuda"]["ok"]
    assert "data-center GPUs only" in consumer["driver_cuda"]["detail"]


def test_data_center_names():
    dc = preflight.data_center_gpu
    assert dc({"name": "NVIDIA H100 80GB HBM3"}, COMPAT) and dc({"name": "Tesla P100-PCIE-16GB"}, COMPAT)
    assert dc({"name": "NVIDIA B200"}, COMPAT) and dc({"name": "NVIDIA A100-SXM4-80GB"}, COMPAT)
    assert not dc({"name": "NVIDIA GeForce RTX 5090"}, COMPAT)
    assert not dc({"name": "NVIDIA GeForce RTX 4090"}, COMPAT)  # "A40"-like substrings do not count


@pytest.mark.parametrize("text, cuda, driver, holds", [
    ("cuda>=12.9", (12, 8), (570, 133), False),
    ("cuda>=12.9", (12, 9), (575, 51), True),
    ("cuda>=12.0", (12, 2), (535, 247), True),
    ("cuda>=8.0", (13, 0), (580,), True),
    # NVIDIA's own images: the CUDA floor, or a data-center brand on an R535 driver (forward compatibility)
    ("cuda>=13.0 brand=tesla,driver>=535,driver<536", (12, 2), (535, 247), None),
    ("cuda>=13.0 driver>=535,driver<536", (12, 2), (535, 247), True),
    ("cuda>=13.0 driver>=535,driver<536", (12, 8), (570, 133), False),
    ("cuda>=12.0", None, None, None),
])
def test_the_requirement_expression(text, cuda, driver, holds):
    assert requirement_holds(text, cuda, driver) is holds


def test_the_compat_data_cites_its_sources():
    for key in ("container_requirement", "forward_compatibility"):
        entry = COMPAT[key]
        assert entry["evidence"] in ("S", "V", "U") and entry["source"]
    fwd = COMPAT["forward_compatibility"]
    assert fwd["gpu_names_evidence"] == "U"  # the name list is the kit's, not NVIDIA's
    assert fwd["gpu_names"]
