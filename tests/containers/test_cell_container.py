"""A cell's container as the Docker runner and the compose files describe it, GPU cells included.

No GPU exists on the machines these tests run on: the GPU cell's container is checked as the
runner hands it to the Engine API (a recording client stands in for the engine at that one call),
never started. The CUDA JIT cache volume on a real engine is tested in tests/runners/test_docker_runner.py;
the libcuda.so link of bench/gpu_runtime.py with a real loader below.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from reprokit import files
from reprokit.catalog import suites
from reprokit.containers import compose, images, recipes, spec
from reprokit.plan.plan import bench_facts
from reprokit.runners.docker import DockerRunner

REPO = Path(__file__).resolve().parents[2]
QUIET = lambda *_: None  # noqa: E731
FOUND = images.Found("sha256:" + "ab" * 32, "reprokit/legacy-2017-theano:gpu-0123456789ab", None,
                     "1000:1000", "matches lock")


class Created(Exception):
    """Raised by the recording client where the engine would create the cell's container."""


class RecordingClient:
    """The Docker SDK calls the runner makes before a container exists, recorded; containers.create
    records its arguments and stops the cell there."""

    def __init__(self):
        self.created = None
        self.volumes_made = {}
        self.helpers = []
        client = self

        class Volumes:
            def get(self, name):
                if name not in client.volumes_made:
                    raise docker.errors.NotFound(f"volume {name}")
                return name

            def create(self, name, driver, labels):
                client.volumes_made[name] = {"driver": driver, "labels": labels}
                return name

        class Containers:
            def run(self, image, command, **kw):
                client.helpers.append({"image": image, "command": command, **kw})
                return b""

            def create(self, image, command, **kw):
                client.created = {"image": image, "command": command, **kw}
                raise Created()

        self.volumes, self.containers = Volumes(), Containers()


def theano_spec() -> dict:
    return suites.load_stacks()["theano-0.9"]


def run_cell(tmp_path, monkeypatch, params=None, device="gpu", gpus=None, **runner_kw):
    """What the runner asks the engine for, for one theano-0.9 cell; (client, outcome)."""
    monkeypatch.setattr(images, "find_image", lambda *a, **k: FOUND)
    client = RecordingClient()
    runner = DockerRunner(device=device, gpus=gpus, client=client, say=QUIET, **runner_kw)
    prepared = runner.prepare("theano-0.9", theano_spec())
    run_dir = tmp_path / "run"
    (run_dir / "jobs").mkdir(parents=True)
    cell = {"id": "000/theano/fastlstm/s30-h512", "source": "000", "workload": "s000_theano",
            "variant": "fastlstm", "params": dict(params or {}), "metrics": ["train"],
            "budget": {"min_samples": 1}, "protocol": "budget", "timeout_s": 60}
    job = {"schema_version": 1, "run_id": "run", "stack": "theano-0.9", "kit": files.kit_info(),
           "out_dir": str(run_dir / "cells"), "facts": bench_facts(), "device": device, "cells": [cell]}
    job_path = run_dir / "jobs" / "theano-0.9.json"
    job_path.write_text(json.dumps(job))
    try:
        outcome = runner.run_cell(prepared, job_path, cell, run_dir / "cells",
                                  run_dir / "logs" / "cell.log")
    except Created:
        outcome = None
    return client, outcome


def flags(value: str) -> list[str]:
    return [f for f in value.split(",") if f]


