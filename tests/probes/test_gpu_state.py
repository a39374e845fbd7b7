"""The GPU state around and during every GPU cell (reprokit/probes/gpu_state.py), its place
in the cell result and the report's label for cells run throttled or beside other processes.

No GPU exists here. The NVML readings are exercised with a fake binding whose every function exists,
with the same parameters, in the installed nvidia-ml-py (checked below) and whose constants are the
binding's own; the real no-driver path and the real execute/report path run here; the tests marked
`gpu` run the monitor on a real GPU where there is one (skipped here, saying so).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pynvml
import pytest
from packaging.version import Version

from reprokit import files, formats, kitdata, results, validate
from reprokit.catalog.suites import Cell, Suite
from reprokit.plan.plan import Options, make_plan
from reprokit.probes import gpu_state
from reprokit.reader import merge
from reprokit.report import report, run_health
from reprokit.run.execute import execute
from reprokit.run.record import write_run
from reprokit.runners import host_preflight
from reprokit.runners.local import LocalRunner
from tests import models

REPO = Path(__file__).resolve().parents[2]
UUID_A, UUID_B = "GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-bbbbbbbb-0000-0000-0000-000000000000"


class FakeNVML:
    """Two GPUs. `mode` "idle" reports GpuIdle; "busy" reports SwPowerCap on GPU 0 only. The reason
    constants and NVML_* enums are copied from the installed binding."""

    def __init__(self, processes=None, init_error=None):
        for name in dir(pynvml):
            if name.startswith(("nvmlClocks", "NVML_")) and isinstance(getattr(pynvml, name), int):
                setattr(self, name, getattr(pynvml, name))
        self.mode = "idle"
        self.busy_reads = 0
        self.processes = processes or {}
        self.init_error = init_error
        self.shutdowns = 0

    def nvmlInit(self):
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("h", index)

    def nvmlDeviceGetUUID(self, handle):
        return (UUID_A, UUID_B)[handle[1]]

    def nvmlDeviceGetClockInfo(self, handle, type):
        return 1980 if type == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetMaxClockInfo(self, handle, type):
        return 1980

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700_000  # mW

    def nvmlDeviceGetPowerUsage(self, handle):
        return 650_500

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        if self.mode == "busy" and handle[1] == 0:
            self.busy_reads += 1
            return self.nvmlClocksEventReasonSwPowerCap | self.nvmlClocksEventReasonApplicationsClocksSetting
        return self.nvmlClocksEventReasonGpuIdle

    def nvmlDeviceGetUtilizationRates(self, handle):
        return SimpleNamespace(gpu=97, memory=41)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 71

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem)
                for pid, mem in self.processes.get(handle[1], []) if self.mode == "busy"]


def test_the_fake_calls_only_what_the_installed_binding_has_with_its_parameters():
    fake = FakeNVML()
    names = [n for n in dir(FakeNVML) if n.startswith("nvml") and callable(getattr(FakeNVML, n))]
    assert len(names) >= 12
    for name in names:
        real = getattr(pynvml, name)
        mine = inspect.signature(getattr(fake, name))
        assert len(inspect.signature(real).parameters) == len(mine.parameters), name


def _wait(cond, what, limit=30.0):
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, f"waited {limit} s for {what}"
        time.sleep(0.01)


def test_the_monitor_samples_reasons_and_other_processes_while_the_cell_runs():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # the cell's own
    try:
        foreign = os.getppid()  # not in this process's tree
        fake = FakeNVML(processes={0: [(child.pid, 512 * 2**20), (foreign, 1024 * 2**20)],
                                   1: [(foreign, None)]})
        mon = gpu_state.Monitor(interval_s=0.01, nvml=fake)
        assert [s["throttle_reasons"] for s in mon.before] == [["GpuIdle"], ["GpuIdle"]]
        fake.mode = "busy"  # the cell runs: power capped on GPU 0, another job on both GPUs
        _wait(lambda: fake.busy_reads >= 3, "three samples while busy")
        fake.mode = "idle"
        raw = mon.stop()
    finally:
        child.kill()
        child.wait()
    assert fake.shutdowns == 1 and raw["error"] is None and raw["samples"] >= 4
    snap = raw["after"][0]
    assert snap == {"uuid": UUID_A, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "max_sm_clock_mhz": 1980,
                    "power_limit_w": 700.0, "power_draw_w": 650.5, "throttle_reasons": ["GpuIdle"],
                    "utilization_gpu_pct": 97, "utilization_memory_pct": 41, "temperature_c": 71}
    assert raw["reasons_seen"][UUID_A]["SwPowerCap"] >= 3  # seen only by the samples, not the snapshots

    state = gpu_state.for_cell(raw)  # no cell GPUs known: every GPU NVML saw
    assert state["throttled"] == ["SwPowerCap"]  # ApplicationsClocksSetting and GpuIdle are settings/idle
    assert set(state["reasons_seen"]) == {"GpuIdle", "SwPowerCap", "ApplicationsClocksSetting"}
    assert state["shared"] == [{"pid": foreign, "used_memory_mib": 1024.0, "gpu_uuid": UUID_A},
                               {"pid": foreign, "used_memory_mib": None, "gpu_uuid": UUID_B}]
    assert state["gpus_from"].startswith("every GPU")
    cell = {"status": "ok", "device": "gpu", "gpu_state": state}
    assert validate.errors("cell_result", {**_cell("x"), **cell}) == []

    only_b = gpu_state.for_cell(raw, gpus=[{"index": 1, "uuid": UUID_B, "name": "H100", "visible_as": "0",
                                            "mig": None}])
    assert only_b["throttled"] == [] and [s["uuid"] for s in only_b["before"]] == [UUID_B]
    assert only_b["shared"] == [{"pid": foreign, "used_memory_mib": None, "gpu_uuid": UUID_B}]
    slice_ = {"uuid": "MIG-1234", "parent_uuid": UUID_A, "profile": "1g.10gb", "sm_fraction": 1 / 7}
    mig = gpu_state.for_cell(raw, gpus=[{"index": 0, "uuid": "MIG-1234", "name": "H100", "visible_as": "0",
                                         "mig": slice_}])
    assert mig["throttled"] == ["SwPowerCap"] and [s["uuid"] for s in mig["after"]] == [UUID_A]


def test_a_docker_cells_own_container_is_not_another_process():
    raw = {"before": [], "after": [], "reasons_seen": {}, "samples": 3, "interval_s": 1.0, "error": None,
           "processes": [{"pid": 10, "gpu_uuid": UUID_A, "used_memory_mib": 100.0, "own": False,
                          "cgroup": "0::/system.slice/docker-0123abcd.scope\n"},
                         {"pid": 11, "gpu_uuid": UUID_A, "used_memory_mib": 200.0, "own": False,
                          "cgroup": "0::/user.slice/other-job\n"},
                         {"pid": 12, "gpu_uuid": UUID_A, "used_memory_mib": 300.0, "own": True,
                          "cgroup": None}]}
    assert [p["pid"] for p in gpu_state.for_cell(raw, container_id="0123abcd")["shared"]] == [11]
    assert [p["pid"] for p in gpu_state.for_cell(raw)["shared"]] == [10, 11]


def test_a_process_whose_pid_this_machine_cannot_see_is_shared_only_outside_the_cell():
    """The driver in a container of its own sees NVML's PIDs of another namespace: a process seen only
    while the cell ran may be the cell's own and is not labelled; one seen before or after it is not."""
    def proc(pid, phases):
        return {"pid": pid, "gpu_uuid": UUID_A, "used_memory_mib": 1.0, "own": False, "cgroup": None,
                "visible": False, "phases": phases}
    raw = {"before": [], "after": [], "reasons_seen": {}, "samples": 3, "interval_s": 1.0, "error": None,
           "processes": [proc(20, ["during"]), proc(21, ["before", "during"]), proc(22, ["during", "after"])]}
    state = gpu_state.for_cell(raw)
    assert [p["pid"] for p in state["shared"]] == [21, 22]
    assert [p["pid"] for p in state["unattributed"]] == [20]


