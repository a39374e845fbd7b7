"""The Slurm runner's pieces that need no cluster: the command lines each launcher builds
from the one container spec (reprokit/containers/spec.py), the mapping of every terminal
Slurm state to a cell status, squeue's output, time limits, and the bad inputs of the --slurm-*
options. Apptainer and pyxis are not installed here: their command lines are checked here and have
never run. The Docker command line runs for real in tests/runners/test_slurm.py (the Docker launcher)."""

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import docker_client

from reprokit.catalog import suites
from reprokit.containers.spec import (
    BENCH_IN_CONTAINER,
    RESULTS_IN_CONTAINER,
    apptainer_argv,
    cell_spec,
    docker_argv,
    docker_create_kwargs,
    pyxis_argv,
)
from reprokit.files import BENCH
from reprokit.runners import launchers
from reprokit.runners.base import StackUnavailable
from reprokit.runners.slurm import (
    STATES,
    SlurmOptions,
    SlurmRunner,
    Task,
    constraint_for,
    parse_squeue,
    slurm_mem,
    time_limit_min,
)
from tests import models

REPO = Path(__file__).resolve().parents[2]
CELL = "smoke/python/matmul/n24"


def spec(gpus=0, data_root=None, jit_volume=None):
    return cell_spec(image="sha256:abc", python="python3", stack="smoke-python",
                     run_dir="/shared/results/r1", cells_dir="/shared/results/r1/cells",
                     job_name="smoke-python.docker.json", cell_id=CELL, process=None,
                     env={"THEANO_FLAGS": "device=cpu"}, user="1000:1000",
                     bench_dir="/shared/kit/bench", data_root=data_root,
                     gpu_ids=[str(i) for i in range(gpus)], jit_volume=jit_volume,
                     name="reprokit-slurm-x")


