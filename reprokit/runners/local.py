"""Local runner: each cell in its own process on this machine (no Docker), one interpreter per stack.

A cell's crash, hang or out-of-memory ends only that cell's process: the runner records the reason
and the suite goes on.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

from reprokit import envs
from reprokit.runners.base import BENCH, CellOutcome


def describe_exit(code: int) -> tuple[str, str]:
    if code < 0:
        sig = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        if -code == signal.SIGKILL:
            return "oom", ("process killed by SIGKILL (the kernel's out-of-memory killer does this; "
                           "free memory or run fewer cells at once)")
        return "crashed", f"process died on signal {sig}"
    return "crashed", f"process exited with status {code} without writing a result"


class LocalRunner:
    name = "local"

    def __init__(self, say=print, memory_limit_mb: int | None = None):
        self.say = say
        self.memory_limit_mb = memory_limit_mb

    def _limits(self) -> None:  # runs in the child before exec
        if self.memory_limit_mb:
            limit = self.memory_limit_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def prepare(self, stack: str, stack_spec: dict, say=None) -> dict:
        py = envs.python_for(stack, stack_spec, say or self.say)
        env = dict(os.environ)
        env.update(stack_spec["local"].get("env_vars", {}))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        return {"python": py, "env": env, "stack": stack}

    def run_cell(self, prepared: dict, job_path: Path, cell: dict, results_dir: Path,
                 log_path: Path, process: int | None = None) -> CellOutcome:
        cmd = [prepared["python"], str(BENCH / "harness.py"), str(Path(job_path).resolve()),
               "--cell", cell["id"]]
        if process is not None:  # run --repeat K: this is process N, writing <cell>.p<N>.json
            cmd += ["--process", str(process)]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        timeout = float(cell.get("timeout_s") or 1200)
        start = time.monotonic()
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=prepared["env"],
                                    cwd=str(BENCH), start_new_session=True,
                                    preexec_fn=self._limits if self.memory_limit_mb else None)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return CellOutcome("timeout", f"cell exceeded its {timeout:.0f} s timeout and was "
                                   "killed; raise timeout_s in the suite or use --quick",
                                   time.monotonic() - start, str(log_path))
        wall = time.monotonic() - start
        info = {"python": prepared["python"], "exit_code": code}
        if code == 0:  # the harness wrote a result; its status (ok or failed) is in the file
            return CellOutcome("ok", None, wall, str(log_path), info)
        status, reason = describe_exit(code)
        return CellOutcome(status, reason, wall, str(log_path), info)

    def cleanup(self) -> None:
        pass
