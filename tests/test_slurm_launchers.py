"""The Slurm runner's pieces that need no cluster (issue 15): the command lines each launcher builds
from the one container spec (reprokit/runners/containerspec.py), the mapping of every terminal
Slurm state to a cell status, squeue's output, time limits, and the bad inputs of the --slurm-*
options. Apptainer and pyxis are not installed here: their command lines are checked here and have
never run. The Docker command line runs for real in tests/test_slurm.py (the Docker launcher)."""

import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import suites
from reprokit.runners import launchers
from reprokit.runners.base import BENCH, StackUnavailable
from reprokit.runners.containerspec import apptainer_argv, cell_spec, docker_argv, pyxis_argv
from reprokit.runners.docker import BENCH_IN_CONTAINER, RESULTS_IN_CONTAINER, DockerRunner
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

REPO = Path(__file__).resolve().parent.parent
CELL = "smoke/python/matmul/n24"


def spec(gpus=0, data_root=None):
    return cell_spec(image="sha256:abc", stack="smoke-python", run_dir="/shared/results/r1",
                     cells_dir="/shared/results/r1/cells", job_name="smoke-python.docker.json",
                     cell_id=CELL, process=None, env={"THEANO_FLAGS": "device=cpu"},
                     user="1000:1000", bench_dir="/shared/kit/bench", data_root=data_root,
                     gpus=gpus, name="reprokit-slurm-x")


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
    runner = DockerRunner.__new__(DockerRunner)  # no engine needed for its settings
    runner.mem_limit, runner.pids_limit = s.mem_limit, s.pids_limit
    sdk = runner.security("1000:1000")
    for key in ("network_mode", "privileged", "cap_drop", "security_opt", "read_only_rootfs",
                "tmpfs", "user", "mem_limit", "memswap_limit", "pids_limit"):
        assert s.security()[key] == sdk[key], key


def test_gpu_cells_ask_for_their_gpus_in_every_launcher():
    s = spec(gpus=2)
    assert pairs(docker_argv(s), "--gpus") == ["2"]
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
def test_image_launchers_need_their_image_file_and_say_how_to_make_it(tmp_path, name, suffix):
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
    assert (run / "jobs" / "smoke-python.docker.json").exists()  # the container's copy of the job


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
    got = compare_runs(local, cells_a, slurm, cells_b)["node_diff"]
    # c1 ran on a node like run A's host: named, no field differs; c2 on another machine
    assert got["c1"] == {"node_a": "the run's host", "node_b": "n1", "rows": []}
    fields = {r["field"]: (r["a"], r["b"]) for r in got["c2"]["rows"]}
    assert got["c2"]["node_b"] == "n2"
    assert fields["cpu.model_name"] == ("Xeon Gold 6130", "EPYC 7742")
    assert fields["cpu.logical_cores"] == (2, 64)
    # two runs on their drivers' hosts: no per-cell machines to name
    assert compare_runs(local, cells_a, local, cells_a)["node_diff"] == {}