def test_which_reasons_count_as_throttling_comes_from_the_data_file():
    policy = gpu_state.reason_policy()
    assert not any(gpu_state.counts_as_throttle(n, policy) for n in
                   ("GpuIdle", "ApplicationsClocksSetting", "UserDefinedClocks", "DisplayClockSetting",
                    "SyncBoost"))
    assert all(gpu_state.counts_as_throttle(n, policy) for n in
               ("SwPowerCap", "HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown"))
    assert gpu_state.counts_as_throttle("bit0x800", policy)  # unknown: not known to be harmless
    doc = kitdata.load("gpu_clock_reasons")
    assert all(r["source"] in doc["sources"] for r in doc["reasons"])
    since = [r["since"] for r in doc["reasons"] if "since" in r]
    assert all(s["source"] in doc["sources"] and s["last_without_source"] in doc["sources"] for s in since)
    assert all(Version(s["last_without"]) < Version(s["nvidia_ml_py"]) for s in since)


def _binding_version() -> Version:
    from importlib import metadata

    return Version(metadata.version("nvidia-ml-py"))


def test_every_reason_the_binding_defines_is_classified_and_every_listed_one_exists():
    """A reason added to (or renamed in) nvidia-ml-py must be classified in gpu_clock_reasons.yaml; a
    listed one must exist in the installed binding unless the data says it came in a later release
    (`since`: on the GPU host of docs/gpu-run, nvidia-ml-py 13.610.43 had no BoardLimit)."""
    bits = gpu_state.reason_bits(pynvml)
    policy = gpu_state.reason_policy()
    assert set(bits.values()) <= set(policy), set(bits.values()) - set(policy)
    installed = _binding_version()
    for name, entry in policy.items():
        defined = any(hasattr(pynvml, p + name) for p in gpu_state.REASON_PREFIXES)
        if "since" not in entry or installed >= Version(entry["since"]["nvidia_ml_py"]):
            assert defined, (name, str(installed))
        elif installed <= Version(entry["since"]["last_without"]):  # what was read in that release
            assert not defined, (name, str(installed), entry["since"])
    assert gpu_state.decode_reasons(0x4 | 0x1 | 0x100000, bits) == ["GpuIdle", "SwPowerCap", "bit0x100000"]
    assert gpu_state.decode_reasons(0x2, bits) == ["ApplicationsClocksSetting"]  # one name per bit


