"""Launchers: how a cell starts inside its Slurm job, on the node.

| launcher  | inside the job                                  | status here                         |
|-----------|-------------------------------------------------|-------------------------------------|
| local     | the stack's interpreter (per-stack venvs on a   | runs in CI on the one-node cluster  |
|           | shared file system) running bench/harness.py    |                                     |
| docker    | `docker run` of the stack's built image         | runs in CI on the one-node cluster  |
| apptainer | `apptainer exec --containall --net --network    | command line built and tested only: |
|           | none` of a SIF built from the image archive     | never run (no Apptainer here)       |
| pyxis     | `srun --container-image=<squashfs>` (enroot)    | command line built and tested only: |
|           |                                                 | never run (no pyxis here)           |

The three container launchers render the one ContainerSpec of reprokit/runners/containerspec.py
(built from the DockerRunner's mount points, user, isolation and limits). `prepare` runs once per
stack on the driver; `task` gives what the node runs for one cell: argv, extra environment,
working directory and, for Docker, the container's name (killed on SIGTERM by slurm_task.py).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from reprokit.runners.base import BENCH, StackUnavailable
from reprokit.runners.containerspec import (
    ContainerSpec,
    apptainer_argv,
    cell_spec,
    docker_argv,
    pyxis_argv,
)

NAMES = ("local", "docker", "apptainer", "pyxis")


class LocalLauncher:
    """The stack's own interpreter on the node (reprokit/envs.py: the kit's venvs, which must sit
    on a file system the nodes share, like the kit and the results)."""

    name = "local"
    container = False

    def __init__(self, say=print):
        from reprokit.runners.local import LocalRunner

        self._local = LocalRunner(say=say)

    def prepare(self, stack: str, stack_spec: dict, say) -> dict:
        prepared = self._local.prepare(stack, stack_spec, say)
        # the chosen environment's variables (a candidate's, e.g. KERAS_BACKEND, over the stack's)
        env = dict(prepared.get("env_vars") or stack_spec["local"].get("env_vars", {}))
        env.update({"PYTHONDONTWRITEBYTECODE": "1", "TF_CPP_MIN_LOG_LEVEL": "2"})
        return {"stack": stack, "python": prepared["python"], "env": env,
                "substitutes": prepared.get("substitutes"), "environment": prepared.get("environment")}

    def task(self, prepared: dict, job_path: Path, cell_id: str, process: int | None,
             run_dir: Path, gpus: int = 0) -> dict:
        argv = [prepared["python"], str(BENCH / "harness.py"), str(Path(job_path).resolve()),
                "--cell", cell_id]
        if process is not None:
            argv += ["--process", str(process)]
        # the environment envs.py chose (and its substitutes) go back with the outcome
        # (execute_concurrent._collect records them in the cell as the local runner does)
        return {"argv": argv, "env": dict(prepared["env"]), "cwd": str(BENCH),
                "info": {"python": prepared["python"], "substitutes": prepared.get("substitutes"),
                         "environment": prepared.get("environment")}}


class _ContainerLauncher:
    """Shared by the container launchers: the image and user as the DockerRunner resolves them,
    the container's copy of the job (jobs/<stack>.docker.json), the spec of one cell."""

    container = True

    def __init__(self, device: str = "cpu", say=print):
        self.device = device
        self.say = say

    def _spec(self, prepared: dict, job_path: Path, cell_id: str, process: int | None,
              run_dir: Path, gpus: int, name: str | None = None) -> ContainerSpec:
        from reprokit.runners.docker import container_job, container_job_data_root

        cjob = container_job(Path(job_path))
        run_dir = Path(run_dir).resolve()
        return cell_spec(image=prepared["image_ref"], stack=prepared["stack"], run_dir=str(run_dir),
                         cells_dir=str(run_dir / "cells"), job_name=cjob.name, cell_id=cell_id,
                         process=process, env=prepared["env"], user=prepared["user"],
                         bench_dir=str(BENCH), data_root=container_job_data_root(Path(job_path)),
                         gpus=gpus if self.device == "gpu" else 0, name=name,
                         labels={"reprokit.run_dir": str(run_dir), "reprokit.launcher": self.name})


class DockerLauncher(_ContainerLauncher):
    """`docker run` on the node: the node's engine must hold the stack's image (`reproduce.py
    build`, or `restore` of the kit's archive, on every node)."""

    name = "docker"

    def prepare(self, stack: str, stack_spec: dict, say) -> dict:
        from reprokit.runners.docker import DockerRunner

        runner = DockerRunner(device=self.device, say=say)
        prepared = runner.prepare(stack, stack_spec, say)
        found = prepared["image"]
        user = prepared["user"]
        return {"stack": stack, "image_ref": found.image_id, "env": dict(prepared["env"]),
                "user": user, "info": {"image_id": found.image_id, "image_tag": found.tag,
                                       "image_digest": found.digest, "image_lock": found.lock_status}}

    def task(self, prepared: dict, job_path: Path, cell_id: str, process: int | None,
             run_dir: Path, gpus: int = 0) -> dict:
        name = f"reprokit-slurm-{prepared['stack']}-{uuid.uuid4().hex[:10]}"
        spec = self._spec(prepared, job_path, cell_id, process, run_dir, gpus, name)
        cells = Path(run_dir).resolve() / "cells"
        cells.mkdir(parents=True, exist_ok=True)
        if os.getuid() == 0 and spec.user != "0:0":  # the container's only writable mount
            uid, gid = (int(x) for x in spec.user.split(":"))
            os.chown(cells, uid, gid)
        return {"argv": docker_argv(spec), "env": {}, "cwd": None, "docker_name": name,
                "info": {**prepared["info"], "container_name": name, "security": spec.security()}}


