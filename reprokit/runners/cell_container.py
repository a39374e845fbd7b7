"""One description of a cell's container, rendered by the Docker runner and the compose files.

What a container of a stack gets, whichever tool starts it:
  - environment(): the harness's variables, the stack's CPU or GPU variables (reprokit/data/
    stacks.yaml `local.env_vars` / `gpu.env_vars`, e.g. Theano's device and float flags), and
    NVIDIA_VISIBLE_DEVICES naming exactly the GPUs of the device request ("void" without one);
  - mounts(): bench/ and the run directory read-only, the run's cells/ read-write, the data
    directory read-only, and, for GPU cells, the CUDA JIT cache volume read-write;
  - gpu_ids(): the GPUs one cell asks for, from `run --gpus` and the cell's own GPU count.

The CUDA JIT cache (compat.yaml `jit`): the driver keeps the machine code it JIT-compiles from
PTX under CUDA_CACHE_PATH; a legacy stack's first start on a new GPU can JIT for tens of minutes.
Each (image, host GPU architectures, driver) gets a named Docker volume of its own, mounted at
CUDA_CACHE_PATH, so the JIT is paid once per host and image; the cell records whether the cache
was empty when it started (`stack_fingerprint.cuda_cache.cold`, bench/gpu_runtime.py).

libcuda.so: libgpuarray 0.6.8 (Theano 0.9's GPU backend) dlopens the unversioned `libcuda.so`,
which the NVIDIA container toolkit does not put in the loader cache (it mounts the driver's
libcuda.so.<version> and links libcuda.so.1). For stacks with `gpu.link_libcuda_so`, the
harness links LIBCUDA_DIR/libcuda.so to the libcuda.so.1 the loader finds, at container start
(the root filesystem is read-only; /tmp is the writable tmpfs), and re-executes itself with
that directory first on LD_LIBRARY_PATH (bench/gpu_runtime.py). Made at start rather than in
the image because the toolkit decides where the driver lands (the image's multiarch or lib64
directory), and the loader knows where it put it.

GPU paths (device requests, NVIDIA_VISIBLE_DEVICES, the libcuda.so link, the JIT on a GPU) have
never run on a GPU: no machine this kit was developed on has one. The cache volume itself is
tested on a real engine with the CPU smoke image (tests/test_docker_runner.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from reprokit import datafiles

BENCH_IN_CONTAINER = "/opt/reprokit/bench"
RESULTS_IN_CONTAINER = "/results"
DATA_IN_CONTAINER = "/data"
LIBCUDA_DIR = "/tmp/reprokit-lib"  # on the /tmp tmpfs: the only writable place besides /results/cells
NO_GPUS = "void"  # NVIDIA_VISIBLE_DEVICES without a device request: plain runc, no driver mounted


@cache
def jit_cache_env() -> dict[str, str]:
    """CUDA_CACHE_PATH and CUDA_CACHE_MAXSIZE (compat.yaml `jit.cache_env`; the GPU images set the
    same path and create it owned by their unprivileged user)."""
    return dict(datafiles.read("compat.yaml", "compat")["jit"]["cache_env"])


def jit_cache_path() -> str:
    return jit_cache_env()["CUDA_CACHE_PATH"]


def cell_gpu_count(params: dict, device: str) -> int:
    """GPUs one cell needs: none on a CPU run; else its `gpus` parameter (0: the row runs on the
    CPU, as in suites keras-mxnet-2018 and cudnn-lstm-2018) or, without one, 1."""
    if device != "gpu":
        return 0
    return int(params.get("gpus", 1) or 0)


def gpu_ids(option: str | None, count: int) -> list[str]:
    """The GPUs a cell needing `count` GPUs is given, from `run --gpus` (None or "all": the host's
    GPUs from index 0; "N": GPUs 0..N-1; "0,3", "device=0,3" or UUIDs: those): the first `count`
    of them. ValueError when the option names fewer."""
    if count <= 0:
        return []
    spec = (option or "all").strip()
    if spec.startswith("device="):
        spec = spec[len("device="):]
    if spec == "all":
        return [str(i) for i in range(count)]
    if spec.isdigit():
        pool = [str(i) for i in range(int(spec))]
    else:
        pool = [s.strip() for s in spec.split(",") if s.strip()]
    if len(pool) < count:
        raise ValueError(f"the cell needs {count} GPUs but --gpus {option} gives {len(pool)}")
    return pool[:count]


def visible_devices(ids: list[str]) -> str:
    """NVIDIA_VISIBLE_DEVICES for a device request naming `ids`: the value dockerd itself appends
    for a request with DeviceIDs (moby daemon/nvidia_linux.go setNvidiaGPUs joins them with
    commas; a request of count 0 gives "void"), so the variable and the request cannot disagree."""
    return ",".join(ids) if ids else NO_GPUS


def environment(stack_spec: dict, flavour: str, gpus: list[str] | None = None,
                image_id: str = "") -> dict[str, str]:
    """The container's environment (the image's own ENV stays unless named here). On the GPU
    flavour NVIDIA_VISIBLE_DEVICES is set only with `gpus`, the cell's GPU ids: a launcher that
    does not know them yet (prepare) leaves it to the device request of each cell."""
    env = {"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
           "TF_CPP_MIN_LOG_LEVEL": "2", "REPROKIT_IMAGE_ID": image_id}
    if flavour == "cpu":
        env.update(stack_spec.get("local", {}).get("env_vars", {}))
        env["NVIDIA_VISIBLE_DEVICES"] = NO_GPUS
        return env
    gpu = stack_spec.get("gpu", {})
    env.update({"NVIDIA_DRIVER_CAPABILITIES": "compute,utility", **jit_cache_env()})
    env.update(gpu.get("env_vars", {}))
    if gpus is not None:
        env["NVIDIA_VISIBLE_DEVICES"] = visible_devices(list(gpus))
    if gpu.get("link_libcuda_so"):
        env["REPROKIT_LIBCUDA_DIR"] = LIBCUDA_DIR
    return env


@dataclass(frozen=True)
class MountSpec:
    """A mount as both renderers need it: type "bind" (source: a host path) or "volume" (a name)."""

    target: str
    source: str
    type: str = "bind"
    read_only: bool = True


def mounts(bench: str, run_dir: str, cells_dir: str, data_root: str | None = None,
           jit_volume: str | None = None) -> list[MountSpec]:
    """Everything read-only but the cells directory and the JIT cache volume."""
    out = [MountSpec(BENCH_IN_CONTAINER, bench),
           MountSpec(RESULTS_IN_CONTAINER, run_dir),
           MountSpec(f"{RESULTS_IN_CONTAINER}/cells", cells_dir, read_only=False)]
    if data_root:
        out.append(MountSpec(DATA_IN_CONTAINER, data_root))
    if jit_volume:
        out.append(MountSpec(jit_cache_path(), jit_volume, type="volume", read_only=False))
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-.").lower() or "x"


def host_gpu_key(gpus: list[dict], nvidia: dict) -> str:
    """What a JIT cache is specific to on this host: the GPUs' compute capabilities and the
    driver version (NVML records of reprokit.fingerprint.nvml_gpus); "nogpu" without a driver."""
    if not gpus:
        return "nogpu"
    ccs = sorted({str(g.get("compute_capability") or "unknown").replace(".", "") for g in gpus})
    driver = nvidia.get("driver_version") or gpus[0].get("driver_version") or "unknown"
    return _slug("sm" + "-sm".join(ccs) + f"-drv{driver}")


def jit_volume_name(image_dir: str, flavour: str, image_id: str, host_key: str) -> str:
    """reprokit-jit-<image dir>-<flavour>-<12 hex of the image ID>-<host key>: one cache per
    image build and host GPU/driver (a rebuilt image starts cold, as its binaries may differ)."""
    short = image_id.split(":", 1)[-1][:12] if image_id else "unbuilt"
    return f"reprokit-jit-{_slug(image_dir)}-{flavour}-{short}-{host_key}"


def jit_volume_default(image_dir: str, flavour: str) -> str:
    """The compose files' volume name when compose.env does not name one (no engine answered when
    the run directory was prepared)."""
    return f"reprokit-jit-{_slug(image_dir)}-{flavour}"