def test_a_binding_older_than_a_reason_leaves_its_bit_unnamed_and_counted_as_a_throttle():
    """With an nvidia-ml-py older than a listed reason's `since` (its constants removed from a copy of
    the installed binding), the bit NVML reports is decoded as 'bit0x...' and labels the cell
    throttled, as the data file's `throttle: true` for those reasons would."""
    policy = gpu_state.reason_policy()
    later = {n for n, e in policy.items() if "since" in e}
    assert later  # BoardLimit and Reliability (nvidia-ml-py 13.615.71)
    older = SimpleNamespace(**{a: getattr(pynvml, a) for a in dir(pynvml)
                               if not any(a == p + n for p in gpu_state.REASON_PREFIXES for n in later)})
    bits, full = gpu_state.reason_bits(older), gpu_state.reason_bits(pynvml)
    assert not later & set(bits.values())
    for bit, name in full.items():
        if name in later:
            assert gpu_state.decode_reasons(bit | 0x4, bits) == ["SwPowerCap", "bit%#x" % bit]
            assert gpu_state.counts_as_throttle("bit%#x" % bit, policy)
            assert policy[name]["throttle"] is True  # the unnamed bit is labelled as the named one is


def test_the_monitor_without_nvml_is_an_error_never_an_exception():
    err = pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    raw = gpu_state.Monitor(nvml=FakeNVML(init_error=err)).stop()
    assert raw["before"] == [] and raw["after"] == [] and raw["error"].startswith("NVML failed to initialise")
    broken = FakeNVML()
    broken.nvmlDeviceGetPowerUsage = lambda h: (_ for _ in ()).throw(
        pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED))
    raw = gpu_state.Monitor(interval_s=60, nvml=broken).stop()
    assert raw["before"][0]["power_draw_w"] is None and "power_draw_w" in raw["before"][0]["errors"]
    assert raw["before"][0]["sm_clock_mhz"] == 1980