def _image_file(folder: str | None, stack_spec: dict, flavour: str, suffix: str, what: str,
                steps: str) -> str:
    from reprokit import images

    if not folder:
        raise StackUnavailable(f"the {what} launcher needs --slurm-image-dir DIR holding "
                               f"<image>-<flavour>{suffix} files ({steps})")
    path = Path(folder) / f"{stack_spec['image']}-{flavour}{suffix}"
    if not path.is_file():
        tag = images.alias_tag(stack_spec["image"], flavour)
        raise StackUnavailable(f"{path} not found: make it from {tag} ({steps})")
    return str(path.resolve())


class ApptainerLauncher(_ContainerLauncher):
    """`apptainer exec` of a SIF made from the kit's image (never run here). Steps (README):
    `reproduce.py restore ARCHIVE` on a machine with Docker, `docker save IMAGE -o x.tar`,
    `apptainer build DIR/<image>-<flavour>.sif docker-archive://x.tar`."""

    name = "apptainer"

    def __init__(self, image_dir: str | None = None, device: str = "cpu", say=print):
        super().__init__(device, say)
        self.image_dir = image_dir

    def prepare(self, stack: str, stack_spec: dict, say) -> dict:
        flavour = "gpu" if self.device == "gpu" else "cpu"
        sif = _image_file(self.image_dir, stack_spec, flavour, ".sif", "apptainer",
                          "docker save, then apptainer build X.sif docker-archive://X.tar")
        return {"stack": stack, "image_ref": sif, "env": _container_env(stack_spec, flavour),
                "user": f"{os.getuid()}:{os.getgid()}", "info": {"sif": sif}}

    def task(self, prepared: dict, job_path: Path, cell_id: str, process: int | None,
             run_dir: Path, gpus: int = 0) -> dict:
        spec = self._spec(prepared, job_path, cell_id, process, run_dir, gpus)
        return {"argv": apptainer_argv(spec, prepared["image_ref"]), "env": {}, "cwd": None,
                "info": {**prepared["info"], "never_run": True}}


class PyxisLauncher(_ContainerLauncher):
    """`srun --container-image=<squashfs>` inside the job (pyxis + enroot; never run here). Steps
    (README): `reproduce.py restore ARCHIVE` on a machine with Docker, then
    `enroot import -o DIR/<image>-<flavour>.sqsh dockerd://IMAGE`."""

    name = "pyxis"

    def __init__(self, image_dir: str | None = None, device: str = "cpu", say=print):
        super().__init__(device, say)
        self.image_dir = image_dir

    def prepare(self, stack: str, stack_spec: dict, say) -> dict:
        flavour = "gpu" if self.device == "gpu" else "cpu"
        sqsh = _image_file(self.image_dir, stack_spec, flavour, ".sqsh", "pyxis",
                           "enroot import -o X.sqsh dockerd://IMAGE")
        return {"stack": stack, "image_ref": sqsh, "env": _container_env(stack_spec, flavour),
                "user": f"{os.getuid()}:{os.getgid()}", "info": {"squashfs": sqsh}}

    def task(self, prepared: dict, job_path: Path, cell_id: str, process: int | None,
             run_dir: Path, gpus: int = 0) -> dict:
        spec = self._spec(prepared, job_path, cell_id, process, run_dir, gpus)
        return {"argv": pyxis_argv(spec, prepared["image_ref"]), "env": {}, "cwd": None,
                "info": {**prepared["info"], "never_run": True}}


def _container_env(stack_spec: dict, flavour: str) -> dict[str, str]:
    """The variables the DockerRunner sets for a stack (without the engine's image id)."""
    if flavour == "cpu":
        return dict(stack_spec.get("local", {}).get("env_vars", {}))
    return {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility", "CUDA_CACHE_PATH": "/tmp/cuda-cache",
            "CUDA_CACHE_MAXSIZE": "4294967296"}


def make(name: str, device: str = "cpu", image_dir: str | None = None, say=print):
    if name == "local":
        return LocalLauncher(say=say)
    if name == "docker":
        return DockerLauncher(device=device, say=say)
    if name == "apptainer":
        return ApptainerLauncher(image_dir=image_dir, device=device, say=say)
    if name == "pyxis":
        return PyxisLauncher(image_dir=image_dir, device=device, say=say)
    raise ValueError(f"unknown launcher {name!r}; expected one of {', '.join(NAMES)}")