def pairs(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_docker_command_line_has_every_isolation_setting_of_the_docker_runner():
    s = spec()
    argv = docker_argv(s)
    assert argv[:3] == ["docker", "run", "--rm"]
    assert pairs(argv, "--network") == ["none"] and "--read-only" in argv and "--init" in argv
    assert pairs(argv, "--cap-drop") == ["ALL"]
    assert pairs(argv, "--security-opt") == ["no-new-privileges"]
    assert pairs(argv, "--user") == ["1000:1000"]
    mounts = pairs(argv, "--mount")
    assert mounts == [
        f"type=bind,source=/shared/kit/bench,target={BENCH_IN_CONTAINER},readonly",
        f"type=bind,source=/shared/results/r1,target={RESULTS_IN_CONTAINER},readonly",
        f"type=bind,source=/shared/results/r1/cells,target={RESULTS_IN_CONTAINER}/cells"]
    assert "THEANO_FLAGS=device=cpu" in pairs(argv, "--env")
    assert "--gpus" not in argv
    i = argv.index("sha256:abc")
    assert argv[i + 1:] == ["python3", f"{BENCH_IN_CONTAINER}/harness.py",
                            f"{RESULTS_IN_CONTAINER}/jobs/smoke-python.docker.json", "--cell", CELL]
    # the same settings the Docker runner gives the SDK (one description, not a third copy)
    sdk = docker_create_kwargs(s)
    assert sdk["network_mode"] == pairs(argv, "--network")[0] and sdk["user"] == "1000:1000"
    assert sdk["read_only"] is True and sdk["init"] is True and sdk["privileged"] is False
    assert sdk["cap_drop"] == pairs(argv, "--cap-drop")
    assert sdk["security_opt"] == pairs(argv, "--security-opt")
    assert sdk["mem_limit"] == sdk["memswap_limit"] == pairs(argv, "--memory")[0]
    assert str(sdk["pids_limit"]) == pairs(argv, "--pids-limit")[0]
    assert [f"{k}:{v}" for k, v in sdk["tmpfs"].items()] == pairs(argv, "--tmpfs")
    assert sdk["command"] == argv[i + 1:] and sdk["environment"] == dict(
        e.split("=", 1) for e in pairs(argv, "--env"))
    assert sdk["labels"] == dict(e.split("=", 1) for e in pairs(argv, "--label"))


def test_gpu_cells_ask_for_their_gpus_in_every_launcher():
    s = spec(gpus=2)
    assert pairs(docker_argv(s), "--gpus") == ['"device=0,1"']
    assert "NVIDIA_VISIBLE_DEVICES=0,1" in pairs(docker_argv(s), "--env")
    assert "--nv" in apptainer_argv(s, "/img/x.sif")
    assert "--nv" not in apptainer_argv(spec(), "/img/x.sif")


def test_apptainer_command_line():
    argv = apptainer_argv(spec(data_root="/shared/data"), "/img/smoke-python-cpu.sif")
    assert argv[:2] == ["apptainer", "exec"]
    for flag in ("--containall", "--cleanenv", "--no-home", "--net"):
        assert flag in argv, flag
    assert pairs(argv, "--network") == ["none"]
    assert pairs(argv, "--pwd") == [BENCH_IN_CONTAINER]
    assert pairs(argv, "--bind") == [
        f"/shared/kit/bench:{BENCH_IN_CONTAINER}:ro", f"/shared/results/r1:{RESULTS_IN_CONTAINER}:ro",
        f"/shared/results/r1/cells:{RESULTS_IN_CONTAINER}/cells:rw", "/shared/data:/data:ro"]
    assert "HOME=/tmp" in pairs(argv, "--env")
    i = argv.index("/img/smoke-python-cpu.sif")
    assert argv[i + 1] == "python3" and argv[-2:] == ["--cell", CELL]


def test_pyxis_command_line():
    argv = pyxis_argv(spec(), "/img/smoke-python-cpu.sqsh")
    assert argv[0] == "srun" and "--container-image=/img/smoke-python-cpu.sqsh" in argv
    mounts = [a for a in argv if a.startswith("--container-mounts=")][0].split("=", 1)[1]
    assert mounts.split(",") == [f"/shared/kit/bench:{BENCH_IN_CONTAINER}:ro",
                                 f"/shared/results/r1:{RESULTS_IN_CONTAINER}:ro",
                                 f"/shared/results/r1/cells:{RESULTS_IN_CONTAINER}/cells"]
    for flag in ("--container-readonly", "--no-container-mount-home", "--no-container-remap-root",
                 f"--container-workdir={BENCH_IN_CONTAINER}"):
        assert flag in argv, flag
    i = argv.index("env")
    assert "PYTHONUNBUFFERED=1" in argv[i:] and argv[-2:] == ["--cell", CELL]


@pytest.mark.parametrize("name,suffix", [("apptainer", ".sif"), ("pyxis", ".sqsh")])
def test_image_launchers_need_their_image_file_and_say_how_to_make_it(tmp_path, monkeypatch, name, suffix):
    monkeypatch.setenv("REPROKIT_IMAGE_FILE_IDS", str(tmp_path / "ids.json"))
    stack = suites.load_stacks()["smoke-python"]
    with pytest.raises(StackUnavailable, match="--slurm-image-dir"):
        launchers.make(name).prepare("smoke-python", stack, say=lambda *_: None)
    launcher = launchers.make(name, image_dir=str(tmp_path))
    with pytest.raises(StackUnavailable, match=r"smoke-python-cpu" + suffix.replace(".", r"\.")):
        launcher.prepare("smoke-python", stack, say=lambda *_: None)
    (tmp_path / f"smoke-python-cpu{suffix}").write_bytes(b"")
    prepared = launcher.prepare("smoke-python", stack, say=lambda *_: None)
    run = tmp_path / "run"
    (run / "jobs").mkdir(parents=True)
    job = run / "jobs" / "smoke-python.json"
    job.write_text('{"schema_version": 1, "run_id": "r", "stack": "smoke-python", "kit": {"version": "0", '
                   '"git_commit": null}, "out_dir": "x", "device": "cpu", "cells": []}')
    task = launcher.task(prepared, job, CELL, None, run)
    argv = task["argv"]
    assert str((tmp_path / f"smoke-python-cpu{suffix}").resolve()) in " ".join(argv)
    assert f"{BENCH}:{BENCH_IN_CONTAINER}:ro" in " ".join(argv)
    assert task["info"]["never_run"] is True
    # the file's sha256, what the GPU probe cache keys it by (here: of 0 bytes)
    assert task["info"]["image_id"] == "sha256:" + hashlib.sha256(b"").hexdigest()
    assert (run / "jobs" / "smoke-python.docker.json").exists()  # the container's copy of the job


@pytest.mark.parametrize("name,suffix", [("apptainer", ".sif"), ("pyxis", ".sqsh")])
def test_image_launchers_keep_a_jit_cache_per_image_file_on_a_gpu(tmp_path, monkeypatch, name, suffix):
    """Without a cache, Apptainer and pyxis (which have no Docker volume) made every legacy cell re-JIT
    for tens of minutes. Their GPU cells bind a host directory per
    image file read-write at CUDA_CACHE_PATH (never run: no GPU with Slurm has been available)."""
    from reprokit.containers import spec as container

    monkeypatch.setenv("REPROKIT_CUDA_CACHE_DIR", str(tmp_path / "jit"))
    stack = suites.load_stacks()["theano-0.9"]
    image = tmp_path / f"legacy-2017-theano-gpu{suffix}"
    image.write_bytes(b"x")
    launcher = launchers.make(name, device="gpu", image_dir=str(tmp_path))
    prepared = launcher.prepare("theano-0.9", stack, say=lambda *_: None)
    cache_dir = Path(prepared["jit_dir"])
    assert cache_dir.parent == tmp_path / "jit" and cache_dir.is_dir()
    assert cache_dir.stat().st_mode & 0o777 == 0o700
    assert prepared["info"]["jit_cache"]["dir"] == str(cache_dir)
    again = launchers.make(name, device="gpu", image_dir=str(tmp_path)).prepare(
        "theano-0.9", stack, say=lambda *_: None)
    assert again["jit_dir"] == str(cache_dir)  # the same image file: the same cache
    run = tmp_path / "run"
    (run / "jobs").mkdir(parents=True)
    job = run / "jobs" / "theano-0.9.json"
    job.write_text('{"schema_version": 1, "run_id": "r", "stack": "theano-0.9", "kit": {"version": "0", '
                   '"git_commit": null}, "out_dir": "x", "device": "gpu", "cells": []}')
    task = launcher.task(prepared, job, CELL, None, run, gpus=1)
    argv, ids = launchers.task_argv(task, {"SLURM_JOB_GPUS": "2"})
    cache = container.jit_cache_path()
    line = " ".join(argv)
    if name == "apptainer":
        assert f"{cache_dir}:{cache}:rw" in pairs(argv, "--bind") and "--nv" in argv
        assert f"CUDA_CACHE_PATH={cache}" in pairs(argv, "--env")
    else:
        mounts = next(a for a in argv if a.startswith("--container-mounts=")).split("=", 1)[1]
        assert f"{cache_dir}:{cache}" in mounts.split(",")  # no ":ro": writable
        assert f"CUDA_CACHE_PATH={cache}" in argv[argv.index("env"):]
    assert ids == ["2"] and str(image.resolve()) in line
    # a CPU cell of the same launcher mounts no cache
    cpu = launchers.make(name, device="cpu", image_dir=str(tmp_path))
    (tmp_path / f"legacy-2017-theano-cpu{suffix}").write_bytes(b"y")
    assert cpu.prepare("theano-0.9", stack, say=lambda *_: None)["jit_dir"] is None


def gpu_docker_task(tmp_path, gpus=2):
    """A GPU cell's task as the Docker launcher makes it on the driver (prepared as the Docker
    runner prepares a theano-0.9 GPU image, without an engine)."""
    from reprokit.containers import spec as container

    prepared = {"stack": "theano-0.9", "image_ref": "sha256:abc", "python": "/opt/venv/bin/python3",
                "env": container.environment(suites.load_stacks()["theano-0.9"], "gpu"),
                "user": "1000:1000", "jit_volume": "reprokit-jit-test", "info": {}}
    run = tmp_path / "run"
    (run / "jobs").mkdir(parents=True)
    job = run / "jobs" / "theano-0.9.json"
    job.write_text('{"schema_version": 1, "run_id": "r", "stack": "theano-0.9", "kit": {"version": "0", '
                   '"git_commit": null}, "out_dir": "x", "device": "gpu", "cells": []}')
    return launchers.make("docker", device="gpu").task(prepared, job, CELL, None, run, gpus)


def test_the_docker_launcher_gives_a_gpu_cell_the_gpus_slurm_allocated_and_the_jit_cache(tmp_path):
    """Never run on a GPU. The Docker launcher used to pass `--gpus N` (docker's first N GPUs of
    the node, whichever job holds them) and no JIT cache volume: now the cell's container is the
    Docker runner's, given the job's GPUs (SLURM_JOB_GPUS) on the node."""
    from reprokit.containers import spec as container

    task = gpu_docker_task(tmp_path)
    assert task["argv"] is None and task["gpus"] == 2  # the GPUs are known on the node only
    argv, ids = launchers.task_argv(task, {"SLURM_JOB_GPUS": "1,3,4"})
    assert ids == ["1", "3"] and pairs(argv, "--gpus") == ['"device=1,3"']
    assert "NVIDIA_VISIBLE_DEVICES=1,3" in pairs(argv, "--env")
    cache = container.jit_cache_path()
    assert f"type=volume,source=reprokit-jit-test,target={cache}" in pairs(argv, "--mount")
    assert f"CUDA_CACHE_PATH={cache}" in pairs(argv, "--env")
    assert argv[argv.index("sha256:abc") + 1] == "/opt/venv/bin/python3"
    with pytest.raises(ValueError, match="needs 2 GPUs but Slurm gave the job 1"):
        launchers.task_argv(task, {"SLURM_JOB_GPUS": "0"})
    # a GPU suite's CPU row (gpus: 0) asks for no GPU and mounts no cache, as in the Docker runner
    cpu_row = gpu_docker_task(tmp_path / "b", gpus=0)
    argv, ids = launchers.task_argv(cpu_row, {"SLURM_JOB_GPUS": "1,3"})
    assert ids == [] and "--gpus" not in argv and "NVIDIA_VISIBLE_DEVICES=void" in pairs(argv, "--env")
    assert not any(m.startswith("type=volume") for m in pairs(argv, "--mount"))


@pytest.mark.docker
def test_the_docker_cli_reads_the_gpu_request_and_the_cache_volume_as_meant(tmp_path):
    """The real docker CLI parses the launcher's flags into the Engine API request the Docker
    runner sends through the SDK: DeviceIDs, never a count, and a volume mount. `docker create`
    records the request without a GPU (starting it would need one)."""
    import uuid

    import docker

    client = docker_client()
    base = "reprokit/base:bookworm"
    assert client.images.list(name=base), f"{base} is missing: run bash .ci/docker-setup.sh"
    volume = f"reprokit-jit-test-{uuid.uuid4().hex[:8]}"
    (tmp_path / "cells").mkdir()
    box = cell_spec(image=base, python="python3", stack="smoke-python", run_dir=str(tmp_path),
                    cells_dir=str(tmp_path / "cells"), job_name="smoke-python.docker.json",
                    cell_id=CELL, env={}, user="1000:1000", bench_dir=str(BENCH),
                    jit_volume=volume, name=f"reprokit-test-{uuid.uuid4().hex[:8]}")
    argv = launchers.render("docker", box.with_gpus(["1", "3"]))
    argv = ["docker", "create"] + argv[3:]  # run --rm -> create
    made = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    try:
        assert made.returncode == 0, made.stderr
        host = client.api.inspect_container(made.stdout.strip())["HostConfig"]
        (req,) = host["DeviceRequests"]
        assert req["DeviceIDs"] == ["1", "3"] and not req["Count"] and req["Capabilities"] == [["gpu"]]
        mounts = {m["Target"]: m for m in host["Mounts"]}
        jit = mounts["/var/cache/reprokit/cuda"]
        assert jit["Type"] == "volume" and jit["Source"] == volume and not jit.get("ReadOnly")
        assert mounts[BENCH_IN_CONTAINER]["ReadOnly"] is True
    finally:
        if made.returncode == 0:
            client.api.remove_container(made.stdout.strip(), force=True)
        try:
            client.volumes.get(volume).remove(force=True)
        except docker.errors.NotFound:
            pass


# -- Slurm states -------------------------------------------------------------------------------
def outcome(state, record=None, **kw):
    runner = SlurmRunner(SlurmOptions(), say=lambda *_: None)
    cell = suites.load_suite("smoke").cell(CELL)
    t = Task(cell, None, {}, Path("/x/jobs/smoke-python.json"), Path("/x/logs/c.log"), job_id="7_3")
    for k, v in kw.items():
        setattr(t, k, v)
    return runner.outcome(t, {"state": state, "node": "n1", "partition": "gpu",
                              "time_limit": "5:00"}, record)


@pytest.mark.parametrize("state,status", [
    ("COMPLETED", "ok"), ("FAILED", "crashed"), ("TIMEOUT", "timeout"), ("OUT_OF_MEMORY", "oom"),
    ("CANCELLED", "interrupted"), ("NODE_FAIL", "interrupted"), ("PREEMPTED", "interrupted")])
def test_every_terminal_state_is_a_cell_status_with_its_reason(state, status):
    o = outcome(state, {"exit_code": 0 if state == "COMPLETED" else 1, "node": "n1", "wall_s": 2.5})
    assert o.status == status
    if status != "ok":
        assert state in o.reason and "job 7_3 on n1" in o.reason, o.reason
    if status == "interrupted":
        assert "--resume re-runs it" in o.reason
    assert o.runner_info["job_id"] == "7_3" and o.runner_info["node"] == "n1"
    assert o.runner_info["partition"] == "gpu" and o.runner_info["state"] == state
    assert o.process_wall_s == 2.5


def test_every_state_the_issue_names_is_mapped():
    for state in ("COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL",
                  "PREEMPTED"):
        assert state in STATES


def test_a_failed_harness_keeps_its_own_reason_and_the_driver_says_who_cancelled():
    o = outcome("FAILED", {"exit_code": 128 + 14, "node": "n1"})
    assert o.status == "timeout" and "harness's own time limit" in o.reason
    o = outcome("CANCELLED", None, cancelled_by_driver="interrupted by SIGINT")
    assert o.status == "interrupted" and o.reason.startswith("interrupted by SIGINT: the driver")
    o = outcome("UNKNOWN", None)
    assert o.status == "interrupted" and "no longer knows" in o.reason


def test_squeue_output_is_parsed_per_array_task():
    text = ("12_0|COMPLETED|vm|debug|None|6:00|0:07\n12_1|RUNNING|vm|debug|None|6:00|0:02\n"
            "13_[0-3]|PENDING||debug|Resources|6:00|0:00\n")
    got = parse_squeue(text)
    assert got["12_0"]["state"] == "COMPLETED" and got["12_1"]["node"] == "vm"
    assert got["13_[0-3]"]["slurm_reason"] == "Resources"


def test_a_gpu_cells_published_model_becomes_a_node_feature():
    o = SlurmOptions(constraint="ib", gpu_features={"V100": "v100", "P100": "p100"})
    assert constraint_for(("Tesla V100-SXM2-16GB",), 1, o) == "ib&v100"
    assert constraint_for(("8x Tesla V100-SXM2-16GB", "Tesla P100-PCIE-16GB"), 8, o) == "ib&[p100|v100]"
    assert constraint_for(("Tesla V100-SXM2-16GB",), 0, o) == "ib"  # a CPU cell: the user's only
    assert constraint_for(("Tesla M40 24GB",), 1, o) == "ib"  # no feature for that model
    assert constraint_for(("Tesla V100",), 1, SlurmOptions(gpu_features={"v100": "volta"})) == "volta"
    assert constraint_for((), 0, SlurmOptions()) is None


def test_time_limits_and_memory():
    assert time_limit_min(300, None) == 6 and time_limit_min(1, None) == 2
    assert time_limit_min(300, 1) == 1
    assert slurm_mem("16g") == "16G" and slurm_mem("4000") == "4000M"


# -- bad inputs: one line, exit 2, nothing written ----------------------------------------------
@pytest.mark.parametrize("args,needle", [
    (["--slurm-partition", "gpu"], "--slurm-partition applies to --runner slurm only"),
    (["--detach"], "--detach applies to --runner slurm only"),
    (["--runner", "slurm", "--slurm-mem", "12Q"], "--slurm-mem must be a size"),
    (["--runner", "slurm", "--slurm-time", "0"], "--slurm-time must be"),
    (["--runner", "slurm", "--slurm-image-dir", "/no/such/dir"], "--slurm-image-dir"),
    (["--runner", "slurm", "--slurm-gpu-feature", "V100"], "--slurm-gpu-feature must be MODEL=FEATURE"),
    (["--slurm-gpu-feature", "V100=v100"], "--slurm-gpu-feature applies to --runner slurm only"),
])
def test_bad_slurm_options_are_one_line_and_exit_2(tmp_path, args, needle):
    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "run", "--suite", "smoke",
                        "--results", str(tmp_path / "r"), *args], capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.startswith("reproduce.py:")]
    assert len(lines) == 1 and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "r").exists()


