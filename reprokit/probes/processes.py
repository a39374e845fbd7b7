"""A process by identity: this host's name, a process's start time, and whether it is the same live one.

A pid alone is not an identity: the kernel reuses it. With the start time in clock ticks since boot
(`process_start_ticks`) a live process is told from a later one with its pid, which the run lock
(reprokit/run/lifecycle.py), the record of a run's driver (reprokit/run/execute.py) and the labels
of the Docker runner's containers (reprokit/containers/engine.py's reaper) rely on. Reads /proc and
sends signal 0, nothing else: no module of the kit that starts processes is needed here.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def host_name() -> str:
    return socket.gethostname()


def process_start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), which tells
    a live process from a later one that reuses its pid; None where /proc is not readable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2:].split()[19]
    except (OSError, ValueError, IndexError):
        return None


def pid_alive(pid: int, start_ticks: str | None = None) -> bool:
    """Whether process `pid` on this host is alive (and, given its start time, the same process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return False
    if start_ticks:
        now = process_start_ticks(pid)
        if now is not None and now != str(start_ticks):
            return False
    return True
