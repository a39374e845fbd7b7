"""Local runner: each cell in its own process on this machine (no Docker), one interpreter per stack.

A cell's crash, hang or out-of-memory ends only that cell's process: the runner records the reason
and the suite goes on. A cell never outlives its driver: it runs in a process group of its own with
PR_SET_PDEATHSIG=SIGKILL (Linux) and watches the run's heartbeat file (which a stopped driver no
longer touches: the cell ends as interrupted instead of measuring unobserved), the whole group is
killed on a timeout, an interruption of the driver, and after the cell, and bench/harness.py arms
its own alarm at timeout_s plus a grace period.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

from reprokit.files import BENCH
from reprokit.runners import cell_process, env_probe, venvs
from reprokit.runners.base import CellOutcome


def describe_exit(code: int, oom: cell_process.OomWatch | None = None) -> tuple[str, str]:
    """(status, reason) of a harness that exited with `code` without a result of its own. A SIGKILL
    is the out-of-memory killer only with evidence (`oom`: the cgroup counter, the kernel log)."""
    if code < 0:
        sig = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        if -code == signal.SIGKILL:
            if oom is not None:
                return oom.verdict()
            return "crashed", "killed by SIGKILL (no out-of-memory evidence was looked for)"
        if -code == signal.SIGALRM:
            return "timeout", ("the harness's own time limit (the cell's timeout_s plus "
                               f"{cell_process.TIMEOUT_GRACE_S} s) ended it")
        return "crashed", f"process died on signal {sig}"
    if code == cell_process.HEARTBEAT_EXIT:  # the driver reads this, so it was stopped, not killed
        return "interrupted", ("the cell stopped itself: the driver's heartbeat went stale (the "
                               "driver was stopped, e.g. SIGSTOP or Ctrl-Z, for longer than "
                               f"{cell_process.heartbeat_stale_s():.0f} s); nothing it measured is kept: "
                               "`--resume RUN` measures it again")
    return "crashed", f"process exited with status {code} without writing a result"


def jit_cache_vars(stack: str) -> dict[str, str]:
    """CUDA_CACHE_PATH (one directory per stack under $REPROKIT_CUDA_CACHE_DIR, default
    ~/.cache/reprokit/cuda-jit) and CUDA_CACHE_MAXSIZE (compat.yaml jit.cache_env) for a local
    stack: the driver's default cache is shared by every program of the user, so a cell's
    `jit_cache` (cold or warm when it began) would say nothing about this stack's kernels."""
    from reprokit.containers.spec import jit_cache_env, jit_cache_root

    return {"CUDA_CACHE_PATH": str(jit_cache_root() / stack),
            "CUDA_CACHE_MAXSIZE": jit_cache_env()["CUDA_CACHE_MAXSIZE"]}


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class LocalRunner:
    name = "local"

    def __init__(self, say=print, memory_limit_mb: int | None = None):
        self.say = say
        self.memory_limit_mb = memory_limit_mb

    def _child_setup(self) -> None:  # runs in the child between fork and exec
        cell_process.set_parent_death_signal(signal.SIGKILL)  # the cell dies with its driver
        if self.memory_limit_mb:
            limit = self.memory_limit_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def prepare(self, stack: str, stack_spec: dict, say=None) -> dict:
        chosen = venvs.environment_for(stack, stack_spec, say or self.say)
        env = dict(os.environ)
        env.update(chosen.env_vars)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        # CUDA numbers GPUs fastest first unless told otherwise; NVML (the fingerprint, the cell's
        # recorded GPUs: reprokit/probes/cell_gpus.py) numbers them by PCI bus id. One order for both.
        env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        for key, value in jit_cache_vars(stack).items():  # the user's own setting wins
            env.setdefault(key, value)
        # the environment actually used and every candidate tried for it (venvs.py): execute.py
        # copies them into run.json and every cell result of the stack; what it can use
        # (env_probe.py, once per run) goes to run.json `environments`
        return {"python": chosen.python, "env": env, "stack": stack, "env_vars": chosen.env_vars,
                "substitutes": chosen.substitutes, "environment": chosen.record(),
                "env_probe": env_probe.for_environment(stack, stack_spec, chosen)}

    def run_cell(self, prepared: dict, job_path: Path, cell: dict, results_dir: Path,
                 log_path: Path, process: int | None = None) -> CellOutcome:
        """Run the cell in a process group of its own. It dies with the driver (parent-death
        signal, and the heartbeat file a stopped driver stops touching), is killed with its group on a
        timeout and when the driver is interrupted (the exception propagates), and leaves no
        process behind."""
        cmd = [prepared["python"], str(BENCH / "harness.py"), str(Path(job_path).resolve()),
               "--cell", cell["id"]]
        if process is not None:  # run --repeat K: this is process N, writing <cell>.p<N>.json
            cmd += ["--process", str(process)]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        timeout = float(cell.get("timeout_s") or 1200)
        env = dict(prepared["env"])
        # The heartbeat file, with or without PR_SET_PDEATHSIG: a driver that is stopped (SIGSTOP,
        # Ctrl-Z) lives on but beats no more, and its cell stops itself instead of measuring on
        # unobserved until its timeout; a dead driver's cell gets the signal at once.
        heartbeat = cell_process.Heartbeat(Path(job_path).resolve().parent.parent)
        heartbeat.beat(force=True)
        env["REPROKIT_HEARTBEAT"] = str(heartbeat.path)
        env["REPROKIT_HEARTBEAT_STALE_S"] = str(heartbeat.stale_s)
        start = time.monotonic()
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=str(BENCH), start_new_session=True,
                                    preexec_fn=self._child_setup)
            try:
                oom = cell_process.OomWatch(proc.pid)
                code = None
                while code is None:
                    left = timeout - (time.monotonic() - start)
                    if left <= 0:
                        break
                    try:
                        code = proc.wait(timeout=min(left, heartbeat.interval))
                    except subprocess.TimeoutExpired:
                        heartbeat.beat()
            except BaseException:  # interrupted (SIGINT/SIGTERM): the cell goes with the driver
                _kill_group(proc.pid)
                proc.wait()
                raise
            _kill_group(proc.pid)  # whatever the harness left behind in its group
            if code is None:
                proc.wait()
                return CellOutcome("timeout", f"cell exceeded its {timeout:.0f} s timeout and was "
                                   "killed; raise timeout_s in the suite or use --quick",
                                   time.monotonic() - start, str(log_path))
        wall = time.monotonic() - start
        info = {"python": prepared["python"], "exit_code": code}
        if code == 0:  # the harness wrote a result; its status (ok or failed) is in the file
            return CellOutcome("ok", None, wall, str(log_path), info)
        status, reason = describe_exit(code, oom)
        return CellOutcome(status, reason, wall, str(log_path), info)

    def cleanup(self) -> None:
        pass
