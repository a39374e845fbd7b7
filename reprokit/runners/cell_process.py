"""A cell's process as its runner starts and watches it: never outliving its driver, and honest about
how it ended.

- Identity: a process's host, pid and start time (reprokit/probes/processes.py) tell a live process
  from a later one that reuses its pid (the run lock and the containers' labels use them).
- Driver killed outright (SIGKILL): the local runner's cells get PR_SET_PDEATHSIG=SIGKILL
  (`set_parent_death_signal`, Linux); a container, which cannot see the driver's pid, watches the
  run's heartbeat file (`Heartbeat`, touched by the driver every few seconds while a cell runs) and
  stops itself when it goes stale (bench/harness.py, which exits HEARTBEAT_EXIT then). Containers carry
  the driver's pid, host and process start time as labels so the next driver removes those of dead
  drivers.
- Honest reasons: a SIGKILL is reported as the out-of-memory killer only with evidence (`OomWatch`:
  the cgroup's oom_kill counter rose during the cell, or the kernel log names the pid); otherwise
  "killed by SIGKILL" with what was checked.
- `EngineLost`: the container engine stopped answering mid-run; the run stops there (exit 1).
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
import time
from pathlib import Path

from reprokit.errors import UserError

HEARTBEAT_NAME = ".heartbeat"
# a cell whose driver's heartbeat is older than this stops itself (REPROKIT_HEARTBEAT_STALE_S)
HEARTBEAT_STALE_S = 30.0
# bench/harness.py exits with this status when it stopped because the heartbeat went stale
HEARTBEAT_EXIT = 75
# bench/harness.py arms alarm(timeout_s + grace): the cell's time limit holds without the driver
TIMEOUT_GRACE_S = 30


def heartbeat_stale_s() -> float:
    try:
        v = float(os.environ.get("REPROKIT_HEARTBEAT_STALE_S", HEARTBEAT_STALE_S))
    except ValueError:
        v = HEARTBEAT_STALE_S
    return v if v > 0 else HEARTBEAT_STALE_S


class Heartbeat:
    """The driver's heartbeat file: touched every `interval` seconds while a cell runs."""

    def __init__(self, run_dir: Path, stale_s: float | None = None):
        self.path = Path(run_dir) / HEARTBEAT_NAME
        self.stale_s = stale_s or heartbeat_stale_s()
        self.interval = max(0.5, min(5.0, self.stale_s / 4))
        self._last = 0.0

    def beat(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        try:
            self.path.touch()
            self._last = now
        except OSError:  # a full or read-only disk: the cell notices, the run reports the disk
            pass


class EngineLost(UserError):
    """The container engine stopped answering mid-run; the run stops there (exit 1)."""

    exit_code = 1


# -- cells die with their driver ----------------------------------------------------------------
PR_SET_PDEATHSIG = 1
_prctl = None
if sys.platform.startswith("linux"):
    try:
        _prctl = ctypes.CDLL(None, use_errno=True).prctl
        _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                           ctypes.c_ulong]
    except (OSError, AttributeError):
        _prctl = None


def has_parent_death_signal() -> bool:
    return _prctl is not None


def set_parent_death_signal(sig: int = signal.SIGKILL) -> None:
    """In a child between fork and exec: die with `sig` when the parent (thread) dies. Resolved
    before the fork, so the child only makes one system call."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


# -- out-of-memory evidence ---------------------------------------------------------------------
CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_oom_file(pid: int, root: Path = CGROUP_ROOT) -> Path | None:
    """The file with the oom_kill counter of `pid`'s memory cgroup: cgroup v2 memory.events, or
    the v1 memory controller's memory.oom_control; None when neither is readable."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    v1 = v2 = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "memory" in parts[1].split(","):
            v1 = parts[2]
    candidates = []
    if v2 is not None:
        for base in (root, root / "unified"):
            candidates.append(base / v2.lstrip("/") / "memory.events")
    if v1 is not None:
        candidates.append(root / "memory" / v1.lstrip("/") / "memory.oom_control")
    for c in candidates:
        if c.is_file():
            return c
    return None


def read_oom_kills(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def kernel_log(max_bytes: int = 4 * 2**20) -> str | None:
    """The kernel ring buffer (/dev/kmsg, non-blocking), or None when it is not readable."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    out, total = [], 0
    try:
        while total < max_bytes:
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # a record was overwritten while reading: go on
                    continue
                break
            if not rec:
                break
            out.append(rec.decode("utf-8", "replace"))
            total += len(rec)
    finally:
        os.close(fd)
    return "".join(out)


def kernel_log_names_oom(text: str, pid: int) -> str | None:
    """The kernel log line that says the OOM killer killed `pid`, or None."""
    for line in text.splitlines():
        msg = line.split(";", 1)[-1]
        low = msg.lower()
        if (f"killed process {pid} " in low or f"killed process {pid}(" in low
                or f",pid={pid}," in low and "oom" in low):
            return msg.strip()
    return None


class OomWatch:
    """Watch one cell process for out-of-memory evidence (start it right after the spawn)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.file = cgroup_oom_file(pid)
        self.before = read_oom_kills(self.file)

    def verdict(self) -> tuple[str, str]:
        """(status, reason) for a cell process that died of SIGKILL."""
        checked = []
        after = read_oom_kills(self.file)
        if self.before is not None and after is not None:
            if after > self.before:
                return "oom", (f"killed by SIGKILL: the out-of-memory killer (oom_kill in {self.file} "
                               f"rose from {self.before} to {after} during the cell); free memory or "
                               "run smaller cells")
            checked.append(f"oom_kill in {self.file} stayed at {after}")
        else:
            checked.append("no readable cgroup memory.events/memory.oom_control")
        log = kernel_log()
        if log is None:
            checked.append("kernel log not readable")
        else:
            line = kernel_log_names_oom(log, self.pid)
            if line:
                return "oom", (f"killed by SIGKILL: the kernel's out-of-memory killer ({line}); free "
                               "memory or run smaller cells")
            checked.append(f"no kernel log line names pid {self.pid}")
        return "crashed", (f"killed by SIGKILL (no out-of-memory evidence: {'; '.join(checked)}); "
                           "something outside the kit killed it")
