"""Compose files: in sync with the suite data, accepted by docker-compose, runnable on a real engine."""

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import docker
import pytest
import yaml
from conftest import docker_client

from reprokit import results, validate
from reprokit.catalog import suites
from reprokit.containers import compose, images
from reprokit.containers.build import build_image

HAVE_COMPOSE = shutil.which("docker-compose") is not None


engine = docker_client  # skips the test when no engine answers


def test_committed_compose_files_match_the_suite_data(repo):
    stale = compose.stale_files(repo / "compose")
    assert not stale, f"run `python -m reprokit.containers.compose`: stale {stale}"
    assert compose.main(["--check"]) == 0


def test_one_service_per_stack_with_the_runner_security_settings():
    doc = compose.compose_doc("smoke")
    suite = suites.load_suite("smoke")
    assert list(doc["services"]) == list(dict.fromkeys(c.stack for c in suite.cells))
    stacks = suites.load_stacks()
    for name, svc in doc["services"].items():
        assert svc["image"] == images.alias_tag(stacks[name]["image"], "cpu")
        assert svc["command"][-1] == f"/results/jobs/{name}.docker.json"
        assert svc["network_mode"] == "none" and svc["read_only"] is True
        assert svc["privileged"] is False and svc["cap_drop"] == ["ALL"]
        assert svc["security_opt"] == ["no-new-privileges"]
        mounts = {v["target"]: v for v in svc["volumes"]}
        assert mounts["/opt/reprokit/bench"]["read_only"] is True
        assert mounts["/results"]["read_only"] is True
        assert mounts["/results/cells"]["read_only"] is False
        assert "deploy" not in svc
    # the smoke suite has no published (GPU) numbers: no GPU file
    assert "smoke.gpu.yml" not in compose.expected_files()


def test_gpu_files_reserve_nvidia_devices():
    doc = compose.compose_doc("keras-mxnet-2018", "gpu")
    for svc in doc["services"].values():
        (dev,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert dev["driver"] == "nvidia" and dev["capabilities"] == ["gpu"]
        # the suite's largest cell needs 8 GPUs: reserved by id, and the variable names the same
        assert dev["device_ids"] == [str(i) for i in range(8)] and "count" not in dev
        assert svc["environment"]["NVIDIA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
        assert svc["image"].endswith(":gpu")
    legacy = compose.compose_doc("legacy-2017", "gpu")
    ids = {tuple(s["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"])
           for s in legacy["services"].values()}
    assert ids == {("0",)}


@pytest.mark.skipif(not HAVE_COMPOSE, reason="docker-compose is not installed")
def test_docker_compose_accepts_every_file(repo, tmp_path):
    env = {**os.environ, "REPROKIT_RUN_DIR": str(tmp_path), "REPROKIT_USER": "1234:1234"}
    paths = sorted((repo / "compose").glob("*.yml"))
    assert paths
    config = lambda p: subprocess.run(["docker-compose", "-f", str(p), "config"],  # noqa: E731
                                      capture_output=True, text=True, env=env, timeout=120)
    with ThreadPoolExecutor(4) as pool:  # docker-compose takes seconds to start
        outs = list(pool.map(config, paths))
    for path, out in zip(paths, outs):
        assert out.returncode == 0, f"{path.name}: {out.stderr}"
        cfg = yaml.safe_load(out.stdout)
        for svc in cfg["services"].values():
            assert svc["user"] == "1234:1234"
            assert {v["source"] for v in svc["volumes"]} >= {str(tmp_path), f"{tmp_path}/cells"}


@pytest.mark.docker
@pytest.mark.skipif(not HAVE_COMPOSE, reason="docker-compose is not installed")
def test_docker_compose_runs_the_smoke_stack(repo, tmp_path, monkeypatch):
    c = engine()
    lock = tmp_path / "lock.json"
    monkeypatch.setenv("REPROKIT_IMAGE_LOCK", str(lock))
    entry = build_image(c, "smoke-python", say=lambda *_: None)
    run_dir = tmp_path / "run"
    env_file = compose.prepare_run_dir("smoke", run_dir, quick=True, client=c)
    assert f"REPROKIT_IMAGE_ID_SMOKE_PYTHON={entry['image_id']}" in env_file.read_text()
    project = f"reprokit-test-{os.getpid()}"
    base = ["docker-compose", "--env-file", str(env_file), "-f", str(repo / "compose/smoke.yml"),
            "-p", project]
    try:
        out = subprocess.run(base + ["up", "--no-color", "smoke-python"], capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
    finally:
        subprocess.run(base + ["down"], capture_output=True, timeout=120)
    (path,) = (run_dir / "cells").glob("*.json")
    doc = json.loads(path.read_text())
    assert not validate.errors("cell_result", doc)
    assert doc["status"] == "ok", doc["reason"]
    assert doc["stack_fingerprint"]["image"]["id"] == entry["image_id"]
    assert results.cell_filename("smoke/python/matmul/n24") == path.name


@pytest.mark.docker
def test_run_dir_for_gpu_names_and_prepares_each_stacks_jit_cache_volume(tmp_path, monkeypatch):
    """`run-dir --flavour gpu` creates each stack image's JIT cache volume, hands it to the run's
    user and names it in compose.env for the GPU file. No GPU image is built here: the smoke image
    stands in for each stack's (the volume and its chown do not depend on the framework)."""
    from reprokit.containers import spec

    c = engine()
    monkeypatch.setenv("REPROKIT_IMAGE_LOCK", str(tmp_path / "lock.json"))
    entry = build_image(c, "smoke-python", say=lambda *_: None)
    smoke = images.find_image(c, "smoke-python", "cpu")
    monkeypatch.setattr(images, "find_image", lambda *a, **k: smoke)
    monkeypatch.setattr(spec, "host_gpu_key", lambda *a: f"test-{os.getpid()}")
    env_file = compose.prepare_run_dir("legacy-2017", tmp_path / "run", flavour="gpu", client=c)
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    doc = compose.compose_doc("legacy-2017", "gpu")
    made = []
    try:
        for stack in doc["services"]:
            name = values[compose.jit_env_name(stack)]
            made.append(name)
            assert name == spec.jit_volume_name(suites.load_stacks()[stack]["image"], "gpu",
                                                entry["image_id"], f"test-{os.getpid()}")
            assert c.volumes.get(name).attrs["Labels"]["reprokit.jit.flavour"] == "gpu"
            out = c.containers.run(entry["image_id"], ["stat", "-c", "%u:%g", spec.jit_cache_path()],
                                   remove=True, network_mode="none", mounts=[docker.types.Mount(
                                       spec.jit_cache_path(), name, type="volume")])
            assert out.decode().strip() == values["REPROKIT_USER"]
            key = next(v["source"] for v in doc["services"][stack]["volumes"] if v["type"] == "volume")
            assert doc["volumes"][key]["name"].startswith("${%s:-" % compose.jit_env_name(stack))
    finally:
        for name in made:
            try:
                c.volumes.get(name).remove(force=True)
            except Exception:
                pass