def test_attach_gives_gpu_cells_a_state_and_cpu_cells_none():
    raw = {"before": [], "after": [], "reasons_seen": {UUID_A: {"HwThermalSlowdown": 2}}, "processes": [],
           "samples": 5, "interval_s": 1.0, "error": None}
    gpu = {"device": "gpu"}
    info = gpu_state.attach(gpu, {"python": "x", "gpu_state": raw})
    assert info == {"python": "x"} and gpu["gpu_state"]["throttled"] == ["HwThermalSlowdown"]
    cpu = {"device": "cpu"}
    assert gpu_state.attach(cpu, {"gpu_state": raw}) == {} and "gpu_state" not in cpu
    fell_back = {"device": "gpu", "ran_on": {"device": "cpu", "detail": "torch saw no GPU"}}
    gpu_state.attach(fell_back, {"gpu_state": raw})
    assert "gpu_state" not in fell_back
    skipped = {"device": "gpu", "status": "skipped"}  # the runner started no process (too few GPUs)
    gpu_state.attach(skipped, {"gpu_state": raw})
    assert "gpu_state" not in skipped


def test_processes_of_a_repeated_cell_merge_into_one_state():
    a = {"before": [{"uuid": UUID_A}], "after": [{"uuid": UUID_A, "n": 1}], "throttled": [], "shared": [],
         "error": None, "reasons_seen": {"GpuIdle": 2}, "samples": 2}
    b = {"before": [{"uuid": UUID_A, "n": 2}], "after": [{"uuid": UUID_A, "n": 3}],
         "throttled": ["SwPowerCap"], "shared": [{"pid": 7, "used_memory_mib": 1.0, "gpu_uuid": UUID_A}],
         "error": None, "reasons_seen": {"GpuIdle": 1, "SwPowerCap": 4}, "samples": 5}
    m = gpu_state.merge([a, None, b])
    assert m["before"] == a["before"] and m["after"] == b["after"] and m["throttled"] == ["SwPowerCap"]
    assert m["reasons_seen"] == {"GpuIdle": 3, "SwPowerCap": 4} and m["samples"] == 7 and m["processes"] == 2
    assert gpu_state.merge([None, None]) is None
    procs = {1: {**_cell("c"), "process": 1, "gpu_state": a}, 2: {**_cell("c"), "process": 2, "gpu_state": b}}
    assert merge.merge(procs, 2)["gpu_state"]["throttled"] == ["SwPowerCap"]


def _cell(cell_id, **kw):
    doc = {"schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": "r",
           "cell_id": cell_id, "source": "smoke", "stack": "smoke-python", "workload": "w", "variant": "v",
           "params": {}, "status": "ok", "reason": None, "started": None, "finished": None, "wall_s": 1.0,
           "device": "gpu", "metrics": {}, "implementation": {}, "stack_fingerprint": {},
           "kit": files.kit_info()}
    doc.update(kw)
    return doc


def _health(cells):
    """run_health.gpu_health on the model of these cell documents."""
    return run_health.gpu_health([models.cell(c) for c in cells])


# -- through the real driver and report ------------------------------------------------------------
BUDGET = {"min_samples": 5, "max_samples": 5, "time_budget_s": 0, "warmup": 0}


def _run(tmp_path, device):
    cell = Cell(id="test/matmul/n8", source="smoke", stack="smoke-python", framework="python",
                workload="smoke_stdlib", variant="matmul", params={"n": 8},
                metrics=("matmul_time", "matmul_flops"))
    suite = Suite("test", "test suite", [], {"budget": BUDGET, "quick_budget": BUDGET, "timeout_s": 60},
                  [cell])
    rundir = results.RunDir(tmp_path / f"run-{device}")
    run = execute(make_plan(suite, Options(device=device)), LocalRunner(say=lambda *_: None), rundir,
                  ["test"], say=lambda *_: None)
    return rundir, run, rundir.load_cell(cell.id)


def test_a_cpu_run_records_no_gpu_state_and_skips_the_gemm_probe(tmp_path):
    rundir, run, cell = _run(tmp_path, "cpu")
    assert cell["status"] == "ok" and cell["device"] == "cpu"
    assert "gpu_state" not in cell and "gpu_state" not in cell["runner"]
    stored = json.loads(rundir.run_file.read_text())
    assert stored["gpu_peak"] == {"skipped": "a CPU run (device cpu)"}
    assert validate.errors("run", stored) == []


