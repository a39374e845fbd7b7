"""One description of a cell's container, rendered for every way the kit starts one.

`ContainerSpec` is what a cell's container is: image, interpreter and command, working directory,
environment, mounts, user, isolation (no network, read-only root with a tmpfs /tmp, all
capabilities dropped, no-new-privileges, an init process), limits (memory, processes), labels and
the GPUs it is given. `cell_spec` builds it for one cell (or, without a cell, for a whole stack's
job: the compose files); the renderers turn that one object into:

- `docker_create_kwargs`: the Docker SDK's containers.create arguments (the Docker runner);
- `compose_service`: a docker-compose service (reprokit/containers/compose.py);
- `docker_argv`: `docker run` (the Slurm job's Docker launcher, on nodes with an engine);
- `apptainer_argv`: `apptainer exec --containall --cleanenv --net --network none` with read-only
  binds (`--nv` for GPU cells), on a SIF built from the kit's image archive;
- `pyxis_argv`: `srun --container-image=<squashfs> --container-mounts=...:ro ...` (NVIDIA's
  pyxis/enroot SPANK plugin), on a squashfs imported from the same image.

What a container of a stack gets, whichever tool starts it:
  - environment(): the harness's variables, the stack's CPU or GPU variables (reprokit/data/
    stacks.yaml `local.env_vars` / `gpu.env_vars`, e.g. Theano's device and float flags), and
    NVIDIA_VISIBLE_DEVICES naming exactly the GPUs of the device request ("void" without one);
  - mounts(): bench/ and the run directory read-only, the run's cells/ read-write, the data
    directory read-only, and, for GPU cells, the CUDA JIT cache volume read-write;
  - gpu_ids(): the GPUs one cell asks for, from `run --gpus` and the cell's own GPU count (under
    Slurm: the GPUs Slurm gave the job, SLURM_JOB_GPUS, filled in on the node);
  - the interpreter: the image's own, by absolute path (reprokit/containers/recipes.py
    `interpreter`), so no launcher depends on the PATH it happens to pass in.

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

Never run: every GPU setting (device requests, `--gpus "device=..."`, NVIDIA_VISIBLE_DEVICES,
`--nv`, the libcuda.so link, the JIT on a GPU): no GPU with Docker, Apptainer or pyxis has been
available (the one GPU session, docs/gpu-run, had no container engine).
Apptainer and pyxis are not installed on any machine of the project either: their command lines are built and
checked by tests (tests/runners/test_slurm_launchers.py). The cache volume itself is tested on a real
engine with the CPU smoke image (tests/runners/test_docker_runner.py), and the `docker run` GPU flag is
checked against the real docker CLI (`docker create`, which records the request without a GPU).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from reprokit import kitdata

BENCH_IN_CONTAINER = "/opt/reprokit/bench"
RESULTS_IN_CONTAINER = "/results"
CELLS_IN_CONTAINER = f"{RESULTS_IN_CONTAINER}/cells"
DATA_IN_CONTAINER = "/data"
LIBCUDA_DIR = "/tmp/reprokit-lib"  # on the /tmp tmpfs: the only writable place besides /results/cells
NO_GPUS = "void"  # NVIDIA_VISIBLE_DEVICES without a device request: plain runc, no driver mounted
NOBODY = "65534:65534"
MEM_LIMIT = "16g"  # REPROKIT_DOCKER_MEMORY overrides; source 001's word LM peaks at ~10 GB (OOM-killed at 8g)
PIDS_LIMIT = 4096  # default; REPROKIT_DOCKER_PIDS overrides (threads count as pids)
TMPFS = {"/tmp": "rw,exec,nosuid,nodev,size=2g"}  # exec: Theano loads the modules it compiles
HARNESS_ENV = {"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
               "TF_CPP_MIN_LOG_LEVEL": "2"}


def limits(mem_limit: str | None = None, pids_limit: int | None = None) -> tuple[str, int]:
    """(memory limit, process limit) of a cell's container: the arguments, else
    REPROKIT_DOCKER_MEMORY / REPROKIT_DOCKER_PIDS, else MEM_LIMIT / PIDS_LIMIT."""
    return (mem_limit or os.environ.get("REPROKIT_DOCKER_MEMORY", MEM_LIMIT),
            int(pids_limit or os.environ.get("REPROKIT_DOCKER_PIDS", PIDS_LIMIT)))


# -- GPUs and the JIT cache ------------------------------------------------------------------------
@kitdata.memoized
def jit_cache_env() -> dict[str, str]:
    """CUDA_CACHE_PATH and CUDA_CACHE_MAXSIZE (compat.yaml `jit.cache_env`; the GPU images set the
    same path and create it owned by their unprivileged user)."""

    return dict(kitdata.load("compat")["jit"]["cache_env"])


def jit_cache_path() -> str:
    return jit_cache_env()["CUDA_CACHE_PATH"]


def jit_cache_root() -> Path:
    """The host directory under which the local stacks and the image-file launchers (Apptainer,
    pyxis) keep their CUDA JIT caches: $REPROKIT_CUDA_CACHE_DIR, default ~/.cache/reprokit/cuda-jit
    (on a cluster it must be on a file system the nodes share, like the kit and the results)."""
    return Path(os.environ.get("REPROKIT_CUDA_CACHE_DIR")
                or Path.home() / ".cache" / "reprokit" / "cuda-jit")


def jit_cache_dir(image_file: str) -> Path:
    """The JIT cache directory of an image file (a SIF or a squashfs): one per file name, size and
    modification time (another build of the image gets its own), created private (0700). Mounted
    read-write at CUDA_CACHE_PATH, it does for Apptainer and pyxis what the cache volume does for
    Docker: only a stack's first start on a GPU pays the PTX JIT."""
    st = os.stat(image_file)
    key = hashlib.sha256(f"{os.path.abspath(image_file)}|{st.st_size}|{st.st_mtime_ns}".encode())
    path = jit_cache_root() / f"image-{_slug(Path(image_file).name)}-{key.hexdigest()[:12]}"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


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


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-.").lower() or "x"


