"""What one Slurm array task runs on its node: `python -m reprokit.runners.slurm_task TASKS.json`.

The batch script of a stack's job array (reprokit/runners/slurm.py) runs this with the driver's
interpreter (the kit and the run directory sit on a file system the nodes share). It picks its
task by SLURM_ARRAY_TASK_ID from TASKS.json and:

1. writes the task record `slurm/tasks/<job>_<task>.json`: job id, array job and task, node,
   partition, the node's fingerprint (reprokit.probes.fingerprint: CPU, memory, OS, NVIDIA GPUs through
   NVML) and, once per node and run, its CPU GEMM peak (slurm/nodes/<node>.json);
2. runs the launcher's command line (the local interpreter, `docker run`, `apptainer exec` or
   `srun --container-image`), the harness's output going to the cell's log; a container cell
   with GPUs has its command line rendered here from its container spec, given the GPUs Slurm
   allocated to the job (reprokit/runners/launchers.py task_argv; never run: no GPU with Slurm has
   been available);
3. on SIGTERM (scancel, the time limit, a node going down) passes it on to the command's process
   group and, for the Docker launcher, kills the container by name (a container is not a child
   of the job: Slurm's SIGKILL would leave it running);
4. adds the end (exit status or signal, wall time) to the record and exits with the command's
   status.

The cell never watches the driver's heartbeat here: a Slurm job outlives its driver by design
(`--detach`, a driver killed and re-attached with `--resume`). Its time limit is Slurm's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# what says which of the node's GPUs a task's cell sees (reprokit/probes/cell_gpus.py reads them with the
# node fingerprint): Slurm's global ids, the CUDA variables Slurm sets for a job with GPUs
GPU_ENV = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "GPU_DEVICE_ORDINAL", "CUDA_VISIBLE_DEVICES",
           "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES")


def _write(path: Path, doc: dict) -> None:
    from reprokit import files

    files.write_json_atomic(path, doc)


def _node_info(run_dir: Path, node: str, gpu_task: bool = False) -> dict:
    """The node's fingerprint, and its CPU peak measured once per node and run; for a task given
    GPUs on a node with some, their GEMM rate too (reprokit/probes/gpu_peak.py; never run under Slurm:
    no GPU with Slurm has been available)."""
    from reprokit.probes import fingerprint

    fp = fingerprint.host_fingerprint()
    peak_file = run_dir / "slurm" / "nodes" / f"{node}.json"
    peak = None
    try:
        stored = json.loads(peak_file.read_text())
        peak = stored.get("cpu_peak")
        if gpu_task and fp.get("gpus") and "gpu_peak" not in stored:
            from reprokit.probes import gpu_peak

            stored["gpu_peak"] = gpu_peak.probe()
            try:
                _write(peak_file, stored)
            except OSError:
                pass
        return {"node_fingerprint": fp, "node_cpu_peak": peak, "node_gpu_peak": stored.get("gpu_peak")}
    except (OSError, ValueError):
        try:
            from reprokit.probes import cpu_peak

            peak = cpu_peak.measure(backend="numpy")
        except Exception as e:  # the probe must never cost the cell
            peak = {"error": f"{type(e).__name__}: {e}"}
        gpeak = None
        if gpu_task and fp.get("gpus"):  # the GPUs this task was given (CUDA_VISIBLE_DEVICES)
            from reprokit.probes import gpu_peak

            gpeak = gpu_peak.probe()
        try:
            _write(peak_file, {"node": node, "cpu_peak": peak, "fingerprint": fp,
                               **({"gpu_peak": gpeak} if gpeak is not None else {})})
        except OSError:
            pass
    return {"node_fingerprint": fp, "node_cpu_peak": peak, "node_gpu_peak": gpeak}


HEARTBEAT_S = 5.0  # how often a running task touches its `.alive` file


def alive_path(record_path: Path) -> Path:
    """The file a running task touches every HEARTBEAT_S beside its record: the driver tells a cell
    that runs on after its node's slurmd was lost (NODE_FAIL) from one that died with it."""
    return Path(record_path).with_suffix(".alive")


def _heartbeat(path: Path, done: threading.Event) -> None:
    while not done.is_set():
        try:
            path.touch()
        except OSError:
            pass
        done.wait(HEARTBEAT_S)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m reprokit.runners.slurm_task TASKS.json", file=sys.stderr)
        return 2
    doc = json.loads(Path(args[0]).read_text())
    index = int(os.environ.get("SLURM_ARRAY_TASK_ID", "0"))
    task = doc["tasks"][index]
    run_dir = Path(doc["run_dir"])
    node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    array_job = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("SLURM_JOB_ID", "")
    record_path = Path(task["record"])
    record = {"cell_id": task["cell_id"], "process": task.get("process"),
              "job_id": f"{array_job}_{index}", "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
              "array_job_id": array_job, "array_task_id": index, "node": node,
              "partition": os.environ.get("SLURM_JOB_PARTITION"), "launcher": doc["launcher"],
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "ended": None}
    cell_env = {**os.environ, **(task.get("env") or {})}  # which GPUs the cell sees (cell_gpus.py)
    record["gpu_env"] = {k: cell_env[k] for k in GPU_ENV if k in cell_env}
    record.update(_node_info(run_dir, node, bool(task.get("gpus") or os.environ.get("SLURM_JOB_GPUS"))))
    _write(record_path, record)

    log = Path(task["log"])
    log.parent.mkdir(parents=True, exist_ok=True)
    from reprokit.runners.launchers import task_argv

    try:
        argv, gpus = task_argv(task, os.environ)
    except ValueError as e:  # fewer GPUs than the cell needs
        log.write_text(f"reprokit slurm task: {e}\n")
        record.update({"ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "wall_s": 0.0,
                       "exit_code": 2, "stopped_by": None})
        _write(record_path, record)
        return 2
    if gpus:
        record["gpus"] = gpus
    env = dict(os.environ)
    for k in ("REPROKIT_HEARTBEAT", "REPROKIT_HEARTBEAT_STALE_S"):
        env.pop(k, None)
    env.update(task.get("env") or {})
    stopping = {"signal": None}
    from reprokit.probes import gpu_state

    monitor = gpu_state.Monitor()  # NVML on the node around the cell (a CPU cell's is dropped)
    start = time.monotonic()
    alive = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(alive_path(record_path), alive), daemon=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=task.get("cwd") or None, start_new_session=True)
        beat.start()

        def stop(signum, _frame):
            stopping["signal"] = signal.Signals(signum).name
            name = task.get("docker_name")
            if name:  # the container is the engine's child, not ours
                subprocess.run(["docker", "kill", name], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=20, check=False)
            try:
                os.killpg(proc.pid, signum)
            except ProcessLookupError:
                pass

        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(s, stop)
        code = proc.wait()
        alive.set()
    record["gpu_state"] = monitor.stop()
    record.update({"ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "wall_s": time.monotonic() - start, "exit_code": code,
                   "stopped_by": stopping["signal"]})
    try:
        _write(record_path, record)
    except OSError:
        pass
    if code < 0:
        return 128 - code
    return code


if __name__ == "__main__":
    sys.exit(main())
