"""The GPUs each cell had (reprokit/probes/cell_gpus.py), MIG slices in the fingerprint, and the MIG
blocker of CUDA < 11 stacks. Pure logic on the stored fingerprints of tests/data/fingerprints (no
GPU exists where the kit is developed) and a fake NVML binding for the MIG calls."""
from __future__ import annotations

import copy
import json
import types
from pathlib import Path

import pytest

from reprokit import results
from reprokit.catalog.suites import Cell
from reprokit.plan import compat as compat_data
from reprokit.plan import preflight
from reprokit.probes import cell_gpus, fingerprint
from reprokit.run import record
from reprokit.runners.base import CellOutcome

FPS = Path(__file__).parents[1] / "data" / "fingerprints"
U0 = "GPU-00000000-0000-0000-0000-000000000000"
U1 = "GPU-00000000-0000-0000-0000-000000000001"
MIG_A = "MIG-11111111-aaaa-5bbb-8ccc-000000000001"
MIG_B = "MIG-22222222-aaaa-5bbb-8ccc-000000000002"


def stored(name: str) -> dict:
    return json.loads((FPS / f"{name}.json").read_text())


def with_mig(fp: dict) -> dict:
    """GPU 1 of a stored fingerprint put in MIG mode with two slices (1g and 3g), as nvml_gpus
    records them (mig_devices, mig_sm_total); GPU 0 with MIG off."""
    fp = copy.deepcopy(fp)
    fp["gpus"][0]["mig_mode"] = {"current": False, "pending": False}
    g = fp["gpus"][1]
    g["mig_mode"] = {"current": True, "pending": True}
    base = g["name"]
    g["mig_sm_total"] = 98
    g["mig_devices"] = [
        {"index": 0, "uuid": MIG_A, "name": f"{base} MIG 1g.10gb", "profile": "1g.10gb",
         "gpu_instance_id": 9, "compute_instance_id": 0, "sm_count": 14},
        {"index": 1, "uuid": MIG_B, "name": f"{base} MIG 3g.40gb", "profile": "3g.40gb",
         "gpu_instance_id": 2, "compute_instance_id": 0, "sm_count": 42},
    ]
    return fp


# -- device ids (Docker runner, Slurm container launchers) ----------------------------------------
@pytest.mark.parametrize("name, model", [("h100", "NVIDIA H100 80GB HBM3"),
                                         ("a100", "NVIDIA A100-SXM4-80GB"),
                                         ("b200", "NVIDIA B200"),
                                         ("rtx5090", "NVIDIA GeForce RTX 5090")])
def test_docker_device_ids_name_the_gpus_given(name, model):
    fp = stored(name)
    gpus, source = cell_gpus.for_cell({}, "docker", {"gpus": ["1"]}, 1, fp)
    assert gpus == [{"index": 1, "uuid": U1, "name": model, "visible_as": "1", "mig": None}]
    assert source == "Docker device ids 1 + host fingerprint"
    gpus, _ = cell_gpus.for_cell({}, "docker", {"gpus": [U1, "0"]}, 2, fp)
    assert [g["index"] for g in gpus] == [1, 0] and gpus[0]["visible_as"] == U1


def test_docker_device_id_the_host_lacks_is_said():
    gpus, source = cell_gpus.for_cell({}, "docker", {"gpus": ["7"]}, 1, stored("h100"))
    assert gpus == [{"index": None, "uuid": None, "name": None, "visible_as": "7", "mig": None}]
    assert "id(s) 7 match no GPU" in source


