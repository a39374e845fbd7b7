"""Docker runner: each cell in a fresh, locked-down container of the stack's built image.

Uses the docker SDK (never the CLI). A cell runs `<python> /opt/reprokit/bench/harness.py
/results/jobs/<stack>.docker.json --cell ID [--process N]` (N: `run --repeat K`) with:
  - no network (network_mode "none"), not privileged, all capabilities dropped, no-new-privileges,
    an unprivileged user, a read-only root filesystem with a tmpfs /tmp (HOME=/tmp);
  - bench/ mounted read-only at /opt/reprokit/bench; the run directory mounted read-only at
    /results and its cells/ directory read-write at /results/cells (the job's out_dir, the only
    writable mount);
  - with `run --data DIR` (the job's data_root), DIR mounted read-only at /data and every cell's
    params.data_dir rewritten from DIR/... to /data/...;
  - memory and process-count limits; a per-cell timeout that kills the container (status
    "timeout"); the kernel OOM killer seen through State.OOMKilled (status "oom").
The container's output is saved as the cell's log and the container is removed afterwards.
A container never outlives its driver for long: it is labelled with the run directory and the
driver's pid, host and start time (leftovers of this run and of dead drivers are removed when a run
starts or resumes), and the harness stops itself when the run's heartbeat file, which the driver
touches while it waits, goes stale; once it has, the driver's successor (a watcher the runner
starts in a session of its own) or else the next command of the kit that talks to the engine
removes it, its output saved as the cell's log (reprokit/containers/engine.py). An engine that
stops answering mid-cell is cell_process.EngineLost.

The container is the one reprokit/containers/spec.py describes (the compose files and the Slurm
launchers render the same ContainerSpec): the image's own interpreter by absolute path,
environment, mounts and, for GPU cells, a device request naming exactly the
cell's GPUs (`run --gpus` gives the pool, the cell's `gpus` parameter or 1 the count) with
NVIDIA_VISIBLE_DEVICES set to the same ids ("void" without a request), and the CUDA JIT cache: a
named volume per (image, host GPU architectures, driver) mounted read-write at CUDA_CACHE_PATH,
created on first use and handed to the cell's user by a one-shot container (root with CAP_CHOWN
only, no network, read-only root filesystem) that runs `chown -R` on it.

GPU paths (device "gpu": DeviceRequest, NVIDIA_* variables, the libcuda.so link, the JIT cache on
a GPU) have never run on a GPU: no GPU with Docker has been available (the one GPU session,
docs/gpu-run, had no Docker). They are built from
the documented Engine API only; the cache volume is tested with the CPU smoke image.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from reprokit.containers import engine, images, recipes, spec
from reprokit.containers.spec import NOBODY
from reprokit.errors import UserError
from reprokit.files import BENCH
from reprokit.probes import processes
from reprokit.runners import cell_process
from reprokit.runners.base import CellOutcome, StackUnavailable


def describe_exit(code: int, oom_killed: bool, mem_limit: str) -> tuple[str, str]:
    """(status, reason) of a container that ended without a result of its own. The OOM killer
    only with the engine's evidence (State.OOMKilled)."""
    if oom_killed:
        return "oom", (f"container killed by the kernel OOM killer at its {mem_limit} memory "
                       "limit; raise REPROKIT_DOCKER_MEMORY or use smaller cells")
    if code == 128 + signal.SIGALRM:
        return "timeout", ("the harness's own time limit (the cell's timeout_s plus "
                           f"{cell_process.TIMEOUT_GRACE_S} s) ended it")
    if code == cell_process.HEARTBEAT_EXIT:
        return "crashed", ("the cell stopped itself: the driver's heartbeat went stale (the driver "
                           "was stopped or killed; see the log)")
    if code > 128 and code - 128 in signal.Signals._value2member_map_:
        sig = signal.Signals(code - 128).name
        who = {"SIGKILL": " from outside the kit (docker kill or the host; no out-of-memory "
                          "evidence: State.OOMKilled is false)",
               "SIGTERM": " from outside the kit (docker stop, or the engine shutting down)"}
        return "crashed", f"container killed by {sig} (exit {code}){who.get(sig, '')}"
    return "crashed", f"container exited with status {code} without writing a result"