# -- compare across machines ----------------------------------------------------------------------
def test_compare_names_the_machines_cells_ran_on_when_a_run_spans_slurm_nodes():
    from reprokit.analysis.compare_runs import compare_runs

    def fp(model, cores):
        return {"cpu": {"model_name": model, "vendor": "GenuineIntel", "family": 6, "model": 85,
                        "logical_cores": cores, "usable_cores": cores}, "memory": {}, "gpus": []}

    def cell(cid, runner):
        return {"cell_id": cid, "stack": "smoke-python", "status": "ok", "metrics": {},
                "runner": runner}

    local = {"run_id": "a", "host_fingerprint": fp("Xeon Gold 6130", 2)}
    slurm = {"run_id": "b", "host_fingerprint": fp("login node CPU", 4)}
    cells_a = [cell("c1", {"name": "local"}), cell("c2", {"name": "local"})]
    cells_b = [cell("c1", {"name": "slurm", "node": "n1", "node_fingerprint": fp("Xeon Gold 6130", 2)}),
               cell("c2", {"name": "slurm", "node": "n2", "node_fingerprint": fp("EPYC 7742", 64)})]
    run_a, run_b = models.run(local, cells=cells_a), models.run(slurm, cells=cells_b)
    got = compare_runs(run_a, run_b)["node_diff"]
    # c1 ran on a node like run A's host: named, no field differs; c2 on another machine
    assert got["c1"] == {"node_a": "the run's host", "node_b": "n1", "rows": []}
    fields = {r["field"]: (r["a"], r["b"]) for r in got["c2"]["rows"]}
    assert got["c2"]["node_b"] == "n2"
    assert fields["cpu.model_name"] == ("Xeon Gold 6130", "EPYC 7742")
    assert fields["cpu.logical_cores"] == (2, 64)
    # two runs on their drivers' hosts: no per-cell machines to name
    assert compare_runs(run_a, run_a)["node_diff"] == {}


