"""A run's lifecycle on the host: one writer per run, cells that never outlive their driver.

- One writer: `RunLock` holds an exclusive `flock` on `<run dir>/.lock` (the file says pid, host
  and start time) from before anything is written until the driver exits; a second driver on the
  same run stops with one line naming the live one. New run directories are made exclusively
  (`make_run_dir`: `<stamp>-<suite>`, then `-2`, `-3` ... when another driver made that one).
- Signals: `signal_guard` turns SIGINT, SIGTERM and SIGHUP into `Interrupted` (once), so the
  executor can kill the running cell, record it as interrupted and write run.json before exiting
  with 128 + the signal number (130, 143, 129).
- Storage: a write the results disk refuses is one line (`storage_error`), never a traceback.

A process's identity (host, pid, start time) is reprokit/probes/processes.py's; what a cell's process
needs from its runner (the heartbeat, the parent-death signal, the out-of-memory evidence, EngineLost)
is reprokit/runners/cell_process.py's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import signal
import sys
from pathlib import Path

from reprokit.errors import UserError
from reprokit.probes.processes import host_name, process_start_ticks
from reprokit.reader.lock import LOCK_NAME, held, holder

STORAGE_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM)


# -- one writer per run -------------------------------------------------------------------------
# Who holds a run's lock (`holder`, `held_by_other`, `holds`: this process) is read by
# reprokit/reader/lock.py, whose `held` lists this process's locks


class RunLock:
    """An exclusive flock on <run dir>/.lock, held until the process exits (or release())."""

    def __init__(self, run_dir: Path, fd: int):
        self.run_dir = run_dir
        self.fd = fd

    def release(self) -> None:
        held.pop(self.run_dir, None)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def describe_holder(h: dict | None) -> str:
    if not h:
        return "another process"
    return (f"pid {h.get('pid')} on host {h.get('host')}"
            + (f" (started {h['started']})" if h.get("started") else ""))


def _live_holder(run_dir: Path, wait_s: float = 1.0) -> dict | None:
    """The lock file's record of the process that holds the lock now. A record of a process that is
    not running on this host (a run directory copied with its .lock, while the new holder has not
    written its own yet) is waited for briefly, then not named."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        h = holder(run_dir)
        live = bool(h) and h.get("host") != host_name()  # another host: cannot check, named as is
        if h and not live and isinstance(h.get("pid"), int):
            try:
                os.kill(h["pid"], 0)
                exists = True
            except PermissionError:  # someone else's process: it exists
                exists = True
            except ProcessLookupError:
                exists = False
            live = exists and h.get("start_ticks") in (None, process_start_ticks(h["pid"]))
        if live or time.monotonic() >= deadline:
            return h if live else None
        time.sleep(0.05)


def acquire(run_dir: Path, argv: list[str] | None = None) -> RunLock:
    """Take the run's lock (idempotent within this process); UserError naming the live writer."""
    run_dir = Path(run_dir)
    key = run_dir.resolve()
    if key in held:
        return held[key]
    path = run_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise storage_error(e, path) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UserError(f"run {run_dir} is being written by {describe_holder(_live_holder(run_dir))} "
                        "(another reproduce.py); wait for it to finish or stop it, then "
                        "--resume the run") from None
    info = {"pid": os.getpid(), "host": host_name(), "started": utcnow(),
            "start_ticks": process_start_ticks(os.getpid()), "argv": list(argv or sys.argv)}
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
    except OSError as e:
        os.close(fd)
        raise storage_error(e, path) from None
    lock = RunLock(key, fd)
    held[key] = lock
    return lock


def make_run_dir(root: Path, run_id: str) -> Path:
    """Make root/run_id exclusively; when it exists (another driver made it in the same second),
    root/run_id-2, -3, ... The caller takes the lock next."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise storage_error(e, root) from None
    for n in range(1, 1000):
        path = root / (run_id if n == 1 else f"{run_id}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
        except OSError as e:
            raise storage_error(e, path) from None
    raise UserError(f"could not make a new run directory for {run_id} under {root}: 999 exist")


def utcnow() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# -- errors -------------------------------------------------------------------------------------
class Interrupted(UserError):
    """The driver got SIGINT/SIGTERM/SIGHUP: the running cell was stopped and recorded."""

    def __init__(self, signum: int, message: str | None = None):
        self.signum = signum
        self.signame = signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(message or f"interrupted by {self.signame}")


class StorageError(UserError):
    """The results disk refused a write (full, read-only, no permission)."""


def storage_error(e: OSError, path: Path | str | None = None) -> UserError:
    """One line for an OSError writing results: the disk is full, read-only or not ours."""
    where = path or getattr(e, "filename", None) or "the results directory"
    what = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exhausted",
            errno.EROFS: "the file system is read-only"}.get(e.errno, os.strerror(e.errno or 0))
    return StorageError(f"cannot write {where}: {what} ({e.strerror or e}); free space or make it "
                        "writable, or pass --results DIR on another disk")


def is_storage_error(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in STORAGE_ERRNOS


# -- signals ------------------------------------------------------------------------------------
GUARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signal_guard():
    """While inside: the first SIGINT/SIGTERM/SIGHUP raises Interrupted in the main thread; later
    ones are ignored so the cleanup (kill the cell, write run.json) cannot itself be interrupted.
    Yields a dict whose 'signum' is set once a signal came."""
    state: dict = {"signum": None}

    def handler(signum, frame):
        if state["signum"] is not None:
            return
        state["signum"] = signum
        raise Interrupted(signum)

    previous = {}
    try:
        for s in GUARDED:
            previous[s] = signal.signal(s, handler)
    except ValueError:  # not the main thread: leave signals alone
        for s, h in previous.items():
            signal.signal(s, h)
        previous = {}
    try:
        yield state
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
