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

The three container launchers render the one ContainerSpec of reprokit/containers/spec.py (the
Docker runner's and the compose files' too). `prepare` runs once per stack on the driver; `task`
gives what the node runs for one cell: argv, extra environment, working directory, for Docker the
container's name (killed on SIGTERM by slurm_task.py), and for the container launchers the spec
itself. A GPU cell's GPUs are known only on the node (the ones Slurm gave the job,
SLURM_JOB_GPUS): slurm_task.py renders its command line there with `task_argv`.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from reprokit.containers import spec as container_spec
from reprokit.containers.spec import ContainerSpec
from reprokit.files import BENCH
from reprokit.runners.base import StackUnavailable

NAMES = ("local", "docker", "apptainer", "pyxis")


class LocalLauncher:
    """The stack's own interpreter on the node (reprokit/runners/venvs.py: the kit's venvs, which must sit
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
        env.update({"PYTHONDONTWRITEBYTECODE": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
                    "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})  # NVML's order (reprokit/runners/local.py)
        from reprokit.runners.local import jit_cache_vars

        env.update(jit_cache_vars(stack))  # the stack's own JIT cache, on the shared file system
        # the interpreter (the kit's venv, or the user's --python STACK=PATH) must exist on the nodes
        # at the same path; what it can use (env_probe.py, probed here) goes to run.json
        return {"stack": stack, "python": prepared["python"], "env": env,
                "substitutes": prepared.get("substitutes"), "environment": prepared.get("environment"),
                "env_probe": prepared.get("env_probe")}

    def task(self, prepared: dict, job_path: Path, cell_id: str, process: int | None,
             run_dir: Path, gpus: int = 0) -> dict:
        argv = [prepared["python"], str(BENCH / "harness.py"), str(Path(job_path).resolve()),
                "--cell", cell_id]
        if process is not None:
            argv += ["--process", str(process)]
        # the environment venvs.py chose (and its substitutes) go back with the outcome
        # (execute_concurrent._collect records them in the cell as the local runner does)
        return {"argv": argv, "env": dict(prepared["env"]), "cwd": str(BENCH),
                "info": {"python": prepared["python"], "substitutes": prepared.get("substitutes"),
                         "environment": prepared.get("environment")}}


class _ContainerLauncher:
    """Shared by the container launchers: the container's copy of the job (jobs/<stack>.docker.json)
    and the spec of one cell, rendered by `render` (here for a cell without GPUs, on the node by
    `task_argv` for one with)."""

    container = True
    name = ""

    def __init__(self, device: str = "cpu", say=print):
        self.device = device
        self.flavour = "gpu" if device == "gpu" else "cpu"
        self.say = say

    def task(self, prepared: dict, job_path: Path, cell_id: str, process: int | None,
             run_dir: Path, gpus: int = 0) -> dict:
        gpus = gpus if self.device == "gpu" else 0
        run_dir = Path(run_dir).resolve()
        # the job's own out_dir is the writable mount: cells/, or a JIT warm-up's warmup/<key>/
        out_dir = json.loads(Path(job_path).read_text()).get("out_dir") or str(run_dir / "cells")
        cjob, data_root = container_spec.container_job(Path(job_path))
        name = self.container_name(prepared)
        spec = container_spec.cell_spec(
            image=prepared["image_ref"], python=prepared["python"], stack=prepared["stack"],
            env=prepared["env"], user=prepared["user"], bench_dir=str(BENCH), run_dir=str(run_dir),
            cells_dir=str(Path(out_dir).resolve()), job_name=cjob.name, cell_id=cell_id, process=process,
            data_root=data_root, jit_volume=prepared.get("jit_volume") if gpus else None,
            jit_dir=prepared.get("jit_dir") if gpus else None, name=name,
            labels={"reprokit.run": run_dir.name, "reprokit.run_dir": str(run_dir),
                    "reprokit.launcher": self.name})
        self.ready(spec, run_dir)
        task = {"launcher": self.name, "spec": spec.to_dict(), "gpus": gpus, "env": {}, "cwd": None,
                "argv": None if gpus else render(self.name, spec), "docker_name": name,
                "info": {**prepared["info"], "python": spec.command[0], "security": spec.security()}}
        if name:
            task["info"]["container_name"] = name
        return task

    def container_name(self, prepared: dict) -> str | None:
        return None

    def ready(self, spec: ContainerSpec, run_dir: Path) -> None:
        """Anything the node needs before the container starts."""


class DockerLauncher(_ContainerLauncher):
    """`docker run` on the node: the node's engine must hold the stack's image (`reproduce.py
    build`, or `restore` of the kit's archive, on every node). A GPU cell mounts the image's CUDA
    JIT cache volume, made and handed to the cell's user on the driver's engine (the Docker
    runner's prepare); a node with an engine of its own creates it empty and root-owned at its
    first cell, which then records the cache unwritable (never run: no GPU with Slurm has been
    available)."""

    name = "docker"

    def container_name(self, prepared: dict) -> str | None:
        return f"reprokit-slurm-{prepared['stack']}-{uuid.uuid4().hex[:10]}"

    def ready(self, spec: ContainerSpec, run_dir: Path) -> None:
        from reprokit.containers.spec import CELLS_IN_CONTAINER

        cells = Path(next((m.source for m in spec.mounts if m.target == CELLS_IN_CONTAINER),
                          run_dir / "cells"))
        cells.mkdir(parents=True, exist_ok=True)
        if os.getuid() == 0 and spec.user != "0:0":  # the container's only writable mount
            uid, gid = (int(x) for x in spec.user.split(":"))
            os.chown(cells, uid, gid)

    def prepare(self, stack: str, stack_spec: dict, say) -> dict:
        from reprokit.runners.docker import DockerRunner

        runner = DockerRunner(device=self.device, say=say)
        prepared = runner.prepare(stack, stack_spec, say)
        found, jit = prepared["image"], prepared.get("jit_cache")
        info = {"image_id": found.image_id, "image_tag": found.tag, "image_digest": found.digest,
                "image_lock": found.lock_status}
        if jit:
            info["jit_cache"] = jit
        return {"stack": stack, "image_ref": found.image_id, "python": prepared["python"],
                "env": dict(prepared["env"]), "user": prepared["user"],
                "jit_volume": jit["volume"] if jit else None, "info": info}


def _image_file(folder: str | None, stack_spec: dict, flavour: str, suffix: str, what: str,
                steps: str) -> str:
    from reprokit.containers import images

    if not folder:
        raise StackUnavailable(f"the {what} launcher needs --slurm-image-dir DIR holding "
                               f"<image>-<flavour>{suffix} files ({steps})")
    path = Path(folder) / f"{stack_spec['image']}-{flavour}{suffix}"
    if not path.is_file():
        tag = images.alias_tag(stack_spec["image"], flavour)
        raise StackUnavailable(f"{path} not found: make it from {tag} ({steps})")
    return str(path.resolve())


class _ImageFileLauncher(_ContainerLauncher):
    """A launcher that runs an image file made from the kit's image (never run here): the spec's
    image is that file, its interpreter the recipe's, its user the driver's. On a GPU its CUDA JIT
    cache is a host directory per image file (container_spec.jit_cache_dir), bound read-write."""

    suffix = ""
    info_key = ""
    steps = ""

    def __init__(self, image_dir: str | None = None, device: str = "cpu", say=print):
        super().__init__(device, say)
        self.image_dir = image_dir

    def prepare(self, stack: str, stack_spec: dict, say) -> dict:
        from reprokit.containers import recipes

        path = _image_file(self.image_dir, stack_spec, self.flavour, self.suffix, self.name,
                           self.steps)
        try:
            python = recipes.interpreter(stack_spec["image"])
        except Exception as e:  # an unreadable recipe.yaml: the stack cannot start
            raise StackUnavailable(str(e)) from None
        from reprokit.containers.image_files import file_id

        try:  # what the probe cache keys this image by, and what the record says ran
            image_id = file_id(path)
        except OSError as e:
            raise StackUnavailable(f"{path} cannot be read ({e.strerror or e})") from None
        info = {self.info_key: path, "image_id": image_id, "never_run": True}
        jit_dir = None
        if self.device == "gpu":  # the JIT cache the Docker launcher keeps in a volume, as a directory
            jit_dir = str(container_spec.jit_cache_dir(path))
            info["jit_cache"] = {"dir": jit_dir, "path": container_spec.jit_cache_path(),
                                 "maxsize": container_spec.jit_cache_env()["CUDA_CACHE_MAXSIZE"]}
        return {"stack": stack, "image_ref": path, "python": python,
                "env": container_spec.environment(stack_spec, self.flavour),
                "user": f"{os.getuid()}:{os.getgid()}", "jit_dir": jit_dir, "info": info}


class ApptainerLauncher(_ImageFileLauncher):
    """`apptainer exec` of a SIF made from the kit's image (never run here). Steps (README):
    `reproduce.py restore ARCHIVE` on a machine with Docker, `docker save IMAGE -o x.tar`,
    `apptainer build DIR/<image>-<flavour>.sif docker-archive://x.tar`."""

    name, suffix, info_key = "apptainer", ".sif", "sif"
    steps = "docker save, then apptainer build X.sif docker-archive://X.tar"


class PyxisLauncher(_ImageFileLauncher):
    """`srun --container-image=<squashfs>` inside the job (pyxis + enroot; never run here). Steps
    (README): `reproduce.py restore ARCHIVE` on a machine with Docker, then
    `enroot import -o DIR/<image>-<flavour>.sqsh dockerd://IMAGE`."""

    name, suffix, info_key = "pyxis", ".sqsh", "squashfs"
    steps = "enroot import -o X.sqsh dockerd://IMAGE"


def render(launcher: str, spec: ContainerSpec) -> list[str]:
    """The command line of `launcher` for the spec (its image: an image id, a SIF, a squashfs)."""
    if launcher == "docker":
        return container_spec.docker_argv(spec)
    if launcher == "apptainer":
        return container_spec.apptainer_argv(spec, spec.image)
    if launcher == "pyxis":
        return container_spec.pyxis_argv(spec, spec.image)
    raise ValueError(f"{launcher!r} does not start a container")


def allocated_gpus(environ: dict, count: int) -> list[str]:
    """The first `count` of the GPUs Slurm gave the job: SLURM_JOB_GPUS, their global ids (not
    relative to the job's device cgroup, which `docker run` bypasses: what --gpus must name).
    ValueError when Slurm gave fewer (never run: no GPU with Slurm has been available)."""
    ids = [i.strip() for i in str(environ.get("SLURM_JOB_GPUS") or "").split(",") if i.strip()]
    if len(ids) < count:
        raise ValueError(f"the cell needs {count} GPUs but Slurm gave the job {len(ids)} "
                         f"(SLURM_JOB_GPUS={environ.get('SLURM_JOB_GPUS') or 'unset'})")
    return ids[:count]


def task_argv(task: dict, environ: dict) -> tuple[list[str], list[str]]:
    """(argv, GPU ids) of a task on its node: the argv made on the driver, or, for a container
    cell with GPUs, its spec given the GPUs Slurm allocated and rendered here."""
    if not task.get("gpus") or not task.get("spec"):
        return list(task["argv"]), []
    ids = allocated_gpus(environ, int(task["gpus"]))
    spec = ContainerSpec.from_dict(task["spec"]).with_gpus(ids)
    return render(task["launcher"], spec), ids


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