def test_a_gpu_cell_gets_its_gpu_theano_flags_the_jit_cache_and_read_only_mounts(tmp_path,
                                                                                monkeypatch):
    """By construction (never run on a GPU)."""
    client, _ = run_cell(tmp_path, monkeypatch)
    made = client.created
    assert made is not None, "the runner never asked for the cell's container"
    env = made["environment"]
    # exactly the cell's GPU, in the request and in the variable
    (req,) = made["device_requests"]
    assert req["DeviceIDs"] == ["0"] and not req.get("Count") and req["Capabilities"] == [["gpu"]]
    assert env["NVIDIA_VISIBLE_DEVICES"] == "0"
    # Theano 0.9 on the gpuarray backend, float32, keeping every flag the image itself sets
    theano = flags(env["THEANO_FLAGS"])
    assert {"device=cuda", "floatX=float32", "force_device=True"} <= set(theano)
    image_default = recipes.load_recipe("legacy-2017-theano")["flavours"]["gpu"]["build_args"][
        "THEANO_FLAGS_DEFAULT"]
    assert set(flags(image_default)) <= set(theano)
    # libgpuarray's libcuda.so: linked at start in a directory on the writable /tmp tmpfs
    assert env["REPROKIT_LIBCUDA_DIR"].startswith("/tmp/") and "/tmp" in made["tmpfs"]
    # the JIT cache: the compat.yaml path, on a named volume (not a tmpfs), read-write
    cache = spec.jit_cache_env()
    assert env["CUDA_CACHE_PATH"] == cache["CUDA_CACHE_PATH"] == "/var/cache/reprokit/cuda"
    assert int(env["CUDA_CACHE_MAXSIZE"]) >= 4 * 2**30
    assert not any(env["CUDA_CACHE_PATH"].startswith(t) for t in made["tmpfs"])
    mounts = {m["Target"]: m for m in made["mounts"]}
    jit = mounts[env["CUDA_CACHE_PATH"]]
    assert jit["Type"] == "volume" and jit["ReadOnly"] is False
    assert jit["Source"] in client.volumes_made
    assert client.volumes_made[jit["Source"]]["labels"]["reprokit.jit.image_id"] == FOUND.image_id
    writable = {t for t, m in mounts.items() if not m["ReadOnly"]}
    assert writable == {"/results/cells", env["CUDA_CACHE_PATH"]}
    assert mounts["/opt/reprokit/bench"]["ReadOnly"] and mounts["/results"]["ReadOnly"]
    # the rest of the lockdown holds for GPU cells too
    assert made["read_only"] is True and made["network_mode"] == "none"
    assert made["cap_drop"] == ["ALL"] and made["user"] not in ("0", "0:0", "root")
    # the volume is handed to the cell's user by a root container that can only chown
    (helper,) = client.helpers
    assert helper["command"] == ["chown", "-R", made["user"], env["CUDA_CACHE_PATH"]]
    assert helper["cap_drop"] == ["ALL"] and helper["cap_add"] == ["CHOWN", "DAC_READ_SEARCH"]
    assert helper["network_mode"] == "none" and helper["read_only"] is True
    assert [m["Source"] for m in helper["mounts"]] == [jit["Source"]]