def test_gpu_cells_hold_their_gpus_not_whole_nodes_unless_asked():
    """`--exclusive` for every array would hold a whole node per 1-GPU cell. The default
    asks it for CPU cells' arrays only; --slurm-exclusive / --slurm-no-exclusive set every array."""
    auto = SlurmOptions()
    assert auto.exclusive_for(0) is True and auto.exclusive_for(1) is False
    assert SlurmOptions(exclusive=True).exclusive_for(1) is True
    assert SlurmOptions(exclusive=False).exclusive_for(0) is False
    assert SlurmOptions.from_record({"exclusive": True}).exclusive_for(8) is True  # older runs


@pytest.mark.parametrize("jobs, options, sharing, note", [
    ([{"sbatch": ["sbatch", "--exclusive"], "gpus": 0}], {}, "exclusive nodes", None),
    ([{"sbatch": ["sbatch", "--exclusive"], "gpus": 0}, {"sbatch": ["sbatch"], "gpus": 1}], {},
     "CPU cells on exclusive nodes, GPU cells on shared nodes", "held their GPUs, not their nodes"),
    ([{"sbatch": ["sbatch"], "gpus": 0}], {"exclusive": False}, "nodes shared (--slurm-no-exclusive)",
     "did not have their nodes to themselves"),
    ([{"job_id": "1"}], {"exclusive": True}, "exclusive nodes", None),  # a run that kept no sbatch line
])
def test_the_report_says_how_the_cells_shared_their_nodes(jobs, options, sharing, note):
    """From each array's `exclusive` (a run stamped 1 gets it from its sbatch line, else its option,
    when read: reprokit/formats/run.py)."""
    from reprokit.report import cluster

    run = models.run({"schema_version": 1, "runner": "slurm",
                      "slurm": {"jobs": [{"job_id": str(i), "stack": "s", "tasks": [], **j}
                                         for i, j in enumerate(jobs)], "options": options}})
    exclusive, got, said = cluster.node_sharing(run.slurm)
    assert got == sharing and exclusive is (sharing == "exclusive nodes")
    assert (said is None) if note is None else (note in said)