def test_a_gpu_cell_gets_its_gpu_state_through_the_real_driver(tmp_path, monkeypatch):
    """The smoke cell ignores the device, so it can run as a `gpu` cell on the CPU: the driver's
    monitor reads NVML around it for real (no driver here: the state says why; on a GPU machine:
    snapshots). Preflight rightly refuses a GPU cell in the plain-Python environment, so its verdict
    is taken as for the CPU (as tests/plan/test_probes.py does for PTX JIT)."""
    real = host_preflight.suite_verdicts
    monkeypatch.setattr(host_preflight, "suite_verdicts",
                        lambda cells, fp, runner, device="cpu", **kw: real(cells, fp, runner, "cpu", **kw))
    rundir, run, cell = _run(tmp_path, "gpu")
    assert cell["status"] == "ok" and cell["device"] == "gpu"
    st = cell["gpu_state"]
    assert validate.errors("cell_result", cell) == [] and "gpu_state" not in cell["runner"]
    if st["before"]:  # a GPU machine
        assert st["error"] is None and all(s["uuid"].startswith("GPU-") for s in st["before"] + st["after"])
    else:
        assert st["error"].startswith(("NVML failed to initialise", "NVML sees no GPU")) and st["after"] == []
    peak = json.loads(rundir.run_file.read_text())["gpu_peak"]
    assert ("gpus" in peak) or ("skipped" in peak) or ("error" in peak)
    report.render(rundir)
    md = (rundir.path / "report.md").read_text()
    assert "## GPU state per cell" in md and "test/matmul/n8" in md.split("## GPU state per cell")[1]


def test_a_gpu_cell_adopted_without_its_drivers_record_says_its_state_was_not_recorded():
    """On the GPU session (docs/gpu-run, 20261126T180208Z-modern) SIGINT stopped the driver after a
    cell wrote its result but before the driver added what it saw around it (runner, GPUs, NVML
    state); the resume adopted the result. Its GPU state is listed as not recorded, not left out."""
    adopted = _cell("a/adopted")  # no runner, no gpu_state: only what bench wrote
    nvml_failed = _cell("a/no-nvml", runner={"name": "local"})  # the driver ran, NVML gave nothing
    cpu = _cell("a/cpu", device="cpu")
    h = _health([adopted, nvml_failed, cpu])
    assert [c["cell_id"] for c in h["cells"]] == ["a/adopted"] and h["unread_cells"] == ["a/adopted"]
    assert h["cells"][0]["error"] == run_health.NOT_RECORDED and h["warning"] is False
    assert _health([_cell("a/failed", status="failed")])["cells"] == []


def test_the_report_labels_throttled_and_shared_cells(tmp_path):
    snap = {"uuid": UUID_A, "sm_clock_mhz": 1410, "mem_clock_mhz": 2619, "max_sm_clock_mhz": 1980,
            "power_limit_w": 700.0, "power_draw_w": 699.0, "throttle_reasons": ["SwPowerCap"],
            "utilization_gpu_pct": 100, "utilization_memory_pct": 50, "temperature_c": 83}
    hot = _cell("a/hot", gpu_state={"before": [snap], "after": [snap], "throttled": ["SwPowerCap"],
                                     "shared": [], "error": None, "reasons_seen": {"SwPowerCap": 9},
                                     "samples": 12})
    busy = _cell("a/busy", gpu_state={"before": [snap], "after": [snap], "throttled": [],
                                      "shared": [{"pid": 4242, "used_memory_mib": 2048.0,
                                                  "gpu_uuid": UUID_A}],
                                      "error": None})
    calm = _cell("a/calm", gpu_state={"before": [snap], "after": [snap], "throttled": [], "shared": [],
                                      "error": None})
    cpu = _cell("a/cpu", device="cpu")
    h = _health([hot, busy, calm, cpu])
    assert h["throttled_cells"] == ["a/hot"] and h["shared_cells"] == ["a/busy"] and h["warning"]
    assert [c["cell_id"] for c in h["cells"]] == ["a/hot", "a/busy", "a/calm"]
    assert h["cells"][0]["throttled"] == ["SwPowerCap (9 of 12 samples)"]
    assert h["cells"][1]["shared"] == ["pid 4242 (2048 MiB) on GPU-aaaaaaaa"]
    assert _health([calm, cpu])["warning"] is False
    assert h["labels"] == {"a/hot": "GPU throttled: SwPowerCap", "a/busy": "GPU shared with another process"}
    assert _health([cpu]) == {"cells": [], "throttled_cells": [], "shared_cells": [],
                              "unread_cells": [], "warning": False, "labels": {}}

    rundir = _synthetic_run(tmp_path, [hot, busy, calm])
    report.render(rundir)
    md = (rundir.path / "report.md").read_text()
    warning = md.split("GPU cells ran throttled or beside other processes")[1].split("## Verdicts")[0]
    assert "a/hot: SwPowerCap (9 of 12 samples)" in warning and "a/busy: pid 4242" in warning
    assert "a/calm" not in warning
    html = (rundir.path / "report.html").read_text()
    assert 'id="gpu-state-warning"' in html and 'id="gpu-state"' in html
    doc = json.loads((rundir.path / "report.json").read_text())
    assert doc["gpu_state"]["throttled_cells"] == ["a/hot"]


