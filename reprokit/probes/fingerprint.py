"""Host fingerprint: what the machine that runs the stacks says about itself.

`host_fingerprint()` returns a JSON-serialisable dict (OS, kernel, CPU, memory, Python, NVIDIA GPUs via
NVML, allow-listed environment variables). Every probe is guarded: a missing file or a failing NVML call
becomes a null value with a reason, never an exception.

The NVML path (`nvml_gpus`) ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run:
fingerprint.json and every run.json's host_fingerprint, driver 580.159.04, MIG off; the `gpu`-marked
test passed there, pytest-probes.log). It has never run on another GPU model, on several GPUs or on a
MIG GPU; the development and CI machines have no NVIDIA driver, where the tests run it with NVML
absent and with a fake binding.

The environment allow-list and the fingerprint version are bench/stack_fingerprint.py's (loaded through
`files.bench_module`: bench/ cannot import this package, so the host reads bench's one copy).
"""
from __future__ import annotations

import datetime
import glob
import hashlib
import os
import platform
import re
import socket
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from reprokit import files

# -- the version and the environment allow-list: one copy, bench/stack_fingerprint.py's -----------------
# (bench/ runs inside the stacks and cannot import this package; the host loads bench's module instead)
_STACK = files.bench_module("stack_fingerprint")
FINGERPRINT_VERSION: int = _STACK.FINGERPRINT_VERSION
# Exact names that change how a framework, BLAS or the CUDA stack behaves; prefixes whose variables are
# framework configuration (TF_ as a whole is NOT allowed: Terraform's TF_VAR_*, TF_TOKEN_* use it).
ENV_ALLOW_EXACT: tuple[str, ...] = _STACK.ENV_ALLOW_EXACT
ENV_ALLOW_PREFIXES: tuple[str, ...] = _STACK.ENV_ALLOW_PREFIXES
# Second fence, checked after the allow-list: a name containing any of these is never recorded.
ENV_DENY_SUBSTRINGS: tuple[str, ...] = _STACK.ENV_DENY_SUBSTRINGS
ENV_DENY_PREFIXES: tuple[str, ...] = _STACK.ENV_DENY_PREFIXES
# Third fence, on values: an allowed variable whose value looks like it carries a credential is redacted.
ENV_VALUE_DENY: re.Pattern = _STACK.ENV_VALUE_DENY
ENV_VALUE_MAX: int = _STACK.ENV_VALUE_MAX

CPU_ROOT = "/sys/devices/system/cpu"

# True when a name is on the allow-list and passes the deny fence.
env_name_allowed: Callable[[str], bool] = _STACK.env_name_allowed
# The allow-listed environment variables, credential-looking values redacted, long values cut.
allowed_env: Callable[[dict[str, str] | None], dict[str, str]] = _STACK.allowed_env


# -- small helpers -----------------------------------------------------------------------------------
def _err(e: BaseException) -> str:
    return ("%s: %s" % (type(e).__name__, e)).strip()[:500]


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _guard(fn: Callable[[], Any]) -> Any:
    """Run one sub-collection; a failure becomes {"error": ...}."""
    try:
        return fn()
    except Exception as e:  # a fingerprint never raises
        return {"error": _err(e)}


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# -- OS --------------------------------------------------------------------------------------------
def os_release(path: str = "/etc/os-release") -> dict[str, str]:
    out = {}
    for line in _read(path).splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip().strip('"').strip("'")
    return out


def _os_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": platform.system(),
        "release": platform.release(),
        "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()).strip() or None,
    }
    try:
        rel = os_release()
        info["distro"] = {k: rel.get(k) for k in ("ID", "VERSION_ID", "PRETTY_NAME")}
    except OSError as e:
        info["distro"] = None
        info["distro_error"] = _err(e)
    return info


def _kernel() -> dict[str, Any]:
    return {"release": platform.release(), "version": platform.version()}