def test_the_gpus_option_is_the_pool_and_the_cell_takes_what_it_needs(tmp_path, monkeypatch):
    client, _ = run_cell(tmp_path / "a", monkeypatch, params={"gpus": 2}, gpus="1,3,5")
    assert client.created["device_requests"][0]["DeviceIDs"] == ["1", "3"]
    assert client.created["environment"]["NVIDIA_VISIBLE_DEVICES"] == "1,3"
    client, outcome = run_cell(tmp_path / "b", monkeypatch, params={"gpus": 4}, gpus="2")
    assert client.created is None and outcome.status == "skipped"
    assert "needs 4 GPUs but --gpus 2 gives 2" in outcome.reason
    # a row that runs on the CPU (gpus: 0) asks for no GPU and mounts no JIT cache
    client, _ = run_cell(tmp_path / "c", monkeypatch, params={"gpus": 0})
    assert "device_requests" not in client.created
    assert client.created["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert spec.jit_cache_path() not in {m["Target"] for m in client.created["mounts"]}


def test_a_cpu_cell_sees_no_gpu_and_no_cache_volume(tmp_path, monkeypatch):
    client, _ = run_cell(tmp_path, monkeypatch, device="cpu")
    made = client.created
    assert "device_requests" not in made and made["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert "device=cpu" in flags(made["environment"]["THEANO_FLAGS"])
    assert not client.volumes_made and not client.helpers
    assert {m["Target"]: m["ReadOnly"] for m in made["mounts"]} == {
        "/opt/reprokit/bench": True, "/results": True, "/results/cells": False}


def test_gpu_ids_and_counts():
    assert spec.gpu_ids(None, 1) == ["0"] and spec.gpu_ids("all", 2) == ["0", "1"]
    assert spec.gpu_ids("3", 2) == ["0", "1"] and spec.gpu_ids("device=2,5", 1) == ["2"]
    assert spec.gpu_ids("GPU-aa,GPU-bb", 2) == ["GPU-aa", "GPU-bb"]
    assert spec.gpu_ids("0,1", 0) == []
    with pytest.raises(ValueError, match="needs 3 GPUs but --gpus 0,1 gives 2"):
        spec.gpu_ids("0,1", 3)
    assert spec.cell_gpu_count({}, "gpu") == 1 and spec.cell_gpu_count({"gpus": 8}, "gpu") == 8
    assert spec.cell_gpu_count({"gpus": 0}, "gpu") == 0 and spec.cell_gpu_count({}, "cpu") == 0
    assert spec.visible_devices([]) == "void" and spec.visible_devices(["0", "2"]) == "0,2"


def test_one_jit_volume_per_image_build_and_host_gpu_driver():
    h100 = [{"compute_capability": "9.0", "driver_version": "550.54.15"}]
    key = spec.host_gpu_key(h100, {"driver_version": "550.54.15"})
    assert key == "sm90-drv550.54.15" and spec.host_gpu_key([], {}) == "nogpu"
    mixed = spec.host_gpu_key(h100 + [{"compute_capability": "8.0"}], {"driver_version": "550"})
    assert mixed == "sm80-sm90-drv550"
    a = spec.jit_volume_name("legacy-2017-theano", "gpu", "sha256:" + "1" * 64, key)
    b = spec.jit_volume_name("legacy-2017-theano", "gpu", "sha256:" + "2" * 64, key)
    c = spec.jit_volume_name("legacy-2017-theano", "gpu", "sha256:" + "1" * 64, "nogpu")
    assert len({a, b, c}) == 3 and a == "reprokit-jit-legacy-2017-theano-gpu-111111111111-" + key


def test_the_compose_service_is_the_runners_container():
    """Compose renders the same description: environment, GPUs and the JIT cache volume."""
    doc = compose.compose_doc("legacy-2017", "gpu")
    svc = doc["services"]["theano-0.9"]
    want = spec.environment(theano_spec(), "gpu", ["0"],
                            image_id="${%s:-}" % compose.env_name("theano-0.9"))
    assert svc["environment"] == want
    (dev,) = svc["deploy"]["resources"]["reservations"]["devices"]
    assert ",".join(dev["device_ids"]) == svc["environment"]["NVIDIA_VISIBLE_DEVICES"]
    vols = {v["target"]: v for v in svc["volumes"]}
    jit = vols[spec.jit_cache_path()]
    assert jit["type"] == "volume" and jit["read_only"] is False
    assert doc["volumes"][jit["source"]]["name"].startswith("${REPROKIT_JIT_VOLUME_THEANO_0_9:-")
    assert {t for t, v in vols.items() if not v["read_only"]} == {"/results/cells", jit["target"]}
    cpu = compose.compose_doc("legacy-2017", "cpu")["services"]["theano-0.9"]
    assert cpu["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void" and "deploy" not in cpu
    assert spec.jit_cache_path() not in {v["target"] for v in cpu["volumes"]}


def test_the_compose_service_and_the_runners_container_are_labelled_and_started_alike(tmp_path,
                                                                                       monkeypatch):
    """One label namespace (the compose files said org.reprokit.stack, the runner reprokit.stack)
    and one interpreter, the image's own by absolute path."""
    client, _ = run_cell(tmp_path, monkeypatch)
    svc = compose.compose_doc("legacy-2017", "gpu")["services"]["theano-0.9"]
    assert svc["labels"] == {"reprokit.stack": "theano-0.9"}
    assert client.created["labels"]["reprokit.stack"] == "theano-0.9"
    python = recipes.interpreter("legacy-2017-theano")
    assert python == "/opt/venv/bin/python3"
    assert svc["command"][0] == client.created["command"][0] == python
    assert svc["command"][1:] == client.created["command"][1:3]  # the harness on the same job


def test_each_images_interpreter_is_the_one_its_dockerfile_makes():
    """The interpreter every launcher runs: the venv's python3 where the recipe makes a venv (and
    puts it first on PATH), else the base's python3 package; smoke-python has no venv."""
    for d in recipes.image_dirs():
        text = (REPO / "images" / d / "Dockerfile").read_text()
        python = recipes.interpreter(d)
        if python.startswith(recipes.VENV):
            assert f"python3 -m venv {recipes.VENV}" in text and f"PATH={recipes.VENV}/bin:" in text, d
        else:
            assert python == recipes.SYSTEM_PYTHON and "venv" not in text, d
    assert recipes.interpreter("smoke-python") == "/usr/bin/python3"


def test_the_images_cache_path_is_the_runners():
    """Every GPU-capable image creates CUDA_CACHE_PATH for its user; the runner mounts there."""
    path = spec.jit_cache_path()
    for dockerfile in sorted((REPO / "images").glob("*/Dockerfile")):
        text = dockerfile.read_text()
        if "NVIDIA_REQUIRE_CUDA=${NVIDIA_REQUIRE_CUDA}" in text:
            assert f"CUDA_CACHE_PATH={path}" in text, dockerfile


# -- bench/gpu_runtime.py: the libcuda.so link with the real loader ------------------------------
def harness_job(tmp_path, params) -> Path:
    job = {"schema_version": 1, "run_id": "t", "stack": "smoke-python", "kit": {},
           "out_dir": str(tmp_path / "out"), "facts": bench_facts(), "device": "cpu",
           "cells": [{"id": "t/gpu_runtime", "source": "smoke", "workload": "test_gpu_runtime",
                      "params": params, "metrics": ["cache_files"], "budget": {},
                      "protocol": "budget", "timeout_s": 60}]}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def run_harness(tmp_path, env) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    job = harness_job(tmp_path, {"dlopen": ["libcuda.so"]})
    out = subprocess.run([sys.executable, str(REPO / "bench" / "harness.py"), str(job)],
                         capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in {**os.environ, **env}.items() if v is not None})
    assert out.returncode == 0, out.stderr
    return json.loads((tmp_path / "out" / "t__gpu_runtime.json").read_text())


def fake_driver(tmp_path) -> Path:
    """A directory holding a real shared library named libcuda.so.1, as the toolkit mounts the
    driver's (only the versioned name is there)."""
    lib = next(p for p in (Path("/lib/x86_64-linux-gnu/libz.so.1"), Path("/usr/lib/libz.so.1"))
               if p.exists())
    d = tmp_path / "driver"
    d.mkdir()
    shutil.copy(lib, d / "libcuda.so.1")
    return d


def test_the_harness_links_libcuda_so_to_the_drivers_libcuda_so_1(tmp_path):
    driver = fake_driver(tmp_path)
    link_dir = tmp_path / "link"
    res = run_harness(tmp_path, {"LD_LIBRARY_PATH": str(driver), "REPROKIT_LIBCUDA_DIR": str(link_dir)})
    assert res["status"] == "ok", res["reason"]
    # libgpuarray's dlopen("libcuda.so") reaches the driver's file
    assert res["extra"]["dlopen"]["libcuda.so"] == {"mapped": [str(driver / "libcuda.so.1")]}
    rec = res["stack_fingerprint"]["libcuda_link"]
    assert rec["status"] == "linked" and rec["target"] == str(driver / "libcuda.so.1")
    assert rec["on_ld_library_path"] is True
    assert os.readlink(link_dir / "libcuda.so") == str(driver / "libcuda.so.1")


def test_without_the_link_libcuda_so_is_not_found_and_no_driver_is_recorded(tmp_path):
    driver = fake_driver(tmp_path)
    res = run_harness(tmp_path / "a", {"LD_LIBRARY_PATH": str(driver)})
    assert "cannot open shared object file" in res["extra"]["dlopen"]["libcuda.so"]["error"]
    assert "libcuda_link" not in res["stack_fingerprint"]
    # asked for a link where no driver is mounted: the cell runs on and says why
    res = run_harness(tmp_path / "b", {"REPROKIT_LIBCUDA_DIR": str(tmp_path / "link"),
                                       "LD_LIBRARY_PATH": None})
    assert res["status"] == "ok"
    assert res["stack_fingerprint"]["libcuda_link"]["status"] == "no driver"


def test_prepare_leaves_the_gpu_variable_to_each_cells_request():
    """A launcher reusing the prepared environment with a device request of its own (the Slurm
    Docker launcher's --gpus N) gets no NVIDIA_VISIBLE_DEVICES that could contradict it."""
    gpu = spec.environment(theano_spec(), "gpu")
    assert "NVIDIA_VISIBLE_DEVICES" not in gpu and gpu["CUDA_CACHE_PATH"] == spec.jit_cache_path()
    assert spec.environment(theano_spec(), "gpu", [])["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert spec.environment(theano_spec(), "cpu")["NVIDIA_VISIBLE_DEVICES"] == "void"