def test_a_published_number_measured_by_a_throttled_cell_says_so_in_its_row(tmp_path):
    """As a number measured under load says `load > cores + 1`, one measured by a GPU cell that ran
    throttled says so in its row (000-L006 is measured by 000/tensorflow/basic_lstm/b128-s30-h512)."""
    snap = {"uuid": UUID_A, "sm_clock_mhz": 900, "mem_clock_mhz": 2619, "max_sm_clock_mhz": 1980,
            "power_limit_w": 700.0, "power_draw_w": 700.0, "throttle_reasons": ["HwThermalSlowdown"],
            "utilization_gpu_pct": 100, "utilization_memory_pct": 50, "temperature_c": 92}
    cell = _cell("000/tensorflow/basic_lstm/b128-s30-h512", source="000", stack="tf-1.2",
                 workload="s000_tensorflow", variant="basic_lstm",
                 gpu_state={"before": [snap], "after": [snap], "throttled": ["HwThermalSlowdown"],
                            "shared": [], "error": None})
    rundir = _synthetic_run(tmp_path, [cell], suite="legacy-2017")
    report.render(rundir)
    md = (rundir.path / "report.md").read_text()
    row = next(line for line in md.splitlines() if "| 000-L006 |" in line)
    assert "GPU throttled: HwThermalSlowdown" in row
    doc = json.loads((rundir.path / "report.json").read_text())
    labelled = [n["id"] for n in doc["numbers"] if n.get("gpu_state_label")]
    assert {"000-L005", "000-L006", "000-L007"} <= set(labelled)  # the cell's three numbers
    assert "000-L008" not in labelled  # another cell's


def _synthetic_run(tmp_path, cells, suite="smoke"):
    rundir = results.RunDir(tmp_path / "synthetic")
    rundir.path.mkdir(parents=True)
    run = {"schema_version": formats.version("run"), "kind": "run", "run_id": "synthetic", "suite": suite,
           "argv": ["test"], "runner": "local", "protocol": "budget", "quick": True, "repeat": 1,
           "started": "2026-11-26T00:00:00Z", "finished": "2026-11-26T00:01:00Z", "wall_s": 60.0,
           "host_fingerprint": {"gpus": [], "nvidia": {"available": False, "reason": "synthetic"}},
           "kit": files.kit_info(), "stacks": {}, "current": None, "cpu_peak": None,
           "cells": [{"cell_id": c["cell_id"], "stack": c["stack"], "status": c["status"], "reason": None,
                      "process_wall_s": 2.0, "result_file": f"cells/{results.cell_filename(c['cell_id'])}"}
                     for c in cells]}
    for c in cells:
        rundir.write_cell(dict(c, run_id="synthetic"))
    write_run(rundir, run)
    return rundir