def _host_id() -> str:
    """A stable, non-reversible-at-a-glance id that tells runs on the same host apart (hostname hashed).
    Many machines share a host name (every cloud VM named `vm`): `machine_identity` is what tells
    machines apart."""
    return hashlib.sha256(("reprokit-host:" + socket.gethostname()).encode()).hexdigest()[:16]


def machine_identity(fingerprint: Any) -> str:
    """What tells one machine from another in a host fingerprint: its host id with its CPU model and its
    GPUs' UUIDs (else their names), so two machines of one name but other hardware are never one
    machine. Two machines of one name and the same hardware without GPU UUIDs still share an
    identity."""
    c = fingerprint.get("cpu") or {}
    cpu = "/".join(str(c.get(k)) for k in ("vendor", "family", "model", "model_name", "logical_cores"))
    units = sorted(str(g.get("uuid") or g.get("name")) for g in fingerprint.get("gpus") or []
                   if isinstance(g, dict))
    return f"host:{fingerprint.get('host_id')}|cpu:{cpu}|gpus:{','.join(units)}"


# -- CPU -------------------------------------------------------------------------------------------
def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Model, vendor, flags, MHz per logical CPU and physical core count from /proc/cpuinfo text."""
    blocks = [b for b in text.strip().split("\n\n") if b.strip()]
    procs = []
    for block in blocks:
        entry = {}
        for line in block.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                entry[k.strip()] = v.strip()
        procs.append(entry)
    first = procs[0] if procs else {}
    cores = {(p.get("physical id"), p.get("core id")) for p in procs if "core id" in p}
    mhz = []
    for p in procs:
        try:
            mhz.append(float(p["cpu MHz"]))
        except (KeyError, ValueError):
            pass
    return {
        "model_name": first.get("model name"),
        "vendor": first.get("vendor_id"),
        "family": first.get("cpu family"),
        "model": first.get("model"),
        "stepping": first.get("stepping"),
        "microcode": first.get("microcode"),
        "flags": sorted((first.get("flags") or first.get("Features") or "").split()),
        "mhz": mhz or None,
        "physical_cores": len(cores) if cores else None,
        "physical_cores_reason": None if cores else "no 'core id' in /proc/cpuinfo",
    }


def scaling_governors(root: str = CPU_ROOT) -> dict[str, Any]:
    """Scaling governor per CPU, or null with the reason."""
    paths = sorted(glob.glob(os.path.join(root, "cpu[0-9]*", "cpufreq", "scaling_governor")),
                   key=lambda p: int(re.search(r"cpu(\d+)", p).group(1)))  # type: ignore[union-attr]
    if not paths:
        return {"per_cpu": None,
                "reason": "no cpufreq interface: %s/cpu*/cpufreq/scaling_governor absent "
                          "(virtual machine, container without /sys, or no cpufreq driver)" % root}
    per_cpu = {}
    for p in paths:
        name = os.path.basename(os.path.dirname(os.path.dirname(p)))
        try:
            per_cpu[name] = _read(p).strip()
        except OSError as e:
            per_cpu[name] = None
            per_cpu[name + "_error"] = _err(e)
    return {"per_cpu": per_cpu, "reason": None}


def _turbo(root: str = CPU_ROOT) -> dict[str, Any]:
    for path, meaning in ((os.path.join(root, "intel_pstate", "no_turbo"), "no_turbo"),
                          (os.path.join(root, "cpufreq", "boost"), "boost")):
        if os.path.exists(path):
            value = _read(path).strip()
            enabled = (value == "0") if meaning == "no_turbo" else (value == "1")
            return {"enabled": enabled, "source": path, "reason": None}
    return {"enabled": None, "source": None,
            "reason": "neither intel_pstate/no_turbo nor cpufreq/boost exists under %s" % root}


def _cgroup_cpu_quota() -> Any:
    try:
        quota, period = _read("/sys/fs/cgroup/cpu.max").split()
    except (OSError, ValueError) as e:
        return {"cpus": None, "reason": "no cgroup v2 cpu.max: " + _err(e)}
    if quota == "max":
        return {"cpus": None, "reason": "no CPU quota (cpu.max is 'max')"}
    return {"cpus": int(quota) / int(period), "reason": None}


def _cpu_info() -> dict[str, Any]:
    try:
        info = parse_cpuinfo(_read("/proc/cpuinfo"))
    except OSError as e:
        info = {"error": _err(e), "model_name": platform.processor() or None}
    info["logical_cores"] = os.cpu_count()
    try:
        info["usable_cores"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        info["usable_cores"] = None
    info["cgroup_quota"] = _guard(_cgroup_cpu_quota)
    info["scaling_governor"] = _guard(scaling_governors)
    info["turbo"] = _guard(_turbo)
    return info


# -- memory ----------------------------------------------------------------------------------------
def _memory() -> dict[str, Any]:
    names = {"MemTotal": "total_bytes", "MemAvailable": "available_bytes", "SwapTotal": "swap_total_bytes"}
    out: dict[str, Any] = {}
    for line in _read("/proc/meminfo").splitlines():
        key, _, rest = line.partition(":")
        if key in names:
            out[names[key]] = int(rest.split()[0]) * 1024  # /proc/meminfo counts kB
    try:
        limit = _read("/sys/fs/cgroup/memory.max").strip()
        out["cgroup_limit_bytes"] = None if limit == "max" else int(limit)
        out["cgroup_limit_reason"] = "no limit (memory.max is 'max')" if limit == "max" else None
    except (OSError, ValueError) as e:
        out["cgroup_limit_bytes"] = None
        out["cgroup_limit_reason"] = "no cgroup v2 memory.max: " + _err(e)
    return out


def _python() -> dict[str, Any]:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "compiler": platform.python_compiler(),
    }


# -- NVIDIA / NVML ---------------------------------------------------------------------------------
_NO_DRIVER_ERRORS = ("NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded")
_ARCH_NAMES = {2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere",
               8: "Ada", 9: "Hopper", 10: "Blackwell"}


def cuda_version_str(v: int | None) -> str | None:
    """NVML/CUDA integer version (12080) as 'major.minor' ('12.8')."""
    if v is None:
        return None
    return "%d.%d" % (v // 1000, (v % 1000) // 10)


def _nvml_call(errors: dict[str, str], key: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:  # NVMLError_NotSupported and friends: older drivers lack calls
        errors[key] = _err(e)
        return None


def _gpu_record(nv: ModuleType, index: int, driver: Any, cuda_driver: Any) -> dict[str, Any]:
    """Everything NVML reports about one GPU; each call guarded on its own. Ran on one NVIDIA H100
    (2026-11-26, docs/gpu-run/fingerprint.json); no other GPU model yet."""
    errors: dict[str, str] = {}
    h = _nvml_call(errors, "handle", lambda: nv.nvmlDeviceGetHandleByIndex(index))
    rec: dict[str, Any] = {"index": index, "driver_version": driver, "cuda_driver_version": cuda_driver}
    if h is None:
        rec["errors"] = errors
        return rec

    def call(key: str, fn: Callable[[], Any]) -> Any:
        return _nvml_call(errors, key, fn)

    rec["name"] = _text(call("name", lambda: nv.nvmlDeviceGetName(h)))
    rec["uuid"] = _text(call("uuid", lambda: nv.nvmlDeviceGetUUID(h)))
    pci = call("pci_bus_id", lambda: nv.nvmlDeviceGetPciInfo(h))
    rec["pci_bus_id"] = _text(getattr(pci, "busId", None)) if pci is not None else None
    mem = call("memory_total_bytes", lambda: nv.nvmlDeviceGetMemoryInfo(h))
    rec["memory_total_bytes"] = int(mem.total) if mem is not None else None
    cc = call("compute_capability", lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    rec["compute_capability"] = "%d.%d" % tuple(cc) if cc is not None else None
    arch = call("architecture", lambda: nv.nvmlDeviceGetArchitecture(h))
    rec["architecture"] = _ARCH_NAMES.get(arch, "unknown(%s)" % arch) if arch is not None else None
    clocks = {}
    for label, ctype in (("sm", nv.NVML_CLOCK_SM), ("mem", nv.NVML_CLOCK_MEM)):
        clocks[label + "_current_mhz"] = call("clock_%s_current" % label,
                                              lambda c=ctype: nv.nvmlDeviceGetClockInfo(h, c))
        clocks[label + "_max_mhz"] = call("clock_%s_max" % label,
                                          lambda c=ctype: nv.nvmlDeviceGetMaxClockInfo(h, c))
        clocks[label + "_applications_mhz"] = call(
            "clock_%s_applications" % label, lambda c=ctype: nv.nvmlDeviceGetApplicationsClock(h, c))
    rec["clocks"] = clocks
    limit = call("power_limit_w", lambda: nv.nvmlDeviceGetPowerManagementLimit(h))
    rec["power_limit_w"] = limit / 1000.0 if limit is not None else None
    enforced = call("enforced_power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
    rec["enforced_power_limit_w"] = enforced / 1000.0 if enforced is not None else None
    pm = call("persistence_mode", lambda: nv.nvmlDeviceGetPersistenceMode(h))
    rec["persistence_mode"] = bool(pm) if pm is not None else None
    ecc = call("ecc_mode", lambda: nv.nvmlDeviceGetEccMode(h))
    rec["ecc_mode"] = {"current": bool(ecc[0]), "pending": bool(ecc[1])} if ecc is not None else None
    mig = call("mig_mode", lambda: nv.nvmlDeviceGetMigMode(h))
    rec["mig_mode"] = {"current": bool(mig[0]), "pending": bool(mig[1])} if mig is not None else None
    if mig is not None and mig[0]:  # the slices (MIG devices) this GPU is cut into
        rec["mig_devices"], rec["mig_sm_total"] = mig_devices(nv, h, errors)
    pstate = call("performance_state", lambda: nv.nvmlDeviceGetPerformanceState(h))
    rec["performance_state"] = "P%d" % pstate if pstate is not None else None
    rec["compute_mode"] = call("compute_mode", lambda: nv.nvmlDeviceGetComputeMode(h))
    rec["temperature_c"] = call("temperature_c",
                                lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
    rec["vbios_version"] = _text(call("vbios_version", lambda: nv.nvmlDeviceGetVbiosVersion(h)))
    rec["errors"] = errors
    return rec


_MIG_PROFILE = re.compile(r"\bMIG\s+(\S+)\s*$")


def mig_devices(nv: ModuleType, parent: Any, errors: dict[str, str]) -> tuple[list[dict[str, Any]], Any]:
    """The MIG devices (slices) of a GPU in MIG mode, and the GPU's SM count in MIG mode.

    Each slice: its NVML index under the parent (what `nvidia-container-toolkit` calls GPU:INDEX),
    its UUID (MIG-..., what CUDA_VISIBLE_DEVICES and Docker device ids take), its name (NVML names a
    slice "<GPU name> MIG <profile>"), the profile parsed from it (e.g. 1g.10gb), GPU and compute
    instance ids, and nvmlDeviceGetAttributes (MIG handles only, NVML API reference): SM count,
    slice counts, memory. The SM total is the largest GPU-instance profile's multiprocessorCount
    (nvmlDeviceGetGpuInstanceProfileInfo): the SMs the GPU offers in MIG mode, which can be fewer
    than the whole GPU's (A100: 98 of 108 [U]). Never run on a MIG GPU: tested with a fake binding."""
    out: list[dict[str, Any]] = []
    count = _nvml_call(errors, "mig_device_count", lambda: nv.nvmlDeviceGetMaxMigDeviceCount(parent))
    for i in range(int(count or 0)):
        key = "mig_device_%d" % i
        mh = _nvml_call(errors, key, lambda i=i: nv.nvmlDeviceGetMigDeviceHandleByIndex(parent, i))
        if mh is None:  # NVML_ERROR_NOT_FOUND: no slice at this index
            errors.pop(key, None)
            continue
        name = _text(_nvml_call(errors, key + "_name", lambda mh=mh: nv.nvmlDeviceGetName(mh)))
        m = _MIG_PROFILE.search(name or "")
        attrs = _nvml_call(errors, key + "_attributes", lambda mh=mh: nv.nvmlDeviceGetAttributes(mh))
        out.append({
            "index": i,
            "uuid": _text(_nvml_call(errors, key + "_uuid", lambda mh=mh: nv.nvmlDeviceGetUUID(mh))),
            "name": name,
            "profile": m.group(1) if m else None,
            "gpu_instance_id": _nvml_call(errors, key + "_gi",
                                          lambda mh=mh: nv.nvmlDeviceGetGpuInstanceId(mh)),
            "compute_instance_id": _nvml_call(errors, key + "_ci",
                                              lambda mh=mh: nv.nvmlDeviceGetComputeInstanceId(mh)),
            "sm_count": getattr(attrs, "multiprocessorCount", None),
            "gpu_instance_slices": getattr(attrs, "gpuInstanceSliceCount", None),
            "compute_instance_slices": getattr(attrs, "computeInstanceSliceCount", None),
            "memory_mib": getattr(attrs, "memorySizeMB", None),
        })
    total = None
    for profile in range(int(getattr(nv, "NVML_GPU_INSTANCE_PROFILE_COUNT", 0))):
        try:
            info = nv.nvmlDeviceGetGpuInstanceProfileInfo(parent, profile)
        except Exception:  # NVML_ERROR_NOT_SUPPORTED: a profile this GPU does not have
            continue
        sms = getattr(info, "multiprocessorCount", None)
        if isinstance(sms, int) and (total is None or sms > total):
            total = sms
    if total is None:
        errors["mig_sm_total"] = "no GPU-instance profile answered nvmlDeviceGetGpuInstanceProfileInfo"
    return out, total