def host_gpu_key(gpus: list[dict], nvidia: dict) -> str:
    """What a JIT cache is specific to on this host: the GPUs' compute capabilities and the
    driver version (NVML records of reprokit.probes.fingerprint.nvml_gpus); "nogpu" without a driver."""
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


def ensure_jit_volume(client, image_id: str, image_dir: str, flavour: str, host_key: str,
                      user: str) -> dict:
    """The image's CUDA JIT cache volume on the engine: created (labelled) when missing, then
    handed to `user` by a one-shot container, root with CAP_CHOWN and CAP_DAC_READ_SEARCH only, no
    network and a read-only root filesystem, running `chown -R` on the volume (a new volume's root
    is root's, or the image directory's owner's, and another user may have filled it before: the
    driver makes its cache directories 0700, which root without CAP_DAC_READ_SEARCH cannot enter).
    Returns what the cell's runner info records (`jit_cache`)."""
    import docker

    name = jit_volume_name(image_dir, flavour, image_id, host_key)
    path = jit_cache_path()
    created = False
    try:
        client.volumes.get(name)
    except docker.errors.NotFound:
        client.volumes.create(name=name, driver="local", labels={
            "reprokit.jit": "cuda", "reprokit.jit.image": image_dir, "reprokit.jit.flavour": flavour,
            "reprokit.jit.image_id": image_id, "reprokit.jit.host": host_key})
        created = True
    out = {"volume": name, "target": path, "created": created, "owner": user,
           "maxsize": jit_cache_env()["CUDA_CACHE_MAXSIZE"]}
    if user == "0:0":
        return out
    try:
        client.containers.run(
            image_id, ["chown", "-R", user, path], user="0:0", network_mode="none",
            cap_drop=["ALL"], cap_add=["CHOWN", "DAC_READ_SEARCH"], security_opt=["no-new-privileges"],
            read_only=True, remove=True, mounts=[docker_mount(Mount(path, name, type="volume",
                                                                    read_only=False))])
    except docker.errors.ContainerError as e:  # the cell then records the cache unwritable
        out["owner"] = None
        out["owner_error"] = f"chown -R {user} {path} failed: {str(e)[:300]}"
    return out


def jit_volume_default(image_dir: str, flavour: str) -> str:
    """The compose files' volume name when compose.env does not name one (no engine answered when
    the run directory was prepared)."""
    return f"reprokit-jit-{_slug(image_dir)}-{flavour}"


# -- environment and mounts ------------------------------------------------------------------------
def environment(stack_spec: dict, flavour: str, gpus: list[str] | None = None,
                image_id: str = "") -> dict[str, str]:
    """The container's environment (the image's own ENV stays unless named here). On the GPU
    flavour NVIDIA_VISIBLE_DEVICES is set only with `gpus`, the cell's GPU ids: a launcher that
    does not know them yet (prepare) leaves it to cell_spec, with each cell's device request."""
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
class Mount:
    """A mount as every renderer needs it: type "bind" (source: a host path) or "volume" (a name)."""

    target: str
    source: str
    type: str = "bind"
    read_only: bool = True


