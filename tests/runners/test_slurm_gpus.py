"""`--runner slurm --device gpu|auto` decides the device from the probe job's node, not from the
driver (login) host. The CPU branch runs on the real one-node Slurm cluster
(scripts/slurm-setup.sh; it has no GPU, so sbatch refuses the probe's --gres=gpu:1). The GPU branch
cannot run here: the probe job's record is replaced by one whose node fingerprint is a stored H100
fingerprint (tests/data/fingerprints/h100.json), and everything after it (device choice, preflight
on the node's GPUs) is the real code."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import cli
from reprokit.errors import UserError
from reprokit.run import driver
from reprokit.runners import slurm_setup
from tests import models

REPO = Path(__file__).resolve().parents[2]
FPS = Path(__file__).parents[1] / "data" / "fingerprints"


def stored(name: str) -> dict:
    return json.loads((FPS / f"{name}.json").read_text())


NO_GPU = {"kind": "host_fingerprint", "nvidia": {"available": False,
                                                 "reason": "no NVIDIA driver: NVMLError_LibraryNotFound"},
          "gpus": []}


# -- pure logic ---------------------------------------------------------------------------------
def test_slurm_device_comes_from_the_probe_nodes_fingerprint():
    probe = {"job_id": "9", "node": "gpu07", "node_fingerprint": stored("h100")}
    assert slurm_setup.slurm_device("auto", probe) == (
        "gpu", "gpu: the probe job's node gpu07 has 2 (NVIDIA H100 80GB HBM3)")
    assert slurm_setup.slurm_device("gpu", probe)[0] == "gpu"
    assert slurm_setup.slurm_device("cpu", probe)[0] == "cpu"
    cpu_node = {"job_id": "9", "node": "cn01", "node_fingerprint": NO_GPU}
    device, why = slurm_setup.slurm_device("auto", cpu_node)
    assert device == "cpu" and "cn01 has no GPU" in why and "NVMLError_LibraryNotFound" in why
    with pytest.raises(UserError, match=r"node cn01 has no GPU .*; pass --slurm-partition"):
        slurm_setup.slurm_device("gpu", cpu_node)
    unknown = {"job_id": "9", "node": "cn01", "node_fingerprint": None,
               "node_fingerprint_error": "the probe job wrote no readable fingerprint (x)"}
    assert slurm_setup.slurm_device("auto", unknown)[0] == "cpu"
    with pytest.raises(UserError, match="could not be fingerprinted"):
        slurm_setup.slurm_device("gpu", unknown)


def test_a_gpu_run_from_a_gpu_less_login_node_is_planned_on_the_probe_nodes_gpus(
        monkeypatch, tmp_path):
    """This machine has no GPU: before, `--device gpu` was refused here (fingerprint.require_gpu on the
    driver host) and preflight counted the driver host's GPUs (none). The Docker launcher: the
    local launcher's environments here are CPU builds, which the environment check refuses for a
    GPU run before anything is submitted."""
    from reprokit.runners.slurm import SlurmRunner

    asked = {}

    def probe(self, where, gpus=0):  # the probe job's record, its node fingerprint substituted
        asked["gpus"] = gpus
        return {"job_id": "41", "node": "gpu07", "state": "COMPLETED", "at": "x",
                "gres_gpus": gpus, "node_fingerprint": stored("h100")}

    seen = {}

    def execute(plan, runner, rundir, argv, resume=False, say=print):
        seen.update(plan=plan, runner=runner)
        return models.write_detached_run(rundir, "smoke", runner.name)

    monkeypatch.setattr(SlurmRunner, "probe", probe)
    monkeypatch.setattr(driver, "execute", execute)
    code = cli.main(["run", "--suite", "smoke", "--runner", "slurm", "--device", "gpu", "--quick",
                     "--slurm-launcher", "docker",
                     "--results", str(tmp_path / "r")])
    assert code == 0
    plan, runner = seen["plan"], seen["runner"]
    assert asked["gpus"] == 1  # the probe asks for a GPU, as the cells' jobs will
    assert plan.options.device == "gpu" and runner.device == "gpu"
    assert runner.launcher.name == "docker"
    assert plan.host["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"  # the node's, not this host's
    checks = [c for v in plan.verdicts.values() for c in v.get("checks", [])
              if c["name"] == "gpu_count"]
    assert checks and all("host has 2" in c["detail"] for c in checks), checks


# -- the real one-node cluster (no GPU) ---------------------------------------------------------
def _host_gpus() -> list:
    from reprokit.probes import fingerprint

    return fingerprint.nvml_gpus()[0]


# The one-node cluster is this machine: the two tests below are about a cluster whose node has no
# GPU, which holds only where this machine has none (on a GPU machine the node has one).
no_gpu_node = pytest.mark.skipif(bool(_host_gpus()), reason="this machine has a GPU, so the "
                                 "one-node cluster's node has one: these tests need a GPU-less node")


@pytest.fixture(scope="module")
def cluster():
    p = subprocess.run(["bash", str(REPO / "scripts" / "slurm-setup.sh")], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, f"scripts/slurm-setup.sh failed: {p.stdout[-2000:]} {p.stderr[-2000:]}"


@no_gpu_node
def test_the_probe_job_records_its_nodes_fingerprint(cluster, tmp_path):
    from reprokit.runners.slurm import SlurmRunner

    probe = SlurmRunner(device="cpu", say=lambda *_: None).probe(tmp_path)
    fp = probe["node_fingerprint"]
    assert fp["kind"] == "host_fingerprint" and fp["nvidia"]["available"] is False
    assert probe["gres_gpus"] == 0 and list(tmp_path.iterdir()) == []  # its files are removed
    assert slurm_setup.slurm_device("auto", probe)[0] == "cpu"


@no_gpu_node
def test_device_gpu_through_slurm_is_asked_of_the_node_and_refused_in_one_line(cluster, tmp_path):
    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "run", "--suite", "smoke",
                        "--runner", "slurm", "--device", "gpu", "--quick", "--results",
                        str(tmp_path / "r")], cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.startswith("reproduce.py:")]
    assert len(lines) == 1, p.stderr
    assert "--gres=gpu:1" in lines[0] and "or --device cpu" in lines[0], lines[0]
    assert "this host has no GPU" not in p.stderr  # not the driver host's check