class DockerRunner:
    name = "docker"

    def __init__(self, device: str = "cpu", gpus: str | None = None, say=print,
                 mem_limit: str | None = None, pids_limit: int | None = None,
                 lock_path: Path | None = None, client=None, jit_cache: bool | None = None):
        """`jit_cache`: mount the CUDA JIT cache volume (default: on GPU runs only; the tests turn
        it on for a CPU run to check the volume on an engine without a GPU)."""
        self.device = device
        self.flavour = "gpu" if device == "gpu" else "cpu"
        self.gpus = gpus
        self.jit_cache = (device == "gpu") if jit_cache is None else bool(jit_cache)
        self._host_key: str | None = None
        self.say = say
        self.mem_limit, self.pids_limit = spec.limits(mem_limit, pids_limit)
        self.lock_path = lock_path
        self.client = client or engine.client()
        self.containers: set[str] = set()
        self._users: dict[str, str] = {}
        self._watch = None  # the driver's successor (engine.start_watch), asked for with the first cell

    # -- prepare ---------------------------------------------------------------------------
    def prepare(self, stack: str, stack_spec: dict, say=None) -> dict:
        try:
            found = images.find_image(self.client, stack_spec["image"], self.flavour,
                                      self.lock_path)
        except UserError as e:  # the engine's image is not the locked one
            raise StackUnavailable(str(e)) from None
        if found is None:
            raise StackUnavailable(
                f"image {images.alias_tag(stack_spec['image'], self.flavour)} not built; run "
                f"`reproduce.py build --stack {stack}" +
                (" --flavour gpu`" if self.flavour == "gpu" else "`"))
        # NVIDIA_VISIBLE_DEVICES is set per cell, with its device request (run_cell)
        env = spec.environment(stack_spec, self.flavour, image_id=found.image_id)
        if found.digest:
            env["REPROKIT_IMAGE_DIGEST"] = found.digest
        try:
            python = recipes.interpreter(stack_spec["image"])
        except UserError as e:  # an unreadable recipe.yaml
            raise StackUnavailable(str(e)) from None
        user = self._user_for(found)
        jit = self.jit_volume(found, stack_spec["image"], user) if self.jit_cache else None
        # what the image flavour runs instead of the original stack (recipe.yaml substitutes):
        # execute.py copies them into every cell result, as the local runner's environment's
        try:
            flavour = images.recipe(stack_spec["image"]).flavour(self.flavour) or {}
        except UserError:
            flavour = {}
        subs = [{k: str(s[k]) for k in ("original", "used", "why")}
                for s in flavour.get("substitutes") or []]
        return {"stack": stack, "image": found, "python": python, "env": env, "user": user,
                "jit_cache": jit, "substitutes": subs}

    def host_key(self) -> str:
        """The host's GPU architectures and driver (spec.host_gpu_key), asked once."""
        if self._host_key is None:
            from reprokit.probes import fingerprint

            gpus, nvidia = fingerprint.nvml_gpus()
            self._host_key = spec.host_gpu_key(gpus, nvidia)
        return self._host_key

    def jit_volume(self, found, image_dir: str, user: str) -> dict:
        """The image's CUDA JIT cache volume on this host, made the cell user's
        (spec.ensure_jit_volume); what the cell's runner info records."""
        return spec.ensure_jit_volume(self.client, found.image_id, image_dir, self.flavour,
                                      self.host_key(), user)

    def _user_for(self, found) -> str:
        """Numeric uid:gid to run as: the host user when not root, else the image's non-root
        USER, else nobody."""
        if os.getuid() != 0:
            return f"{os.getuid()}:{os.getgid()}"
        if found.image_id in self._users:
            return self._users[found.image_id]
        user = (found.user or "").strip()
        if not user or user.split(":")[0] in ("root", "0"):
            resolved = NOBODY
        elif all(p.isdigit() for p in user.split(":")):
            resolved = user if ":" in user else f"{user}:{user}"
        else:  # a name: ask the image itself
            out = self.client.containers.run(found.image_id, ["sh", "-c", "id -u; id -g"],
                                             user=user, network_mode="none", remove=True,
                                             cap_drop=["ALL"], security_opt=["no-new-privileges"])
            uid, gid = out.decode().split()[:2]
            resolved = NOBODY if uid == "0" else f"{uid}:{gid}"
        self._users[found.image_id] = resolved
        return resolved

    # -- run -------------------------------------------------------------------------------
    def run_cell(self, prepared: dict, job_path: Path, cell: dict, results_dir: Path,
                 log_path: Path, process: int | None = None) -> CellOutcome:
        """Run the cell in a fresh container; cell_process.EngineLost when the engine stops
        answering (the executor records the cell as interrupted and stops the run)."""
        import docker
        import requests

        try:
            return self._run_cell(prepared, job_path, cell, results_dir, log_path, process)
        except (requests.exceptions.ConnectionError, docker.errors.DockerException) as e:
            if self.engine_gone():
                raise cell_process.EngineLost(f"the Docker engine stopped answering during "
                                           f"{cell['id']} ({type(e).__name__})") from None
            raise

    def _run_cell(self, prepared: dict, job_path: Path, cell: dict, results_dir: Path,
                  log_path: Path, process: int | None = None) -> CellOutcome:
        found = prepared["image"]
        run_dir = Path(job_path).resolve().parent.parent
        cells_dir = Path(results_dir).resolve()
        cells_dir.mkdir(parents=True, exist_ok=True)
        user = prepared["user"]
        if os.getuid() == 0 and user != "0:0":
            uid, gid = (int(x) for x in user.split(":"))
            os.chown(cells_dir, uid, gid)  # the container's only writable mount
        try:  # exactly the cell's GPUs (none on a CPU run or for a `gpus: 0` row)
            gpu_ids = spec.gpu_ids(self.gpus, spec.cell_gpu_count(cell.get("params", {}),
                                                                  self.device))
        except ValueError as e:
            return CellOutcome("skipped", f"{e}; pass --gpus with enough GPUs", 0.0, None,
                               {"image_id": found.image_id, "image_tag": found.tag})
        jit = prepared.get("jit_cache") if (gpu_ids or self.device != "gpu") else None
        pid = os.getpid()
        if self._watch is None:  # removes this driver's containers should it die without doing so
            self._watch = engine.start_watch(pid, processes.process_start_ticks(pid))
        # a container cannot see its driver's pid: it watches the run's heartbeat file instead
        heartbeat = cell_process.Heartbeat(run_dir)
        heartbeat.beat(force=True)
        box = self._box(prepared, Path(job_path), cell, run_dir, cells_dir, process, gpu_ids, jit, heartbeat)
        container = self._create(box, cell["id"])
        self.containers.add(container.id)
        info = self._info(found, container.id, box, jit, gpu_ids)
        timeout = float(cell.get("timeout_s") or 1200)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            code, timed_out = self._wait(container, timeout, heartbeat)
            wall = time.monotonic() - start
            container.reload()
            state = container.attrs["State"]
            log_path.write_bytes(container.logs(stdout=True, stderr=True))
        except BaseException:  # interrupted, or the engine is gone: keep what it printed
            try:
                log_path.write_bytes(container.logs(stdout=True, stderr=True))
            except Exception:
                pass
            raise
        finally:
            self._remove_quietly(container.id)
        info.update({"exit_code": code, "oom_killed": bool(state.get("OOMKilled"))})
        return self._outcome(code, bool(state.get("OOMKilled")), timed_out, timeout, wall, log_path, info)

    def _box(self, prepared: dict, job_path: Path, cell: dict, run_dir: Path, cells_dir: Path,
             process: int | None, gpu_ids: list, jit: dict | None, heartbeat) -> spec.ContainerSpec:
        """The description of the cell's container (containers/spec.py), labelled with its driver."""
        cjob, data_root = spec.container_job(job_path)
        pid = os.getpid()
        env = {**prepared["env"],
               "REPROKIT_HEARTBEAT": f"{spec.RESULTS_IN_CONTAINER}/{heartbeat.path.name}",
               "REPROKIT_HEARTBEAT_STALE_S": str(heartbeat.stale_s)}
        return spec.cell_spec(
            image=prepared["image"].image_id, python=prepared["python"], stack=prepared["stack"], env=env,
            user=prepared["user"], bench_dir=str(BENCH), run_dir=str(run_dir), cells_dir=str(cells_dir),
            job_name=cjob.name, cell_id=cell["id"], process=process, data_root=data_root,
            gpu_ids=gpu_ids, jit_volume=jit["volume"] if jit else None,
            mem_limit=self.mem_limit, pids_limit=self.pids_limit,
            name=f"reprokit-{prepared['stack']}-{uuid.uuid4().hex[:10]}",
            labels={"reprokit.run": run_dir.name, "reprokit.run_dir": str(run_dir),
                    "reprokit.driver.pid": str(pid), "reprokit.driver.host": processes.host_name(),
                    "reprokit.driver.start": processes.process_start_ticks(pid) or ""})

    def _create(self, box, cell_id: str):
        """The cell's container, created (not started); an engine that stopped answering is EngineLost."""
        import docker
        import requests

        try:
            return self.client.containers.create(**spec.docker_create_kwargs(box))
        except (requests.exceptions.ConnectionError, docker.errors.DockerException) as e:
            if self.engine_gone():
                raise cell_process.EngineLost(f"the Docker engine does not answer ({type(e).__name__}) "
                                              f"at the start of {cell_id}") from None
            raise

    def _info(self, found, container_id: str, box, jit: dict | None, gpu_ids: list) -> dict:
        """What the cell's result records of its image and container (before it runs)."""
        info = {"image_id": found.image_id, "image_tag": found.tag, "image_digest": found.digest,
                "image_lock": found.lock_status, "container_id": container_id,
                "container_name": box.name, "python": box.command[0], "security": box.security(),
                "mounts": [{"target": m.target, "source": m.source, "type": m.type,
                            "read_only": m.read_only} for m in box.mounts],
                "nvidia_visible_devices": box.env["NVIDIA_VISIBLE_DEVICES"]}
        if jit:
            info["jit_cache"] = jit
        if self.device == "gpu":
            info["gpus"] = gpu_ids
            info["gpu_note"] = "GPU request path never run on a GPU during development"
        return info

    def _wait(self, container, timeout: float, heartbeat) -> tuple[int, bool]:
        """Start the container and wait for it in slices, touching the heartbeat between them; kill it
        at `timeout`. Returns (exit code, timed out); an engine that stops answering is EngineLost."""
        import docker
        import requests

        lost = "the Docker engine stopped answering during the cell"
        start = time.monotonic()
        container.start()
        code, timed_out = None, False
        while code is None:
            left = timeout - (time.monotonic() - start)
            if left <= 0:
                timed_out = True
                break
            try:
                code = container.wait(timeout=min(left, heartbeat.interval))["StatusCode"]
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as e:
                if "timed out" not in str(e) and self.engine_gone():  # not a slice's end
                    raise cell_process.EngineLost(f"{lost} ({type(e).__name__})") from None
                heartbeat.beat()
        if timed_out:
            try:
                container.kill()
            except docker.errors.APIError:  # it ended between the timeout and the kill
                pass
            code = container.wait(timeout=60)["StatusCode"]
        if code == 128 + signal.SIGTERM and self.engine_gone():
            raise cell_process.EngineLost(f"{lost} (it stopped the cell's container, exit {code})")
        return code, timed_out

    def _remove_quietly(self, container_id: str) -> None:
        """Remove the container (killing it if it still runs); an engine that is gone leaves it to the
        next run or --resume."""
        import docker
        import requests

        try:
            self._remove(container_id)
        except (requests.exceptions.ConnectionError, docker.errors.DockerException):
            pass

    def _outcome(self, code: int, oom: bool, timed_out: bool, timeout: float, wall: float, log_path: Path,
                 info: dict) -> CellOutcome:
        if timed_out:
            return CellOutcome("timeout", f"cell exceeded its {timeout:.0f} s timeout; its container "
                               "was killed (raise timeout_s in the suite or use --quick)",
                               wall, str(log_path), info)
        if code == 0 and not oom:  # the harness wrote the result
            return CellOutcome("ok", None, wall, str(log_path), info)
        status, reason = describe_exit(code, oom, self.mem_limit)
        return CellOutcome(status, reason, wall, str(log_path), info)

    def engine_gone(self, settle_s: float = 3.0) -> bool:
        """After a failed call: whether the engine stopped answering. An engine shutting down
        still answers pings for a moment after it has dropped a connection, so a ping that
        succeeds is asked again for `settle_s` before the engine counts as alive."""
        end = time.monotonic() + settle_s
        while True:
            if not engine.answers()[0]:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.5)

    def reap_leftovers(self, run_dir: Path, say=None) -> list[str]:
        """Remove the containers left by this run (its lock is held: none of them is running for
        a live driver) and by drivers on this host that are dead (pid and start time labels), an
        ended one's output saved as its cell's log where the driver could not (engine.save_log).
        Containers of live drivers, of other hosts and of older kits (no driver labels) stay."""
        run_dir = str(Path(run_dir).resolve())
        try:
            found = self.client.containers.list(all=True, filters={"label": engine.RUN_LABEL})
        except Exception:
            return []
        gone = []
        for c in found:
            labels = c.labels or {}
            why = None
            if labels.get(engine.RUN_DIR_LABEL) == run_dir and c.id not in self.containers:
                why = "of this run"
            else:
                pid = engine.driver_dead(labels)
                if pid is not None:
                    why = f"of a dead driver (pid {pid})"
            if why is not None and engine.remove(c, "leftover", why, say):
                gone.append(c.name)
        return gone

    # -- cleanup ---------------------------------------------------------------------------
    def _remove(self, cid: str) -> None:
        import docker

        try:
            self.client.containers.get(cid).remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if "already in progress" not in str(e):
                raise
        self.containers.discard(cid)

    def cleanup(self) -> None:
        import docker
        import requests

        for cid in list(self.containers):
            try:
                self._remove(cid)
            except (requests.exceptions.ConnectionError, docker.errors.DockerException):
                self.containers.discard(cid)  # the engine is gone: the next run removes it