def mounts(bench: str, run_dir: str, cells_dir: str, data_root: str | None = None,
           jit_volume: str | None = None, jit_dir: str | None = None) -> list[Mount]:
    """Everything read-only but the cells directory and the JIT cache (a Docker volume, or a host
    directory for the launchers that have no volumes)."""
    out = [Mount(BENCH_IN_CONTAINER, bench),
           Mount(RESULTS_IN_CONTAINER, run_dir),
           Mount(CELLS_IN_CONTAINER, cells_dir, read_only=False)]
    if data_root:
        out.append(Mount(DATA_IN_CONTAINER, data_root))
    if jit_volume:
        out.append(Mount(jit_cache_path(), jit_volume, type="volume", read_only=False))
    elif jit_dir:
        out.append(Mount(jit_cache_path(), jit_dir, read_only=False))
    return out


# -- the container's copy of a job -----------------------------------------------------------------
def container_data_dir(host_dir: str, root: str) -> str:
    """A cell's host data_dir (under root) as the container sees it (root mounted at /data)."""
    rel = Path(host_dir).relative_to(Path(root))  # both as `run --data` resolved them
    return DATA_IN_CONTAINER if rel == Path(".") else f"{DATA_IN_CONTAINER}/{rel.as_posix()}"


def container_job(job_path: Path) -> tuple[Path, str | None]:
    """Write the container's copy of a job beside it (jobs/<stack>.docker.json: out_dir
    /results/cells, the data directory and every cell's data_dir as mounted at /data); return its
    path and the host data directory the job's cells read (`run --data DIR`, the /data mount) or
    None. The job is read as any stored job: brought to its format's current version."""
    from reprokit import files

    job = files.read_json(Path(job_path), "job")
    job["out_dir"] = CELLS_IN_CONTAINER
    root = job.get("data_root")
    if root:
        job["data_root"] = DATA_IN_CONTAINER
        for c in job["cells"]:
            d = c.get("params", {}).get("data_dir")
            if d:
                c["params"]["data_dir"] = container_data_dir(d, root)
    out = Path(job_path).with_name(Path(job_path).stem + ".docker.json")
    files.write_json_atomic(out, job, "job")
    out.chmod(0o644)  # readable by the container's unprivileged user
    return out, root


# -- the spec --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContainerSpec:
    image: str  # a Docker image id or tag (the SIF / squashfs is made from it)
    command: list[str]  # the image's interpreter first
    env: dict[str, str]
    mounts: list[Mount]
    user: str  # numeric uid:gid (or, in a compose file, a ${VARIABLE:-default})
    workdir: str = BENCH_IN_CONTAINER
    name: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    gpu_ids: list[str] = field(default_factory=list)  # exactly these GPUs; never run on a GPU
    mem_limit: str = MEM_LIMIT
    pids_limit: int = PIDS_LIMIT
    network: str = "none"
    read_only_rootfs: bool = True
    tmpfs: dict[str, str] = field(default_factory=lambda: dict(TMPFS))
    cap_drop: tuple[str, ...] = ("ALL",)
    security_opt: tuple[str, ...] = ("no-new-privileges",)
    init: bool = True

    def security(self) -> dict:
        """The isolation settings, as a cell's runner info records them."""
        return {"network_mode": self.network, "privileged": False, "cap_drop": list(self.cap_drop),
                "security_opt": list(self.security_opt), "read_only_rootfs": self.read_only_rootfs,
                "tmpfs": dict(self.tmpfs), "user": self.user, "mem_limit": self.mem_limit,
                "memswap_limit": self.mem_limit, "pids_limit": self.pids_limit}

    def with_gpus(self, ids: list[str]) -> ContainerSpec:
        """The same container given exactly these GPUs (the request and NVIDIA_VISIBLE_DEVICES)."""
        return replace(self, gpu_ids=list(ids),
                       env={**self.env, "NVIDIA_VISIBLE_DEVICES": visible_devices(list(ids))})

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict) -> ContainerSpec:
        doc = dict(doc)
        doc["mounts"] = [Mount(**m) for m in doc["mounts"]]
        doc["cap_drop"], doc["security_opt"] = tuple(doc["cap_drop"]), tuple(doc["security_opt"])
        return cls(**doc)


