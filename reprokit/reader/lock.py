"""Who holds a run's lock, read from <run dir>/.lock; taken and released by reprokit/run/lifecycle.py only.

The lock is an exclusive `flock` on the file, which says the writer's pid, host and start time.
`held` is this process's own locks (filled by lifecycle.acquire), so this process is never "another"
holder of a lock it took itself.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

LOCK_NAME = ".lock"
held: dict[Path, Any] = {}  # resolved run directory -> this process's lifecycle.RunLock on it


def holder(run_dir: Path) -> dict | None:
    """What the lock file says about its writer (pid, host, started, argv), or None."""
    try:
        return json.loads((Path(run_dir) / LOCK_NAME).read_text() or "null")
    except (OSError, ValueError):
        return None


def held_by_other(run_dir: Path) -> dict | None:
    """The lock file's content when another process holds the lock now, else None."""
    path = Path(run_dir) / LOCK_NAME
    key = Path(run_dir).resolve()
    if key in held:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return holder(run_dir) or {"pid": None, "host": None}
    finally:
        os.close(fd)  # closing drops a shared lock we got
    return None


def holds(run_dir: Path) -> bool:
    """Whether this process holds the run's lock."""
    return Path(run_dir).resolve() in held