def test_a_cell_whose_node_was_lost_but_finished_is_followed_to_its_end(tmp_path, monkeypatch):
    """The poll rule of a lost node (the cluster test is in test_slurm_multinode.py): Slurm says
    NODE_FAIL when a node's slurmd stops or dies, but the cell's process runs on under slurmstepd. The
    driver used to say "interrupted ... --resume re-runs it" at once and the process, finishing later,
    was merged with no node. Now its task record decides: an open record is followed, an ended one
    gives the process's own exit status, with the node it recorded."""
    from reprokit import results

    rundir = results.RunDir(tmp_path / "run")
    (rundir.path / "slurm" / "tasks").mkdir(parents=True)
    runner = SlurmRunner(SlurmOptions(), say=lambda *_: None)
    cell = suites.load_suite("smoke").cell(CELL)
    t = Task(cell, None, {"timeout_s": 60}, Path("/x/jobs/j.json"), tmp_path / "c.log", job_id="7_3",
             record="slurm/tasks/7_3.json")
    runner.tasks = {"7_3": t}
    monkeypatch.setattr(runner, "states", lambda ids: {"7_3": {"state": "NODE_FAIL", "node": None}})
    monkeypatch.setattr(runner, "_sacct", lambda ids: {"7_3": {"state": "NODE_FAIL", "node": "n2"}})
    record = rundir.path / t.record
    record.write_text(json.dumps({"cell_id": CELL, "node": "n2", "started": "2026-11-27T10:00:00Z"}))
    alive = record.with_suffix(".alive")  # what a running slurm_task.py touches every 5 s
    alive.touch()
    assert runner.poll(rundir) == [] and "7_3" in runner.tasks  # still running, as far as we know
    record.write_text(json.dumps({"cell_id": CELL, "node": "n2", "ended": "2026-11-27T10:01:00Z",
                                  "exit_code": 0, "wall_s": 60.0}))
    ((task, got),) = runner.poll(rundir)
    assert got.status == "ok" and got.runner_info["node"] == "n2"
    said = got.runner_info["slurm_reason"]
    assert "NODE_FAIL, but the task record shows the cell's process finished" in said
    # no record at all: nothing to follow, interrupted at once with the node sacct kept
    t2 = Task(cell, None, {"timeout_s": 60}, Path("/x/jobs/j.json"), tmp_path / "d.log", job_id="7_3",
              record="slurm/tasks/none.json")
    runner.tasks = {"7_3": t2}
    ((_, lost),) = runner.poll(rundir)
    assert lost.status == "interrupted" and "NODE_FAIL" in lost.reason and lost.runner_info["node"] == "n2"
    # an open record whose task stopped beating (it died with the node): interrupted at once
    record.write_text(json.dumps({"cell_id": CELL, "node": "n2"}))
    os.utime(alive, (time.time() - 120, time.time() - 120))
    t4 = Task(cell, None, {"timeout_s": 60}, Path("/x/jobs/j.json"), tmp_path / "f.log", job_id="7_3",
              record="slurm/tasks/7_3.json")
    runner.tasks = {"7_3": t4}
    ((_, dead),) = runner.poll(rundir)
    assert dead.status == "interrupted" and "NODE_FAIL" in dead.reason
    # beating, but past the task's time limit since the loss: interrupted as Slurm said
    alive.touch()
    t3 = Task(cell, None, {"timeout_s": 60}, Path("/x/jobs/j.json"), tmp_path / "e.log", job_id="7_3",
              record="slurm/tasks/7_3.json", lost_since=time.monotonic() - 3600)
    runner.tasks = {"7_3": t3}
    ((_, late),) = runner.poll(rundir)
    assert late.status == "interrupted" and late.runner_info["node"] == "n2"
