"""The Docker runner on a real engine: the smoke suite end to end, kills, timeouts, OOM, lockdown.

Needs a Docker engine and the local base image (.ci/docker-setup.sh makes both); tests that need
the engine skip only when no engine answers. The GPU request path is checked by construction only:
no GPU exists on the machines these tests run on.
"""

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import docker_client

from reprokit import results, validate
from reprokit.catalog.suites import Cell, Suite, load_stacks
from reprokit.containers import images
from reprokit.containers.build import build_image
from reprokit.containers.spec import device_request
from reprokit.plan.plan import Options, make_plan
from reprokit.run.execute import execute
from reprokit.run.record import exit_code
from reprokit.runners.base import StackUnavailable
from reprokit.runners.docker import DockerRunner, describe_exit

BUDGET = {"min_samples": 3, "max_samples": 20, "time_budget_s": 0, "warmup": 0}
QUIET = lambda *_: None  # noqa: E731


@pytest.fixture(scope="module")
def client():
    return docker_client()


@pytest.fixture(scope="module")
def lock(image_lock):
    return image_lock


@pytest.fixture(scope="module")
def torch_image(client, lock):
    """The CPU flavour of the torch-0.1 stack's image, when its recipe exists (minutes, cold)."""
    if not (images.IMAGES / "legacy-2017-pytorch" / "Dockerfile").exists():
        return None
    return build_image(client, "legacy-2017-pytorch", say=QUIET)


def cell(name, workload="test_sleep", timeout=60, **params):
    metrics = ("slept",) if workload == "test_sleep" else ("matmul_time", "matmul_flops")
    return Cell(id=f"test/docker/{name}", source="smoke", stack="smoke-python", framework="python",
                workload=workload, variant=None, params=params, metrics=metrics, timeout_s=timeout)


def run_cells(tmp_path, cells, runner, name="run1"):
    suite = Suite("test", "test suite", [], {"budget": BUDGET, "quick_budget": BUDGET,
                                             "timeout_s": 60}, list(cells))
    rundir = results.RunDir(tmp_path / name)
    run = execute(make_plan(suite, Options()), runner, rundir, ["test"], say=QUIET)
    return rundir, run


def labelled(client, cell_id):
    return client.containers.list(filters={"label": f"reprokit.cell={cell_id}"})