def test_mig_slice_by_uuid_and_by_pair():
    fp = with_mig(stored("a100"))
    gpus, _ = cell_gpus.for_cell({}, "docker", {"gpus": [MIG_B]}, 1, fp)
    (g,) = gpus
    assert (g["index"], g["uuid"], g["name"]) == (1, U1, "NVIDIA A100-SXM4-80GB")
    assert g["mig"] == {"uuid": MIG_B, "parent_uuid": U1, "profile": "3g.40gb",
                        "sm_fraction": round(42 / 98, 4)}
    (p,) = cell_gpus.from_device_ids(["1:0"], fp["gpus"])[0]
    assert p["mig"]["uuid"] == MIG_A and p["mig"]["sm_fraction"] == round(14 / 98, 4)
    (u,) = cell_gpus.from_device_ids(["MIG-1111"], fp["gpus"])[0]  # a unique prefix, as CUDA takes
    assert u["mig"]["uuid"] == MIG_A
    legacy = cell_gpus.match(f"MIG-{U1}/2/0", fp["gpus"])  # MIG-GPU-<uuid>/<gi>/<ci> (pre-R470)
    assert legacy["mig"]["uuid"] == MIG_B


def test_whole_mig_gpu_gives_an_unknown_slice():
    """A MIG-enabled GPU named whole: CUDA gets one of its slices, which one is not known here."""
    fp = with_mig(stored("h100"))
    (g,) = cell_gpus.from_device_ids(["1"], fp["gpus"])[0]
    assert g["uuid"] == U1 and g["mig"] == {"uuid": None, "parent_uuid": U1, "profile": None,
                                            "sm_fraction": None}
    fp["gpus"][1]["mig_devices"] = fp["gpus"][1]["mig_devices"][:1]  # one slice: that one
    (g,) = cell_gpus.from_device_ids(["1"], fp["gpus"])[0]
    assert g["mig"]["uuid"] == MIG_A


def test_sm_fraction_null_without_the_sm_total():
    fp = with_mig(stored("a100"))
    del fp["gpus"][1]["mig_sm_total"]
    (g,) = cell_gpus.from_device_ids([MIG_A], fp["gpus"])[0]
    assert g["mig"]["sm_fraction"] is None and g["mig"]["profile"] == "1g.10gb"


# -- CUDA_VISIBLE_DEVICES (local runner, Slurm local launcher) ------------------------------------
def test_cuda_visible_devices_in_pci_order_is_exact():
    gpus = stored("h100")["gpus"]
    got, note = cell_gpus.from_cuda_visible("1,0", gpus, "PCI_BUS_ID")
    assert [g["uuid"] for g in got] == [U1, U0] and note == ""
    got, _ = cell_gpus.from_cuda_visible("GPU-00000000-0000-0000-0000-000000000001", gpus, None)
    assert [g["index"] for g in got] == [1]  # a UUID is exact whatever the order


def test_cuda_visible_devices_stops_at_the_first_unknown_entry():
    gpus = stored("h100")["gpus"]
    got, note = cell_gpus.from_cuda_visible("1,5,0", gpus, "PCI_BUS_ID")
    assert [g["index"] for g in got] == [1] and "'5' matches no GPU" in note
    got, note = cell_gpus.from_cuda_visible("", gpus, "PCI_BUS_ID")
    assert got == [] and "sees no GPU" in note
    got, _ = cell_gpus.from_cuda_visible("-1", gpus, "PCI_BUS_ID")
    assert got == []


def test_cuda_visible_devices_index_without_pci_order_keeps_only_the_shared_name():
    gpus = stored("rtx5090")["gpus"]
    got, note = cell_gpus.from_cuda_visible("1", gpus, None)
    assert got == [{"index": None, "uuid": None, "name": "NVIDIA GeForce RTX 5090",
                    "visible_as": "1", "mig": None}]
    assert "not PCI_BUS_ID" in note
    mixed = gpus[:1] + stored("h100")["gpus"][1:]
    got, note = cell_gpus.from_cuda_visible("0", mixed, "FASTEST_FIRST")
    assert got[0]["name"] is None and "the GPUs differ" in note
    one = gpus[:1]  # one GPU: index 0 is that GPU in any order
    got, note = cell_gpus.from_cuda_visible("0", one, None)
    assert got[0]["uuid"] == U0 and note == ""