# -- on a real GPU (skipped elsewhere; tests/conftest.py) --------------------------------------------
@pytest.mark.gpu
def test_the_monitor_reads_a_real_gpu():
    mon = gpu_state.Monitor(interval_s=0.05)
    assert mon.error is None, mon.error
    _wait(lambda: mon.samples >= 3, "three samples")
    raw = mon.stop()
    assert raw["error"] is None, raw["error"]
    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
    assert len(raw["before"]) == len(raw["after"]) == count >= 1 and raw["samples"] >= 3
    ranges = {"power_limit_w": (10, 2000), "power_draw_w": (0, 2000), "utilization_gpu_pct": (0, 100),
              "utilization_memory_pct": (0, 100), "temperature_c": (1, 120)}
    for s in raw["before"] + raw["after"]:
        assert s["uuid"].startswith("GPU-")
        assert 0 < s["sm_clock_mhz"] <= s["max_sm_clock_mhz"] and s["mem_clock_mhz"] > 0
        assert isinstance(s["throttle_reasons"], list)
        for key, (lo, hi) in ranges.items():  # a board may refuse one (utilisation in MIG mode): said why
            errors = s.get("errors") or {}
            assert (s[key] is not None and lo <= s[key] <= hi) or \
                (s[key] is None and (key in errors or "utilization" in errors)), (key, s)
    state = gpu_state.for_cell(raw)
    assert validate.errors("cell_result", _cell("g", gpu_state=state)) == []


@pytest.mark.gpu
def test_the_monitor_sees_a_cuda_process_and_knows_it_is_its_own(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} here has no CUDA (a CPU build): no CUDA process to watch")
    ready = tmp_path / "ready"
    code = ("import sys, time, torch; x = torch.ones(4096, 4096, device='cuda'); torch.cuda.synchronize(); "
            f"open({str(ready)!r}, 'w').close(); t = time.time()\n"
            "while time.time() - t < 3: x = x @ x; x = x / x.norm()\n"
            "torch.cuda.synchronize()")
    mon = gpu_state.Monitor(interval_s=0.1)
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        child.wait(timeout=120)
    finally:
        raw = mon.stop()
    assert child.returncode == 0 and ready.exists()
    mine = [p for p in raw["processes"] if p["pid"] == child.pid]
    if not mine:  # NVML in a container may not see host PIDs of its own processes
        pytest.skip("NVML listed no process with the child's PID here (a PID namespace?)")
    assert all(p["own"] for p in mine)
    assert child.pid not in [p["pid"] for p in gpu_state.for_cell(raw)["shared"]]


def test_the_slurm_task_records_the_gpu_state_on_its_node(tmp_path):
    """reprokit/runners/slurm_task.py as a Slurm array task runs it on its node (a real child process;
    no Slurm needed to run the task's own code): its record carries the monitor's raw state, which the
    driver turns into the cell's gpu_state (a CPU cell's is dropped by gpu_state.attach)."""
    record, log = tmp_path / "task-0.json", tmp_path / "log.txt"
    tasks = {"run_dir": str(tmp_path), "launcher": "local",
             "tasks": [{"cell_id": "c", "process": None, "argv": [sys.executable, "-c", "print('cell')"],
                        "env": {}, "cwd": None, "docker_name": None, "launcher": "local", "spec": None,
                        "gpus": 0, "log": str(log), "record": str(record)}]}
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "PYTHONPATH": str(REPO)}
    env.pop("SLURM_JOB_GPUS", None)
    p = subprocess.run([sys.executable, "-m", "reprokit.runners.slurm_task", str(tmp_path / "tasks.json")],
                       capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert p.returncode == 0, p.stderr
    rec = json.loads(record.read_text())
    assert rec["exit_code"] == 0 and log.read_text() == "cell\n"
    raw = rec["gpu_state"]
    assert set(raw) >= {"before", "after", "reasons_seen", "processes", "samples", "error"}
    assert bool(raw["before"]) == (raw["error"] is None)  # snapshots on a GPU node, else NVML's reason
    assert rec["node_gpu_peak"] is None  # a task given no GPUs measures none
    info = gpu_state.attach({"device": "cpu"}, {"gpu_state": raw, "node": rec["node"]})
    assert info == {"node": rec["node"]}
