"""One description of a cell's container, rendered for every way the kit starts one.

`ContainerSpec` holds what a cell's container is: image, command, working directory, environment,
mounts, user, isolation (no network, read-only root, capabilities, no-new-privileges), limits,
labels and GPUs. `cell_spec` builds it for one cell from the DockerRunner's own constants (mount
points, tmpfs, user, limits in reprokit/runners/docker.py), and the renderers turn it into:

- `docker_argv`: a `docker run` command line (the Slurm job's Docker launcher, on nodes with an
  engine): the same settings the DockerRunner passes through the SDK;
- `apptainer_argv`: `apptainer exec --containall --cleanenv --net --network none` with read-only
  binds (`--nv` for GPU cells), on a SIF built from the kit's image archive;
- `pyxis_argv`: `srun --container-image=<squashfs> --container-mounts=...:ro ...` (NVIDIA's
  pyxis/enroot SPANK plugin), on a squashfs imported from the same image.

Apptainer and pyxis are NOT installed on any machine this kit was developed on: their command
lines are built and checked by tests (tests/test_slurm_launchers.py), never run. The same holds for
every GPU setting here (`--gpus`, `--nv`): no GPU.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from reprokit.runners.docker import (
    BENCH_IN_CONTAINER,
    DATA_IN_CONTAINER,
    MEM_LIMIT,
    PIDS_LIMIT,
    RESULTS_IN_CONTAINER,
    TMPFS,
)


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = True


@dataclass
class ContainerSpec:
    image: str  # a Docker image id or tag (the SIF / squashfs is made from it)
    command: list[str]
    workdir: str
    env: dict[str, str]
    mounts: list[Mount]
    user: str  # numeric uid:gid
    name: str | None = None
    network: str = "none"
    read_only_rootfs: bool = True
    tmpfs: dict[str, str] = field(default_factory=lambda: dict(TMPFS))
    cap_drop: tuple[str, ...] = ("ALL",)
    security_opt: tuple[str, ...] = ("no-new-privileges",)
    mem_limit: str = MEM_LIMIT
    pids_limit: int = PIDS_LIMIT
    init: bool = True
    labels: dict[str, str] = field(default_factory=dict)
    gpus: int = 0  # GPUs the cell needs (0: none); never exercised on a GPU

    def security(self) -> dict:
        """The isolation settings, in the shape DockerRunner.security() records them."""
        return {"network_mode": self.network, "privileged": False, "cap_drop": list(self.cap_drop),
                "security_opt": list(self.security_opt), "read_only_rootfs": self.read_only_rootfs,
                "tmpfs": dict(self.tmpfs), "user": self.user, "mem_limit": self.mem_limit,
                "memswap_limit": self.mem_limit, "pids_limit": self.pids_limit}


def cell_spec(*, image: str, stack: str, run_dir: str, cells_dir: str, job_name: str, cell_id: str,
              process: int | None, env: dict[str, str], user: str, bench_dir: str,
              data_root: str | None = None, gpus: int = 0, mem_limit: str | None = None,
              pids_limit: int | None = None, labels: dict[str, str] | None = None,
              name: str | None = None) -> ContainerSpec:
    """A cell's container, laid out as the DockerRunner lays it out: bench/ read-only at
    /opt/reprokit/bench, the run directory read-only at /results, only its cells/ writable, the
    data directory (run --data) read-only at /data, the container's copy of the job
    (jobs/<stack>.docker.json, out_dir /results/cells) as the harness's input."""
    cmd = ["python3", f"{BENCH_IN_CONTAINER}/harness.py", f"{RESULTS_IN_CONTAINER}/jobs/{job_name}",
           "--cell", cell_id]
    if process is not None:
        cmd += ["--process", str(process)]
    mounts = [Mount(bench_dir, BENCH_IN_CONTAINER, True),
              Mount(run_dir, RESULTS_IN_CONTAINER, True),
              Mount(cells_dir, f"{RESULTS_IN_CONTAINER}/cells", False)]
    if data_root:
        mounts.append(Mount(data_root, DATA_IN_CONTAINER, True))
    base_env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "HOME": "/tmp",
                "TF_CPP_MIN_LOG_LEVEL": "2"}
    return ContainerSpec(image=image, command=cmd, workdir=BENCH_IN_CONTAINER,
                         env={**base_env, **env}, mounts=mounts, user=user, name=name,
                         mem_limit=mem_limit or MEM_LIMIT, pids_limit=pids_limit or PIDS_LIMIT,
                         labels={"reprokit.stack": stack, "reprokit.cell": cell_id,
                                 **(labels or {})}, gpus=gpus)


# -- renderers ------------------------------------------------------------------------------------
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
        argv += ["--mount", f"type=bind,source={m.source},target={m.target}"
                 + (",readonly" if m.read_only else "")]
    for k, v in spec.env.items():
        argv += ["--env", f"{k}={v}"]
    for k, v in spec.labels.items():
        argv += ["--label", f"{k}={v}"]
    if spec.gpus:  # never run: no GPU here
        argv += ["--gpus", str(spec.gpus)]
    return argv + [spec.image, *spec.command]


def apptainer_argv(spec: ContainerSpec, sif: str, apptainer: str = "apptainer") -> list[str]:
    """`apptainer exec` of the spec on `sif` (never run: no Apptainer here). The SIF's root is
    read-only by nature; --containall gives it a private /tmp, PID and IPC namespace and no host
    home; --cleanenv keeps the host's environment out (the spec's variables go in with --env);
    `--net --network none` leaves only a loopback interface. Memory and process limits are the
    Slurm job's (--mem, the cluster's cgroups): Apptainer needs root to apply its own."""
    argv = [apptainer, "exec", "--containall", "--cleanenv", "--no-home", "--net",
            "--network", spec.network, "--pwd", spec.workdir]
    if spec.gpus:  # never run: no GPU here
        argv.append("--nv")
    for m in spec.mounts:
        argv += ["--bind", f"{m.source}:{m.target}:{'ro' if m.read_only else 'rw'}"]
    for k, v in spec.env.items():
        argv += ["--env", f"{k}={v}"]
    return argv + [sif, *spec.command]


def pyxis_argv(spec: ContainerSpec, squashfs: str, srun: str = "srun") -> list[str]:
    """`srun --container-image` (pyxis/enroot) of the spec on `squashfs`, as a job step inside the
    cell's Slurm job (never run: no pyxis here). Mounts with the `ro` flag, a read-only container
    root, no home directory, no root remapping; the environment is set with `env` inside the
    container because pyxis passes the job's environment through. enroot containers share the
    host's network namespace: the no-network setting cannot be expressed here (see the README)."""
    mounts = ",".join(f"{m.source}:{m.target}" + (":ro" if m.read_only else "")
                      for m in spec.mounts)
    argv = [srun, "--ntasks=1", f"--container-image={squashfs}", f"--container-mounts={mounts}",
            f"--container-workdir={spec.workdir}", "--no-container-mount-home",
            "--no-container-remap-root"]
    if spec.read_only_rootfs:
        argv.append("--container-readonly")
    env = ["env"] + [f"{k}={v}" for k, v in spec.env.items()]
    return argv + env + list(spec.command)


def shell_line(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