def harness_command(python: str, job_name: str, cell_id: str | None = None,
                    process: int | None = None) -> list[str]:
    """The harness on the container's copy of a job (jobs/<stack>.docker.json): one cell of it
    (`--cell`, and `--process N` for run --repeat K), or the whole job."""
    cmd = [python, f"{BENCH_IN_CONTAINER}/harness.py", f"{RESULTS_IN_CONTAINER}/jobs/{job_name}"]
    if cell_id is not None:
        cmd += ["--cell", cell_id]
    if process is not None:
        cmd += ["--process", str(process)]
    return cmd


def cell_spec(*, image: str, python: str, stack: str, env: dict[str, str], user: str,
              bench_dir: str, run_dir: str, cells_dir: str, job_name: str,
              cell_id: str | None = None, process: int | None = None,
              data_root: str | None = None, gpu_ids: list[str] | None = None,
              jit_volume: str | None = None, jit_dir: str | None = None,
              mem_limit: str | None = None, pids_limit: int | None = None,
              labels: dict[str, str] | None = None, name: str | None = None) -> ContainerSpec:
    """A cell's container (without `cell_id`: a stack's whole job, as compose runs it): bench/
    read-only at /opt/reprokit/bench, the run directory read-only at /results and only its cells/
    writable, the data directory (run --data) read-only at /data, the JIT cache (a volume, or the
    host directory `jit_dir`) read-write at CUDA_CACHE_PATH when one is named, exactly the GPUs
    `gpu_ids`, the container's copy of the job (out_dir /results/cells) as the harness's input.
    `env` is environment()'s (with whatever the launcher adds); NVIDIA_VISIBLE_DEVICES and, with a
    cache, its path are set here so they cannot disagree with the request and the mount."""
    ids = list(gpu_ids or [])
    full_env = {**HARNESS_ENV, **env, "NVIDIA_VISIBLE_DEVICES": visible_devices(ids),
                **(jit_cache_env() if jit_volume or jit_dir else {})}
    tags = {"reprokit.stack": stack}
    if cell_id is not None:
        tags["reprokit.cell"] = cell_id
    if process is not None:
        tags["reprokit.process"] = str(process)
    mem, pids = limits(mem_limit, pids_limit)
    return ContainerSpec(
        image=image, command=harness_command(python, job_name, cell_id, process), env=full_env,
        mounts=mounts(bench_dir, run_dir, cells_dir, data_root, jit_volume, jit_dir), user=user,
        name=name, labels={**tags, **(labels or {})}, gpu_ids=ids, mem_limit=mem,
        pids_limit=pids)


# -- renderers -------------------------------------------------------------------------------------
def docker_mount(m: Mount):
    import docker

    return docker.types.Mount(m.target, m.source, type=m.type, read_only=m.read_only)


def docker_create_kwargs(spec: ContainerSpec) -> dict:
    """client.containers.create(**kwargs) for the spec (Docker SDK), detached."""
    kwargs = {"image": spec.image, "command": list(spec.command), "name": spec.name,
              "mounts": [docker_mount(m) for m in spec.mounts],
              "working_dir": spec.workdir, "environment": dict(spec.env), "user": spec.user,
              "network_mode": spec.network, "privileged": False, "cap_drop": list(spec.cap_drop),
              "security_opt": list(spec.security_opt), "read_only": spec.read_only_rootfs,
              "tmpfs": dict(spec.tmpfs), "mem_limit": spec.mem_limit,
              "memswap_limit": spec.mem_limit, "pids_limit": spec.pids_limit, "init": spec.init,
              "detach": True, "labels": dict(spec.labels)}
    if spec.gpu_ids:  # never run: no GPU with Docker has been available
        kwargs["device_requests"] = [device_request(spec.gpu_ids)]
    return kwargs


def device_request(ids: list[str]):
    """The Engine API device request for exactly these GPUs (ids or UUIDs); never a count, so
    NVIDIA_VISIBLE_DEVICES (visible_devices) and the request name the same GPUs."""
    import docker

    return docker.types.DeviceRequest(device_ids=list(ids), capabilities=[["gpu"]])


def compose_service(spec: ContainerSpec) -> dict:
    """A docker-compose service (file format 3.8) for the spec; GPUs are reserved by id."""
    svc = {
        "image": spec.image,
        "command": list(spec.command),
        "working_dir": spec.workdir,
        "user": spec.user,
        "network_mode": spec.network,
        "privileged": False,
        "read_only": spec.read_only_rootfs,
        "init": spec.init,
        "cap_drop": list(spec.cap_drop),
        "security_opt": list(spec.security_opt),
        "tmpfs": [f"{k}:{v}" for k, v in spec.tmpfs.items()],
        "mem_limit": spec.mem_limit,
        "memswap_limit": spec.mem_limit,
        "pids_limit": spec.pids_limit,
        "environment": dict(spec.env),
        "volumes": [{"type": m.type, "source": m.source, "target": m.target,
                     "read_only": m.read_only} for m in spec.mounts],
        "labels": dict(spec.labels),
    }
    if spec.gpu_ids:  # never run: no GPU with Docker has been available
        svc["deploy"] = {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "device_ids": list(spec.gpu_ids), "capabilities": ["gpu"]}]}}}
    return svc


