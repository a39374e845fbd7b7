"""The state of the GPUs around and during a cell, through NVML (host side; docs/FORMATS.md `gpu_state`).

`Monitor()` is started just before a GPU cell's process and stopped just after it (reprokit/run/execute.py
for the local and Docker runners, reprokit/runners/slurm_task.py on a Slurm node). It takes a snapshot
of every GPU NVML sees before and after the cell (SM and memory clocks, power limit and draw, clock
event reasons, utilisation, temperature) and, in a thread, samples the clock event reasons and the
compute processes every `interval_s` seconds while the cell runs: a snapshot after a cell sees an idle
GPU, so throttling and other jobs during the cell are caught only by sampling.

`for_cell(raw, gpus, container_id)` turns what the monitor saw into the cell result's `gpu_state`:
only the cell's GPUs (its `gpus` list, when it has one), the reasons that count as throttling
(reprokit/data/gpu_clock_reasons.yaml, from NVML's documentation), and the compute processes that are
not the cell's own (the driver's process tree; a Docker cell's container, told by its cgroup).

Every NVML call is guarded: a failure becomes an error string, never an exception that could cost a
cell. The NVML success path has run only against a fake binding here (no GPU on the development
machines); the tests marked `gpu` run it on a real GPU.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from reprokit import kitdata

REASON_PREFIXES = ("nvmlClocksEventReason", "nvmlClocksThrottleReason")  # newer name first
REASON_FUNCTIONS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
DEFAULT_INTERVAL_S = 1.0


def _err(e: BaseException) -> str:
    return ("%s: %s" % (type(e).__name__, e)).strip()[:300]


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# -- clock event reasons ------------------------------------------------------------------------------
def reason_bits(nv: Any) -> dict[int, str]:
    """{bit: name} of the single-bit clock event reasons the NVML binding defines (its constants,
    nvmlClocksEventReason* first, then the older nvmlClocksThrottleReason* for bits only they name).
    Where two names share a bit (UserDefinedClocks is ApplicationsClocksSetting) the first in
    alphabetical order is kept."""
    bits: dict[int, str] = {}
    for prefix in REASON_PREFIXES:
        for attr in sorted(dir(nv)):
            if not attr.startswith(prefix):
                continue
            value = getattr(nv, attr)
            if isinstance(value, int) and value > 0 and value & (value - 1) == 0:
                bits.setdefault(value, attr[len(prefix):])
    return bits


def decode_reasons(mask: int, bits: dict[int, str]) -> list[str]:
    """The reason names set in `mask`; a bit no constant names becomes 'bit0x...'."""
    names = []
    rest = int(mask)
    for bit in sorted(bits):
        if rest & bit:
            names.append(bits[bit])
            rest &= ~bit
    b = 1
    while rest:
        if rest & b:
            names.append("bit%#x" % b)
            rest &= ~b
        b <<= 1
    return names


def reason_policy() -> dict[str, dict]:
    """{name: entry} of reprokit/data/gpu_clock_reasons.yaml."""
    return {r["name"]: r for r in kitdata.load("gpu_clock_reasons")["reasons"]}


def counts_as_throttle(name: str, policy: dict[str, dict] | None = None) -> bool:
    """True for a reason that lowers the clocks by power, heat or a hardware slowdown; false for idle
    and settings. A reason the data file does not list counts (it is not known to be harmless)."""
    entry = (policy if policy is not None else reason_policy()).get(name)
    return True if entry is None else bool(entry["throttle"])


# -- NVML readings ------------------------------------------------------------------------------------
def _reasons_function(nv: Any) -> Callable | None:
    for name in REASON_FUNCTIONS:
        fn = getattr(nv, name, None)
        if fn is not None:
            return fn
    return None


def device_snapshot(nv: Any, handle: Any, bits: dict[int, str]) -> dict[str, Any]:
    """One GPU's state now (the contract's snapshot); each call guarded, failures in `errors`."""
    errors: dict[str, str] = {}

    def call(key: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as e:  # NVMLError_NotSupported on some boards, or a driver that went away
            errors[key] = _err(e)
            return None

    def scaled(value: Any, factor: float) -> float | None:
        return value / factor if isinstance(value, (int, float)) else None

    util = call("utilization", lambda: nv.nvmlDeviceGetUtilizationRates(handle))
    reasons_fn = _reasons_function(nv)
    mask = call("throttle_reasons", lambda: reasons_fn(handle)) if reasons_fn else None
    if reasons_fn is None:
        errors["throttle_reasons"] = "the NVML binding has neither " + " nor ".join(REASON_FUNCTIONS)
    snap = {
        "uuid": _text(call("uuid", lambda: nv.nvmlDeviceGetUUID(handle))),
        "sm_clock_mhz": call("sm_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM)),
        "mem_clock_mhz": call("mem_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_MEM)),
        "max_sm_clock_mhz": call("max_sm_clock_mhz",
                                 lambda: nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_SM)),
        "power_limit_w": scaled(call("power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(handle)),
                                1000.0),  # milliwatts
        "power_draw_w": scaled(call("power_draw_w", lambda: nv.nvmlDeviceGetPowerUsage(handle)), 1000.0),
        "throttle_reasons": decode_reasons(mask, bits) if isinstance(mask, int) else None,
        "utilization_gpu_pct": getattr(util, "gpu", None),
        "utilization_memory_pct": getattr(util, "memory", None),
        "temperature_c": call("temperature_c",
                              lambda: nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)),
    }
    if errors:
        snap["errors"] = errors
    return snap


def energy_reading(nv: Any, handle: Any) -> list:
    """[unix time, the GPU's total energy counter in mJ (None without one: before Volta, or not
    supported), its power draw in W (None when unreadable)]. NEVER RUN ON A GPU: a fake binding only."""
    t = time.time()
    try:
        mj = float(nv.nvmlDeviceGetTotalEnergyConsumption(handle))
    except Exception:
        mj = None
    try:
        w = float(nv.nvmlDeviceGetPowerUsage(handle)) / 1000.0
    except Exception:
        w = None
    return [t, mj, w]


def compute_processes(nv: Any, handle: Any, uuid: str | None) -> tuple[list[dict], str | None]:
    """([{"pid", "used_memory_mib", "gpu_uuid"}], error) of the compute processes on one GPU."""
    try:
        procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception as e:
        return [], _err(e)
    out = []
    for p in procs or []:
        used = getattr(p, "usedGpuMemory", None)  # bytes; None when NVML cannot tell (a container)
        out.append({"pid": int(p.pid), "gpu_uuid": uuid,
                    "used_memory_mib": used / 2**20 if isinstance(used, int) else None})
    return out, None


# -- whose process is it ------------------------------------------------------------------------------
def process_tree(root: int, proc: str = "/proc") -> set[int]:
    """`root` and its descendants now, from /proc/<pid>/stat (empty beyond `root` where /proc is not
    readable)."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return {root}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat"), encoding="utf-8", errors="replace") as f:
                stat = f.read()
            parents[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def _cgroup(pid: int, proc: str = "/proc") -> str | None:
    try:
        with open(os.path.join(proc, str(pid), "cgroup"), encoding="utf-8", errors="replace") as f:
            return f.read()[:1000]
    except OSError:
        return None


# -- the monitor --------------------------------------------------------------------------------------
class Monitor:
    """Snapshots before (now) and after (`stop()`), samples in between; never raises.

    `nvml` replaces the pynvml module (tests with a fake binding only); `own_pid` is the process whose
    tree is the cell's own (default: this process, which starts the cell)."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, nvml: ModuleType | Any | None = None,
                 own_pid: int | None = None) -> None:
        self.interval_s = interval_s
        self.own_pid = os.getpid() if own_pid is None else own_pid
        self.error: str | None = None
        self.before: list[dict] = []
        self.after: list[dict] = []
        self.reasons_seen: dict[str, dict[str, int]] = {}  # uuid -> {reason: samples}
        self.processes: dict[tuple, dict] = {}  # (pid, uuid) -> process
        self.samples = 0
        self.energy: dict[str, list] = {}  # uuid -> [[unix time, total energy mJ or None, power W or None]]
        self.started = time.time()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._nv: Any = None
        self._handles: list[Any] = []
        self._uuids: list[str | None] = []
        self._bits: dict[int, str] = {}
        try:
            self._open(nvml)
        except Exception as e:  # never costs the cell
            self.error = "NVML: " + _err(e)
            return
        if self._nv is not None and self._handles:
            self.before = self._sample(snapshot=True, phase="before")
            self._thread = threading.Thread(target=self._loop, name="reprokit-gpu-state", daemon=True)
            self._thread.start()

    def _open(self, nvml: Any) -> None:
        if nvml is None:
            try:
                import pynvml as nvml  # type: ignore[no-redef]
            except ImportError as e:
                self.error = "NVML bindings not importable (pip install nvidia-ml-py): " + _err(e)
                return
        try:
            nvml.nvmlInit()
        except Exception as e:
            self.error = "NVML failed to initialise: " + _err(e)
            return
        self._nv = nvml
        self._bits = reason_bits(nvml)
        for i in range(int(nvml.nvmlDeviceGetCount())):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            self._handles.append(h)
            try:
                self._uuids.append(_text(nvml.nvmlDeviceGetUUID(h)))
            except Exception:
                self._uuids.append(None)
        if not self._handles:
            self.error = "NVML sees no GPU"

    def _sample(self, snapshot: bool, phase: str = "during") -> list[dict]:
        """One sample of every GPU: reasons and processes recorded; full snapshots when asked.
        `phase` (before, during, after) is recorded with each process: one seen while the cell's
        process did not exist (before or after it) cannot be the cell's."""
        nv = self._nv
        snaps = []
        own = None
        for h, uuid in zip(self._handles, self._uuids):
            if snapshot:
                snap = device_snapshot(nv, h, self._bits)
                names = snap["throttle_reasons"]
                snaps.append(snap)
            else:
                fn = _reasons_function(nv)
                try:
                    names = decode_reasons(fn(h), self._bits) if fn else None
                except Exception:
                    names = None
            procs, _ = compute_processes(nv, h, uuid)
            reading = energy_reading(nv, h)
            with self._lock:
                self.energy.setdefault(str(uuid), []).append(reading)
                seen = self.reasons_seen.setdefault(str(uuid), {})
                for n in names or []:
                    seen[n] = seen.get(n, 0) + 1
                for p in procs:
                    key = (p["pid"], uuid)
                    known = self.processes.get(key)
                    if known is not None:
                        if phase not in known["phases"]:
                            known["phases"].append(phase)
                        new, old = p["used_memory_mib"], known["used_memory_mib"]
                        if new is not None and (old is None or new > old):
                            known["used_memory_mib"] = new
                        continue
                    if own is None:
                        own = process_tree(self.own_pid)
                    p["own"] = p["pid"] in own
                    p["cgroup"] = None if p["own"] else _cgroup(p["pid"])
                    p["visible"] = os.path.exists(os.path.join("/proc", str(p["pid"])))
                    p["phases"] = [phase]
                    self.processes[key] = p
        with self._lock:
            self.samples += 1
        return snaps

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._sample(snapshot=False)
            except Exception as e:  # a driver gone mid-cell: keep what was seen
                self.error = self.error or "sampling stopped: " + _err(e)
                return

    def stop(self) -> dict:
        """The raw state (for `for_cell`): after-snapshots taken, the sampler stopped, NVML shut down."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._nv is not None and self._handles:
            try:
                self.after = self._sample(snapshot=True, phase="after")
            except Exception as e:
                self.error = self.error or "after-snapshot failed: " + _err(e)
        if self._nv is not None:
            try:
                self._nv.nvmlShutdown()
            except Exception:
                pass
            self._nv = None
        return {"before": self.before, "after": self.after, "reasons_seen": self.reasons_seen,
                "energy": self.energy,
                "processes": list(self.processes.values()), "samples": self.samples,
                "interval_s": self.interval_s, "wall_s": round(time.time() - self.started, 3),
                "error": self.error}


# -- what a cell result records -----------------------------------------------------------------------
def cell_uuids(gpus: list[dict] | None) -> set[str]:
    """The UUIDs of the (parent) GPUs a cell had, from its `gpus` list; empty when none is known."""
    out = set()
    for g in gpus or []:
        mig = g.get("mig") or {}
        uuid = mig.get("parent_uuid") or g.get("uuid")
        if uuid and str(uuid).startswith("GPU-"):
            out.add(str(uuid))
    return out


def for_cell(raw: dict, gpus: list[dict] | None = None, container_id: str | None = None,
             policy: dict[str, dict] | None = None) -> dict:
    """The cell result's `gpu_state` from a monitor's raw state: restricted to the cell's GPUs (all
    GPUs NVML saw when the cell names none), `throttled` = the reasons that count as throttling seen
    in any sample, `shared` = compute processes that are neither in the driver's process tree nor, for
    a Docker cell, in the cell's container (its cgroup names the container id). A process seen only
    while the cell ran whose PID this machine's /proc does not show (the driver in a container of its
    own: NVML gives PIDs of another namespace) cannot be told apart from the cell's own: it goes to
    `unattributed`, not `shared`."""
    policy = reason_policy() if policy is None else policy
    keep = cell_uuids(gpus)

    def mine(uuid: Any) -> bool:
        return not keep or uuid in keep

    before = [s for s in raw.get("before") or [] if mine(s.get("uuid"))]
    after = [s for s in raw.get("after") or [] if mine(s.get("uuid"))]
    seen: dict[str, int] = {}
    for uuid, counts in (raw.get("reasons_seen") or {}).items():
        if mine(uuid):
            for name, n in counts.items():
                seen[name] = seen.get(name, 0) + int(n)
    shared, unattributed = [], []
    for p in raw.get("processes") or []:
        if not mine(p.get("gpu_uuid")) or p.get("own"):
            continue
        if container_id and container_id in (p.get("cgroup") or ""):
            continue  # the cell's own container
        entry = {"pid": p["pid"], "used_memory_mib": p.get("used_memory_mib"), "gpu_uuid": p.get("gpu_uuid")}
        outside = {"before", "after"} & set(p.get("phases") or ["before"])
        (shared if p.get("visible", True) or outside else unattributed).append(entry)
    shared.sort(key=lambda p: (str(p["gpu_uuid"]), p["pid"]))
    unattributed.sort(key=lambda p: (str(p["gpu_uuid"]), p["pid"]))
    unknown = sorted(n for n in seen if n not in policy)
    energy = {u: s for u, s in (raw.get("energy") or {}).items() if mine(u)}
    return {"before": before, "after": after, "energy_samples": energy,
            "throttled": sorted(n for n in seen if counts_as_throttle(n, policy)),
            "shared": shared, "unattributed": unattributed, "error": raw.get("error"),
            "reasons_seen": dict(sorted(seen.items())), "unknown_reasons": unknown,
            "samples": raw.get("samples"), "interval_s": raw.get("interval_s"),
            "gpus_from": "the cell's gpus" if keep else "every GPU NVML saw (the cell recorded no GPU UUID)"}


def attach(result: dict, runner_info: dict) -> dict:
    """Set `result["gpu_state"]` from the monitor's raw state in `runner_info["gpu_state"]` when the
    cell ran on a GPU (its `device`, or `ran_on.device`); a CPU cell gets none. Returns the runner
    info without the raw state (what the result's `runner` keeps)."""
    info = {k: v for k, v in runner_info.items() if k != "gpu_state"}
    raw = runner_info.get("gpu_state")
    ran = (result.get("ran_on") or {}).get("device")
    on_gpu = ran == "gpu" or (ran in (None, "unknown") and result.get("device") == "gpu")
    if isinstance(raw, dict) and on_gpu and result.get("status") != "skipped":  # a process ran
        try:
            result["gpu_state"] = for_cell(raw, result.get("gpus"), runner_info.get("container_id"))
        except Exception as e:  # never costs the cell's result
            result["gpu_state"] = {"before": [], "after": [], "throttled": [], "shared": [],
                                   "error": "gpu_state could not be summarised: " + _err(e)}
        from reprokit.probes import energy

        try:  # joules per step over each timed window; never costs the cell's result
            got = energy.of_cell(result, energy.rule())
        except Exception as e:
            got = None
            state = result["gpu_state"]
            state["error"] = state.get("error") or "energy could not be summarised: " + _err(e)
        if got is not None:
            result["energy"] = got
    return info


def _merged_energy(states: list[dict]) -> dict[str, list]:
    uuids = sorted({u for s in states for u in s.get("energy_samples") or {}})
    return {u: sorted(x for s in states for x in (s.get("energy_samples") or {}).get(u, [])) for u in uuids}


def merge(states: list[dict | None]) -> dict | None:
    """One `gpu_state` for a cell run in several processes (run --repeat K): the first process's
    before, the last one's after, every reason and other process any of them saw."""
    states = [s for s in states if isinstance(s, dict)]
    if not states:
        return None
    seen: dict[str, int] = {}
    shared: dict[tuple, dict] = {}
    unattributed: dict[tuple, dict] = {}
    for s in states:
        for p in s.get("unattributed") or []:
            unattributed.setdefault((p.get("gpu_uuid"), p.get("pid")), p)
        for name, n in (s.get("reasons_seen") or {}).items():
            seen[name] = seen.get(name, 0) + int(n)
        for p in s.get("shared") or []:
            shared.setdefault((p.get("gpu_uuid"), p.get("pid")), p)
    return {"before": states[0].get("before") or [], "after": states[-1].get("after") or [],
            "throttled": sorted({n for s in states for n in s.get("throttled") or []}),
            "shared": [shared[k] for k in sorted(shared, key=lambda k: (str(k[0]), k[1]))],
            "unattributed": [unattributed[k] for k in sorted(unattributed, key=lambda k: (str(k[0]), k[1]))],
            "error": next((s["error"] for s in states if s.get("error")), None),
            "reasons_seen": dict(sorted(seen.items())),
            "unknown_reasons": sorted({n for s in states for n in s.get("unknown_reasons") or []}),
            "samples": sum(int(s.get("samples") or 0) for s in states),
            "energy_samples": _merged_energy(states),
            "interval_s": states[0].get("interval_s"), "gpus_from": states[0].get("gpus_from"),
            "processes": len(states)}