def nvml_gpus(nvml: ModuleType | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(gpus, nvidia summary) from NVML. `nvml` replaces the pynvml module (tests only).

    Without a driver: ([], {"available": False, "reason": "no NVIDIA driver: <NVML error>"}).
    """
    if nvml is None:
        try:
            import pynvml as nvml  # type: ignore[no-redef]
        except ImportError as e:
            return [], {"available": False,
                        "reason": "NVML bindings not importable (pip install nvidia-ml-py): " + _err(e)}
    nv = nvml
    try:
        nv.nvmlInit()
    except Exception as e:
        prefix = "no NVIDIA driver" if type(e).__name__ in _NO_DRIVER_ERRORS else "NVML failed to initialise"
        return [], {"available": False, "reason": "%s: %s" % (prefix, _err(e))}
    errors: dict[str, str] = {}
    try:
        driver = _text(_nvml_call(errors, "driver_version", nv.nvmlSystemGetDriverVersion))
        cuda_int = _nvml_call(errors, "cuda_driver_version", nv.nvmlSystemGetCudaDriverVersion)
        cuda_driver = cuda_version_str(cuda_int)
        nvml_version = _text(_nvml_call(errors, "nvml_version", nv.nvmlSystemGetNVMLVersion))
        count = _nvml_call(errors, "device_count", nv.nvmlDeviceGetCount) or 0
        gpus = [_gpu_record(nv, i, driver, cuda_driver) for i in range(count)]
    finally:
        try:
            nv.nvmlShutdown()
        except Exception as e:
            errors["shutdown"] = _err(e)
    summary = {"available": True, "driver_version": driver, "cuda_driver_version": cuda_driver,
               "cuda_driver_version_int": cuda_int, "nvml_version": nvml_version,
               "device_count": count, "errors": errors, "driver_libraries": driver_libraries()}
    return gpus, summary


DRIVER_SONAMES = ("libcuda.so.1", "libnvidia-ml.so.1")  # what the container toolkit injects, at least


def driver_libraries(sonames: tuple[str, ...] = DRIVER_SONAMES,
                     maps_path: str = "/proc/self/maps") -> dict[str, Any]:
    """The driver's user-space libraries on this host as the loader finds them, each with the newest
    GLIBC_ version it requires (bench/driver_load.py reads their .gnu.version_r), and the newest of
    them, `glibc_needed`: what an image's glibc must reach for the container toolkit's injected copies
    to load (preflight's glibc check). Never raises."""
    import ctypes

    load = files.bench_module("driver_load")
    out: dict[str, Any] = {"libraries": {}, "glibc_needed": None}
    for soname in sonames:
        try:
            ctypes.CDLL(soname)
            stem = os.path.basename(soname).split(".so")[0] + ".so"
            with open(maps_path) as f:
                paths = sorted({line.split(None, 5)[5].strip() for line in f
                                if len(line.split(None, 5)) == 6
                                and os.path.basename(line.split(None, 5)[5].strip()).startswith(stem)})
            if not paths:
                out["libraries"][soname] = {"error": "loaded but not in " + maps_path}
                continue
            real = os.path.realpath(paths[0])
            needs = load.glibc_needs(real)
            out["libraries"][soname] = {"path": real, "glibc_needed": needs[-1] if needs else None}
        except Exception as e:  # OSError (not installed), ValueError (not ELF): said, never raised
            out["libraries"][soname] = {"error": _err(e)}
    needed = [x["glibc_needed"] for x in out["libraries"].values() if x.get("glibc_needed")]
    out["glibc_needed"] = max(needed, key=load.version_tuple) if needed else None
    return out


# -- the whole host --------------------------------------------------------------------------------
def host_fingerprint() -> dict[str, Any]:
    """The host fingerprint (JSON-serialisable). Never raises."""
    gpus, nvidia = _nvml_guarded()
    return {
        "fingerprint_version": FINGERPRINT_VERSION,
        "kind": "host_fingerprint",
        "collected": datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        .isoformat().replace("+00:00", "Z"),
        "host_id": _guard(_host_id),
        "os": _guard(_os_info),
        "kernel": _guard(_kernel),
        "cpu": _guard(_cpu_info),
        "memory": _guard(_memory),
        "python": _guard(_python),
        "nvidia": nvidia,
        "gpus": gpus,
        "env": _guard(allowed_env),
        "load_avg": _guard(lambda: list(os.getloadavg())),
    }


def _nvml_guarded() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    try:
        return nvml_gpus()
    except Exception as e:
        return [], {"available": False, "reason": "NVML probe failed: " + _err(e)}


def main(argv: list[str]) -> int:
    """`python -m reprokit.probes.fingerprint [OUT]`: this host's fingerprint as JSON, to OUT (written
    whole, then renamed) or stdout. The Slurm runner's probe job runs it on a node."""
    import json

    text = json.dumps(host_fingerprint(), indent=1)
    if not argv:
        print(text)
        return 0
    tmp = argv[0] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, argv[0])
    return 0


if __name__ == "__main__":  # pragma: no cover - run by the Slurm probe job (runners/slurm.py)
    sys.exit(main(sys.argv[1:]))


def require_gpu(what: str, fix: str) -> None:
    """This host has at least one GPU NVML can see (nvml_gpus, the same source as the host
    fingerprint's `gpus` and `nvidia.available`), or a one-line UserError. Whether the environments
    that would run can use it is checked once the runner is known (reprokit/runners/select.py
    local_device: the local runner; the Slurm local launcher in run/driver.py)."""
    from reprokit.errors import UserError

    gpus, summary = nvml_gpus()
    if not gpus:
        why = summary.get("reason") or "NVML sees 0 GPUs"
        raise UserError(f"{what}: this host has no GPU ({why}); {fix}")