def docker_argv(spec: ContainerSpec, docker: str = "docker") -> list[str]:
    """`docker run` with every setting of the spec (the container is removed when it ends)."""
    argv = [docker, "run", "--rm"]
    if spec.name:
        argv += ["--name", spec.name]
    argv += ["--network", spec.network, "--user", spec.user, "--workdir", spec.workdir]
    if spec.read_only_rootfs:
        argv.append("--read-only")
    for target, opts in spec.tmpfs.items():
        argv += ["--tmpfs", f"{target}:{opts}"]
    for cap in spec.cap_drop:
        argv += ["--cap-drop", cap]
    for opt in spec.security_opt:
        argv += ["--security-opt", opt]
    argv += ["--memory", spec.mem_limit, "--memory-swap", spec.mem_limit,
             "--pids-limit", str(spec.pids_limit)]
    if spec.init:
        argv.append("--init")
    for m in spec.mounts:
        argv += ["--mount", f"type={m.type},source={m.source},target={m.target}"
                 + (",readonly" if m.read_only else "")]
    for k, v in spec.env.items():
        argv += ["--env", f"{k}={v}"]
    for k, v in spec.labels.items():
        argv += ["--label", f"{k}={v}"]
    if spec.gpu_ids:  # never run: no GPU with Docker has been available. The CLI reads the
        # value as CSV: the quotes keep "device=0,2" one field (docker run --help; checked with
        # `docker create` in the tests)
        argv += ["--gpus", '"device=' + ",".join(spec.gpu_ids) + '"']
    return argv + [spec.image, *spec.command]


def apptainer_argv(spec: ContainerSpec, sif: str, apptainer: str = "apptainer") -> list[str]:
    """`apptainer exec` of the spec on `sif` (never run: no Apptainer here). The SIF's root is
    read-only by nature; --containall gives it a private /tmp, PID and IPC namespace and no host
    home; --cleanenv keeps the host's environment out (the spec's variables go in with --env);
    `--net --network none` leaves only a loopback interface. Memory and process limits are the
    Slurm job's (--mem, the cluster's cgroups): Apptainer needs root to apply its own. The JIT
    cache is a host directory bound read-write at CUDA_CACHE_PATH (jit_cache_dir; a Docker volume
    has no equivalent here), so only a stack's first start on a GPU pays the PTX JIT."""
    argv = [apptainer, "exec", "--containall", "--cleanenv", "--no-home", "--net",
            "--network", spec.network, "--pwd", spec.workdir]
    if spec.gpu_ids:  # never run: no GPU with Apptainer has been available
        argv.append("--nv")
    for m in spec.mounts:
        if m.type == "bind":
            argv += ["--bind", f"{m.source}:{m.target}:{'ro' if m.read_only else 'rw'}"]
    for k, v in spec.env.items():
        argv += ["--env", f"{k}={v}"]
    return argv + [sif, *spec.command]


def pyxis_argv(spec: ContainerSpec, squashfs: str, srun: str = "srun") -> list[str]:
    """`srun --container-image` (pyxis/enroot) of the spec on `squashfs`, as a job step inside the
    cell's Slurm job (never run: no pyxis here). Mounts with the `ro` flag, a read-only container
    root, no home directory, no root remapping; the environment is set with `env` inside the
    container because pyxis passes the job's environment through (the interpreter is named by its
    absolute path for the same reason: the job's PATH is the host's). enroot containers share the
    host's network namespace: the no-network setting cannot be expressed here (see the README)."""
    binds = [m for m in spec.mounts if m.type == "bind"]
    mounts_arg = ",".join(f"{m.source}:{m.target}" + (":ro" if m.read_only else "") for m in binds)
    argv = [srun, "--ntasks=1", f"--container-image={squashfs}", f"--container-mounts={mounts_arg}",
            f"--container-workdir={spec.workdir}", "--no-container-mount-home",
            "--no-container-remap-root"]
    if spec.read_only_rootfs:
        argv.append("--container-readonly")
    env = ["env"] + [f"{k}={v}" for k, v in spec.env.items()]
    return argv + env + list(spec.command)


def shell_line(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