def test_an_index_cuda_may_map_to_a_mig_gpu_keeps_the_slice_unknown():
    """Without PCI_BUS_ID order on a host with a GPU in MIG mode, index 0 may be a slice: its share
    of the GPU is unknown (mig set, sm_fraction null), never the whole GPU's."""
    fp = with_mig(stored("a100"))
    got, _ = cell_gpus.from_cuda_visible("0", fp["gpus"], None)
    assert got[0]["name"] == "NVIDIA A100-SXM4-80GB" and got[0]["mig"]["sm_fraction"] is None


def test_cuda_visible_devices_mig_uuid():
    fp = with_mig(stored("h100"))
    got, note = cell_gpus.from_cuda_visible(MIG_A, fp["gpus"], None)
    assert got[0]["mig"]["uuid"] == MIG_A and got[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert note == ""


def test_local_runner_reads_the_cells_own_environment():
    fp = stored("b200")
    result = {"stack_fingerprint": {"env": {"CUDA_VISIBLE_DEVICES": "1",
                                            "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}}
    gpus, source = cell_gpus.for_cell(result, "local", {}, 1, fp, {"CUDA_VISIBLE_DEVICES": "0"})
    assert [g["uuid"] for g in gpus] == [U1]
    assert source == "CUDA_VISIBLE_DEVICES=1 + host fingerprint"
    # no stack fingerprint (a crashed cell): the environment the runner gave it
    gpus, _ = cell_gpus.for_cell({}, "local", {}, 1, fp,
                                 {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [g["uuid"] for g in gpus] == [U1]
    # unset: every GPU, the cell uses the first it sees
    gpus, source = cell_gpus.for_cell({}, "local", {}, 1, fp, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [g["index"] for g in gpus] == [0] and source.startswith("CUDA_VISIBLE_DEVICES unset")


# -- Slurm ------------------------------------------------------------------------------------
def test_slurm_container_ids_on_an_unconstrained_node():
    info = {"node": "n1", "node_fingerprint": stored("a100"), "gpus": ["1"]}
    gpus, source = cell_gpus.for_cell({}, "slurm", info, 1, stored("h100"))
    assert gpus[0]["uuid"] == U1 and gpus[0]["name"] == "NVIDIA A100-SXM4-80GB"  # the node's GPU
    assert source == "SLURM_JOB_GPUS 1 (container device ids) + node n1 fingerprint"


def test_slurm_job_gpus_on_a_constrained_node_match_by_position():
    """ConstrainDevices: NVML inside the job lists only the job's GPUs, numbered from 0, while
    SLURM_JOB_GPUS keeps Slurm's global ids (3 and 5 here)."""
    node = stored("h100")
    gpus, note = cell_gpus.job_gpu_ids(["5", "3"], node["gpus"])
    assert [g["uuid"] for g in gpus] == [U1, U0] and "constrained" in note


def test_slurm_job_in_a_device_cgroup_counts_cuda_indexes_among_its_own_gpus():
    """NVML's count lists every GPU of the node; the ones the job may not open have no UUID
    (NO_PERMISSION): CUDA_VISIBLE_DEVICES=0 is then the job's first GPU, NVML index 1 here."""
    node = stored("h100")
    node["gpus"][0] = {"index": 0, "errors": {"handle": "NVMLError_NoPermission: Insufficient Permissions"}}
    info = {"node": "n1", "node_fingerprint": node,
            "gpu_env": {"SLURM_JOB_GPUS": "1", "CUDA_VISIBLE_DEVICES": "0"}}
    gpus, source = cell_gpus.for_cell({}, "slurm", info, 1, None)
    assert gpus == [{"index": 1, "uuid": U1, "name": "NVIDIA H100 80GB HBM3", "visible_as": "0",
                     "mig": None}]
    assert "can open 1 of the node's 2 GPUs" in source
    # the container launchers' global ids match NVML indexes there
    assert [g["uuid"] for g in cell_gpus.job_gpu_ids(["1"], node["gpus"])[0]] == [U1]


def test_slurm_local_launcher_reads_the_task_environment():
    info = {"node": "n1", "node_fingerprint": stored("b200"),
            "gpu_env": {"SLURM_JOB_GPUS": "1", "CUDA_VISIBLE_DEVICES": "1",
                        "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}
    gpus, source = cell_gpus.for_cell({}, "slurm", info, 1, None)
    assert gpus[0]["uuid"] == U1 and gpus[0]["name"] == "NVIDIA B200"
    assert source == "CUDA_VISIBLE_DEVICES=1 (SLURM_JOB_GPUS=1) + node n1 fingerprint"


def test_slurm_without_node_fingerprint_is_not_the_driver_hosts_gpu():
    gpus, source = cell_gpus.for_cell({}, "slurm", {"node": "n1"}, 1, stored("h100"))
    assert gpus == [] and "no node fingerprint" in source


def test_a_cpu_cell_records_no_gpus():
    assert cell_gpus.for_cell({}, "docker", {"gpus": ["0"]}, 0, stored("h100")) == \
        ([], "a CPU cell: no GPU")


# -- the executor writes it -------------------------------------------------------------------
def _cell(device: str | None = None) -> Cell:
    return Cell(id="000-X", source="000", stack="tf-1.8", framework="tensorflow", workload="w",
                variant=None, params={}, metrics=("m",), device=device)


def test_finish_result_records_the_gpus(tmp_path):
    rundir = results.RunDir(tmp_path / "run")
    rundir.cells_dir.mkdir(parents=True)
    out = CellOutcome("crashed", "boom", 1.0, None, {"gpus": ["1"]})
    res = record.finish_result(rundir, "run", _cell(), out, {}, "docker", "gpu",
                                 host=stored("h100"))
    assert res["gpus"][0]["uuid"] == U1
    assert res["gpus_source"] == "Docker device ids 1 + host fingerprint"
    skipped = CellOutcome("skipped", "the cell needs 1 GPUs but --gpus 0 gives 0", 0.0, None, {})
    fresh = results.RunDir(tmp_path / "run2")  # no result of the cell on disk yet
    fresh.cells_dir.mkdir(parents=True)
    res = record.finish_result(fresh, "run", _cell(), skipped, {}, "docker", "gpu",
                                 host=stored("h100"))
    assert res["gpus"] == [] and res["gpus_source"] == "not run: the cell was skipped"
    res = record.finish_result(rundir, "run", _cell(), out, {}, "docker", "cpu",
                                 host=stored("h100"))
    assert res["gpus"] == [] and res["gpus_source"] == "a CPU cell: no GPU"
    res = record.finish_result(rundir, "run", _cell("cpu"), out, {}, "docker", "gpu",
                                 host=stored("h100"))  # a cell published on a CPU
    assert res["gpus"] == []
    from reprokit import validate
    assert validate.errors("cell_result", res) == []


# -- fingerprint: MIG devices through NVML ------------------------------------------------------
class _NotFound(Exception):
    pass


class FakeMigNVML:
    """One A100 in MIG mode with slices at MIG indexes 0 and 2 (1 is empty), as pynvml answers."""
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    NVML_GPU_INSTANCE_PROFILE_COUNT = 3

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return "570.133.20"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12080

    def nvmlSystemGetNVMLVersion(self):
        return "12.570.133.20"

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("gpu", i)

    def nvmlDeviceGetName(self, h):
        return {("gpu", 0): "NVIDIA A100-SXM4-40GB", ("mig", 0): "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
                ("mig", 2): "NVIDIA A100-SXM4-40GB MIG 3g.20gb"}[h]

    def nvmlDeviceGetUUID(self, h):
        return {("gpu", 0): U0, ("mig", 0): MIG_A, ("mig", 2): MIG_B}[h]

    def nvmlDeviceGetMigMode(self, h):
        return [1, 1]

    def nvmlDeviceGetMaxMigDeviceCount(self, h):
        return 3

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, i):
        if i == 1:
            raise _NotFound("Not Found")
        return ("mig", i)

    def nvmlDeviceGetAttributes(self, h):
        sms = {("mig", 0): 14, ("mig", 2): 42}[h]
        return types.SimpleNamespace(multiprocessorCount=sms, gpuInstanceSliceCount=sms // 14,
                                     computeInstanceSliceCount=sms // 14, memorySizeMB=4864)

    def nvmlDeviceGetGpuInstanceId(self, h):
        return {("mig", 0): 7, ("mig", 2): 2}[h]

    def nvmlDeviceGetComputeInstanceId(self, h):
        return 0

    def nvmlDeviceGetGpuInstanceProfileInfo(self, h, profile):
        if profile == 1:
            raise _NotFound("Not Supported")
        return types.SimpleNamespace(multiprocessorCount={0: 14, 2: 98}[profile])


def test_fingerprint_records_mig_slices():
    gpus, _ = fingerprint.nvml_gpus(FakeMigNVML())
    (g,) = gpus
    assert g["mig_mode"] == {"current": True, "pending": True} and g["mig_sm_total"] == 98
    assert [(m["index"], m["uuid"], m["profile"], m["sm_count"], m["gpu_instance_id"])
            for m in g["mig_devices"]] == [(0, MIG_A, "1g.5gb", 14, 7), (2, MIG_B, "3g.20gb", 42, 2)]
    assert "mig_device_1" not in g["errors"]
    json.dumps(gpus)
    # and a cell given the 3g slice by its UUID
    fp = {"nvidia": {"available": True}, "gpus": gpus}
    (e,) = cell_gpus.from_device_ids([MIG_B], gpus)[0]
    assert e["mig"]["sm_fraction"] == round(42 / 98, 4) and e["name"] == "NVIDIA A100-SXM4-40GB"
    assert cell_gpus.fingerprint_gpus(fp) == gpus


def test_every_nvml_mig_call_exists_in_the_installed_binding():
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py not installed")
    for name in ("nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex",
                 "nvmlDeviceGetAttributes", "nvmlDeviceGetGpuInstanceId",
                 "nvmlDeviceGetComputeInstanceId", "nvmlDeviceGetGpuInstanceProfileInfo",
                 "nvmlDeviceGetMigMode", "NVML_GPU_INSTANCE_PROFILE_COUNT"):
        assert hasattr(pynvml, name), name


# -- preflight: CUDA < 11 stacks cannot run on MIG ----------------------------------------------
def test_mig_blocks_the_cuda8_stack_with_the_reason():
    fp = with_mig(stored("a100"))
    fp["gpus"] = fp["gpus"][1:]  # the MIG GPU first
    host = preflight.host_from_fingerprint(fp)
    v = preflight.check_stack_cell("tf-1.2", host, 1, runner="local")  # CUDA 8.0.44
    assert v["runnable"] is False and v["status"] == "blocked"
    assert any("mig-needs-cuda-11" in r and "MIG mode" in r for r in v["reasons"]), v["reasons"]
    modern = preflight.check_stack_cell("torch-modern", host, 1, runner="local")
    assert not any("mig-needs-cuda-11" in r for r in modern["reasons"])
    off = preflight.host_from_fingerprint(with_mig(stored("a100")))  # GPU 0: MIG off
    v = preflight.check_stack_cell("tf-1.2", off, 1, runner="local")
    assert not any("mig-needs-cuda-11" in r for r in v["reasons"])


def test_mig_not_supported_reads_as_no_mig():
    gpu = {"mig_mode": None, "errors": {"mig_mode": "NVMLError_NotSupported: Not Supported"}}
    assert preflight.mig_enabled(gpu) is False
    assert preflight.mig_enabled({}) is None
    assert preflight.mig_enabled({"mig_mode": {"current": True, "pending": False}}) is True


def test_mig_blocker_lists_every_stack_below_cuda_11():
    compat = compat_data.load_compat()
    (blocker,) = [b for b in compat["blockers"] if b["id"] == "mig-needs-cuda-11"]
    major = int(blocker["cuda_below"])
    below = {name for name, s in compat["stacks"].items()
             if s["gpu"] and s["cuda"] and int(str(s["cuda"]).split(".")[0]) < major}
    assert set(blocker["stacks"]) == below


def test_slurm_outcome_carries_the_tasks_gpu_env_to_cell_gpus(tmp_path):
    from reprokit.runners.slurm import SlurmRunner, Task

    runner = SlurmRunner(device="gpu", say=lambda *_: None)
    t = Task(_cell(), None, {}, tmp_path / "job.json", tmp_path / "log", gpus=1, job_id="5_0")
    rec = {"node": "n1", "exit_code": 0, "wall_s": 1.0, "node_fingerprint": stored("rtx5090"),
           "gpu_env": {"SLURM_JOB_GPUS": "1", "CUDA_VISIBLE_DEVICES": "1",
                       "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}
    out = runner.outcome(t, {"state": "COMPLETED"}, rec)
    assert out.runner_info["gpu_env"]["SLURM_JOB_GPUS"] == "1"
    gpus, source = cell_gpus.for_cell({}, "slurm", out.runner_info, 1, stored("h100"))
    assert gpus[0]["uuid"] == U1 and gpus[0]["name"] == "NVIDIA GeForce RTX 5090"
    assert source.endswith("+ node n1 fingerprint")


def test_unreadable_records_cost_the_list_never_the_cell():
    bad = {"nvidia": {"available": True}, "gpus": [{"index": "x", "uuid": 5, "mig_mode": {"current": 1}}]}
    gpus, source = cell_gpus.for_cell({}, "docker", {"gpus": ["GPU-0"]}, 1, bad)
    assert gpus == [] and source.startswith("not known: the GPU records could not be read")


def test_the_local_runner_numbers_gpus_as_nvml_does():
    """CUDA's default order is fastest first; NVML's (the fingerprint's) is PCI bus id. The local
    runner and the Slurm local launcher set CUDA_DEVICE_ORDER=PCI_BUS_ID so a cell's CUDA index is
    the fingerprint's index (it was unset: a multi-GPU cell recorded only a name)."""
    from reprokit.catalog.suites import load_stacks
    from reprokit.runners.launchers import LocalLauncher
    from reprokit.runners.local import LocalRunner

    spec = load_stacks()["smoke-python"]
    prepared = LocalRunner(say=lambda m: None).prepare("smoke-python", spec)
    assert prepared["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    launched = LocalLauncher(say=lambda m: None).prepare("smoke-python", spec, lambda m: None)
    assert launched["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_each_local_stack_has_its_own_cuda_jit_cache(monkeypatch, tmp_path):
    """The driver's default cache is shared by every program of the user: a cell's jit_cache would
    say nothing of its own stack's kernels. Each local stack gets its own (the user's setting wins)."""
    from reprokit.catalog.suites import load_stacks
    from reprokit.runners.launchers import LocalLauncher
    from reprokit.runners.local import LocalRunner

    monkeypatch.setenv("REPROKIT_CUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_CACHE_PATH", raising=False)
    stacks = load_stacks()
    paths = {s: LocalRunner(say=lambda m: None).prepare(s, stacks[s])["env"]["CUDA_CACHE_PATH"]
             for s in ("smoke-python", "torch-modern")}
    assert paths == {s: str(tmp_path / s) for s in paths}
    launched = LocalLauncher(say=lambda m: None).prepare("smoke-python", stacks["smoke-python"],
                                                         lambda m: None)
    assert launched["env"]["CUDA_CACHE_PATH"] == str(tmp_path / "smoke-python")
    monkeypatch.setenv("CUDA_CACHE_PATH", "/mine")
    assert LocalRunner(say=lambda m: None).prepare("smoke-python", stacks["smoke-python"])["env"][
        "CUDA_CACHE_PATH"] == "/mine"