def wait_for_container(client, cell_id, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = labelled(client, cell_id)
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no running container for {cell_id}")


# -- without an engine: request construction ---------------------------------------------------
def test_gpu_requests_name_exactly_the_cells_gpus():
    """GPU path by construction only: never run on a GPU."""
    req = device_request(["0", "3"])
    assert req["DeviceIDs"] == ["0", "3"] and req["Capabilities"] == [["gpu"]]
    assert not req.get("Count")  # ids, never a count: NVIDIA_VISIBLE_DEVICES names the same GPUs


def test_exit_codes_are_described():
    assert describe_exit(137, True, "1g")[0] == "oom"
    status, reason = describe_exit(137, False, "1g")
    assert status == "crashed" and "SIGKILL" in reason and "outside" in reason
    assert describe_exit(3, False, "1g") == ("crashed", "container exited with status 3 without "
                                                        "writing a result")


# -- on the engine -----------------------------------------------------------------------------
@pytest.mark.docker
def test_unbuilt_image_is_unavailable_with_the_build_command(client, lock):
    runner = DockerRunner(client=client, say=QUIET)
    spec = dict(load_stacks()["smoke-python"], image="no-such-recipe")
    with pytest.raises(StackUnavailable, match=r"not built; run `reproduce.py build --stack x`"):
        runner.prepare("x", spec)


@pytest.mark.docker
def test_an_image_that_is_not_the_locked_one_is_unavailable(client, smoke_image, tmp_path):
    lock = tmp_path / "lock.json"
    entry = dict(smoke_image, image_id="sha256:" + "0" * 64)
    images.update_lock({"smoke-python:cpu": entry}, lock)
    runner = DockerRunner(client=client, say=QUIET, lock_path=lock)
    with pytest.raises(StackUnavailable, match="says sha256:0000"):
        runner.prepare("smoke-python", load_stacks()["smoke-python"])


@pytest.mark.docker
@pytest.mark.slow
def test_smoke_suite_runs_in_docker_end_to_end(repo, smoke_image, torch_image, lock, tmp_path):
    env = {**os.environ, "REPROKIT_IMAGE_LOCK": str(lock)}
    t = time.monotonic()
    out = subprocess.run([sys.executable, str(repo / "reproduce.py"), "--suite", "smoke",
                          "--runner", "docker", "--quick", "--results", str(tmp_path),
                          "--no-report"], capture_output=True, text=True, env=env, timeout=600)
    wall = time.monotonic() - t
    (rundir,) = [results.RunDir(p) for p in tmp_path.iterdir() if (p / "run.json").exists()]
    run = rundir.load_run()  # validates
    assert run["runner"] == "docker", out.stderr
    cells = {c["cell_id"]: c for c in rundir.load_cells()}
    smoke = cells["smoke/python/matmul/n24"]
    assert smoke["status"] == "ok", out.stderr
    assert smoke["metrics"]["matmul_time"]["samples"]
    assert smoke["runner"]["image_id"] == smoke_image["image_id"]
    assert smoke["stack_fingerprint"]["image"]["id"] == smoke_image["image_id"]
    assert smoke["runner"]["security"]["network_mode"] == "none"
    assert (rundir.path / "jobs" / "smoke-python.docker.json").exists()
    assert "harness: smoke/python/matmul/n24 ok" in (rundir.path / smoke["log_file"]).read_text()
    for c in cells.values():  # torch-0.1: measured in its image when the recipe exists
        if c["stack"] == "torch-0.1" and torch_image is None:
            assert c["status"] == "skipped", c["reason"]
            assert "reproduce.py build --stack torch-0.1" in c["reason"]
        elif c["stack"] == "torch-0.1":
            assert c["status"] == "ok", c["reason"]
            assert c["runner"]["image_id"] == torch_image["image_id"]
            assert c["stack_fingerprint"]["framework"]["version"].startswith("2.13.0")
            assert c["stack_fingerprint"]["image"]["id"] == torch_image["image_id"]
    assert out.returncode == exit_code(run) == 0, out.stderr
    print(f"smoke suite in docker: {wall:.1f} s")


@pytest.mark.docker
def test_killed_and_hung_containers_are_recorded_and_the_run_goes_on(client, smoke_image,
                                                                     tmp_path):
    cells = [cell("first", "smoke_stdlib", n=8), cell("killed", seconds=60),
             cell("hang", seconds=60, timeout=3), cell("last", "smoke_stdlib", n=8)]
    killer_saw = {}

    def kill_mid_cell():
        c = wait_for_container(client, "test/docker/killed")
        time.sleep(1.0)
        killer_saw["log"] = c.logs().decode()
        c.kill()

    killer = threading.Thread(target=kill_mid_cell, daemon=True)
    killer.start()
    runner = DockerRunner(client=client, say=QUIET)
    rundir, run = run_cells(tmp_path, cells, runner)
    killer.join(timeout=5)
    status = {c["cell_id"]: (c["status"], c["reason"]) for c in run["cells"]}
    assert status["test/docker/first"] == ("ok", None)
    assert status["test/docker/last"] == ("ok", None)
    assert "sleeping" in killer_saw["log"]  # it was killed mid-cell, not before
    st, reason = status["test/docker/killed"]
    assert st == "crashed" and "SIGKILL" in reason
    st, reason = status["test/docker/hang"]
    assert st == "timeout" and "3 s timeout" in reason
    assert exit_code(run) == 1 and run["finished"]
    first = rundir.load_cell("test/docker/first")
    assert len(first["metrics"]["matmul_time"]["samples"]) >= 3
    for c in rundir.load_cells():
        assert not validate.errors("cell_result", c)
        assert c["runner"]["container_id"] and c["runner"]["image_id"] == smoke_image["image_id"]
    hung = rundir.load_cell("test/docker/hang")
    assert "test_sleep: sleeping" in (rundir.path / hung["log_file"]).read_text()
    assert not client.containers.list(all=True, filters={"label": "reprokit.run=run1"})


@pytest.mark.docker
def test_out_of_memory_is_seen_through_the_container_state(client, smoke_image, tmp_path):
    runner = DockerRunner(client=client, say=QUIET, mem_limit="64m")
    rundir, run = run_cells(tmp_path, [cell("oom", seconds=0, alloc_mb=256)], runner)
    (c,) = run["cells"]
    assert c["status"] == "oom" and "OOM killer" in c["reason"] and "64m" in c["reason"]
    assert rundir.load_cell("test/docker/oom")["runner"]["oom_killed"] is True


@pytest.mark.docker
def test_a_running_benchmark_container_is_locked_down(client, smoke_image, tmp_path):
    seen = {}

    def inspect():
        c = wait_for_container(client, "test/docker/inspect")
        seen.update(client.api.inspect_container(c.id))
        seen["top_user"] = c.exec_run("id -u", user="").output.decode().strip()

    t = threading.Thread(target=inspect, daemon=True)
    t.start()
    rundir, run = run_cells(tmp_path, [cell("inspect", seconds=4)], DockerRunner(client=client,
                                                                                  say=QUIET))
    t.join(timeout=5)
    assert run["cells"][0]["status"] == "ok", run["cells"][0]["reason"]
    host = seen["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["Privileged"] is False
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["PidsLimit"] > 0 and host["Memory"] > 0
    assert "/tmp" in host["Tmpfs"]
    mounts = {m["Destination"]: m for m in seen["Mounts"]}
    assert mounts["/opt/reprokit/bench"]["RW"] is False
    assert mounts["/results"]["RW"] is False
    assert mounts["/results/cells"]["RW"] is True
    assert seen["Config"]["User"] not in ("", "0", "root", "0:0")
    assert seen["top_user"] != "0"
    env = dict(e.split("=", 1) for e in seen["Config"]["Env"])
    assert env["REPROKIT_IMAGE_ID"] == smoke_image["image_id"]
    res = rundir.load_cell("test/docker/inspect")
    assert res["runner"]["security"]["privileged"] is False
    assert json.dumps(res["stack_fingerprint"]["image"]).count(smoke_image["image_id"]) == 1


@pytest.mark.docker
def test_the_jit_cache_volume_persists_between_cells_and_each_cell_records_cold(client, smoke_image,
                                                                              tmp_path):
    """On a real engine, with the CPU smoke image (no GPU here): the runner creates
    the cache volume, hands it to the cell's user and mounts it read-write at CUDA_CACHE_PATH; the
    first cell finds it empty (cold) and writes into it, as the driver's JIT would; the second cell,
    in a container of its own, finds that file (warm)."""
    import uuid

    from reprokit.containers import spec

    runner = DockerRunner(client=client, say=QUIET, jit_cache=True)
    runner._host_key = f"test-{uuid.uuid4().hex[:8]}"  # a volume of this test's own
    name = spec.jit_volume_name("smoke-python", "cpu", smoke_image["image_id"], runner._host_key)
    path = spec.jit_cache_path()
    cells = [Cell(id=f"test/docker/jit-{i}", source="smoke", stack="smoke-python", framework="python",
                  workload="test_gpu_runtime", variant=None, params={"write_cuda_cache": f"kernel-{i}"},
                  metrics=("cache_files",), timeout_s=60) for i in (1, 2)]
    try:
        rundir, run = run_cells(tmp_path, cells, runner)
        volume = client.volumes.get(name)
        assert volume.attrs["Labels"]["reprokit.jit.image_id"] == smoke_image["image_id"]
        first, second = (rundir.load_cell(c.id) for c in cells)
        for res in (first, second):
            assert res["status"] == "ok", res["reason"]
            assert not validate.errors("cell_result", res)
            assert res["stack_fingerprint"]["cuda_cache"]["path"] == path
            mounts = {m["target"]: m for m in res["runner"]["mounts"]}
            assert mounts[path] == {"target": path, "source": name, "type": "volume",
                                    "read_only": False}
            assert res["runner"]["jit_cache"]["volume"] == name
        assert first["runner"]["container_id"] != second["runner"]["container_id"]
        cold, warm = first["stack_fingerprint"]["cuda_cache"], second["stack_fingerprint"]["cuda_cache"]
        assert cold["cold"] is True and cold["at_start"]["files"] == 0
        assert cold["at_start"]["writable"] is True and cold["at_end"]["files"] == 1
        assert warm["cold"] is False and warm["at_start"]["files"] == 1
        assert second["metrics"]["cache_files"]["samples"] == [2]
        # the volume outlives the containers: a third container sees both files
        out = client.containers.run(smoke_image["image_id"], ["ls", path], remove=True,
                                    network_mode="none", mounts=[docker_types_mount(name, path)])
        assert len(out.decode().split()) == 2
    finally:
        try:
            client.volumes.get(name).remove(force=True)
        except Exception:
            pass


def docker_types_mount(name, path):
    import docker

    return docker.types.Mount(path, name, type="volume", read_only=True)


@pytest.mark.docker
def test_the_jit_volume_is_handed_over_even_through_another_users_private_directories(client,
                                                                                    smoke_image):
    """The CUDA driver keeps its cache in 0700 directories; a one-shot chown
    container with CAP_CHOWN only could not enter another user's, so the cell got a cache it
    could not write. With CAP_DAC_READ_SEARCH it walks them: every file is the new user's."""
    import uuid

    from reprokit.containers import spec

    host_key = f"test-{uuid.uuid4().hex[:8]}"
    name = spec.jit_volume_name("smoke-python", "cpu", smoke_image["image_id"], host_key)
    path = spec.jit_cache_path()
    mount = [spec.docker_mount(spec.Mount(path, name, type="volume", read_only=False))]
    try:
        client.volumes.create(name=name)
        client.containers.run(  # another user's private cache, as the driver leaves it
            smoke_image["image_id"],
            ["sh", "-c", f"mkdir -p {path}/a/b && echo k > {path}/a/b/kernel && "
                         f"chown -R 2345:2345 {path}/a && chmod 700 {path}/a {path}/a/b"],
            user="0:0", network_mode="none", remove=True, mounts=mount)
        out = spec.ensure_jit_volume(client, smoke_image["image_id"], "smoke-python", "cpu",
                                     host_key, "1000:1000")
        assert out["owner"] == "1000:1000" and "owner_error" not in out, out
        owners = client.containers.run(smoke_image["image_id"],
                                       ["sh", "-c", f"find {path} -exec stat -c %u {{}} +"],
                                       user="0:0", network_mode="none", remove=True, mounts=mount)
        assert set(owners.decode().split()) == {"1000"}
    finally:
        try:
            client.volumes.get(name).remove(force=True)
        except Exception:
            pass
