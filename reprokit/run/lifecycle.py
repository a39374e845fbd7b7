"""A run's lifecycle on the host: one writer per run, cells that never outlive their driver.

- One writer: `RunLock` holds an exclusive `flock` on `<run dir>/.lock` (the file says pid, host
  and start time) from before anything is written until the driver exits; a second driver on the
  same run stops with one line naming the live one. New run directories are made exclusively
  (`make_run_dir`: `<stamp>-<suite>`, then `-2`, `-3` ... when another driver made that one).
- Signals: `signal_guard` turns SIGINT, SIGTERM and SIGHUP into `Interrupted` (once), so the
  executor can kill the running cell, record it as interrupted and write run.json before exiting
  with 128 + the signal number (130, 143, 129).
- Driver killed outright (SIGKILL): the local runner's cells get PR_SET_PDEATHSIG=SIGKILL
  (`set_parent_death_signal`, Linux); a container, which cannot see the driver's pid, watches the
  run's heartbeat file (`Heartbeat`, touched by the driver every few seconds while a cell runs) and
  stops itself when it goes stale (bench/harness.py). Containers carry the driver's pid, host and
  process start time as labels so the next driver removes those of dead drivers.
- Honest reasons: a SIGKILL is reported as the out-of-memory killer only with evidence
  (`oom_evidence`: the cgroup's oom_kill counter rose during the cell, or the kernel log names the
  pid); otherwise "killed by SIGKILL" with what was checked.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import errno
import fcntl
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

from reprokit.errors import UserError

HEARTBEAT_NAME = ".heartbeat"
LOCK_NAME = ".lock"
# a cell whose driver's heartbeat is older than this stops itself (REPROKIT_HEARTBEAT_STALE_S)
HEARTBEAT_STALE_S = 30.0
# bench/harness.py exits with this status when it stopped because the heartbeat went stale
HEARTBEAT_EXIT = 75
# bench/harness.py arms alarm(timeout_s + grace): the cell's time limit holds without the driver
TIMEOUT_GRACE_S = 30
STORAGE_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM)


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


# -- one writer per run -------------------------------------------------------------------------
_held: dict[Path, RunLock] = {}


class RunLock:
    """An exclusive flock on <run dir>/.lock, held until the process exits (or release())."""

    def __init__(self, run_dir: Path, fd: int):
        self.run_dir = run_dir
        self.fd = fd

    @staticmethod
    def holder(run_dir: Path) -> dict | None:
        """What the lock file says about its writer (pid, host, started, argv), or None."""
        try:
            return json.loads((Path(run_dir) / LOCK_NAME).read_text() or "null")
        except (OSError, ValueError):
            return None

    @staticmethod
    def held_by_other(run_dir: Path) -> dict | None:
        """The lock file's content when another process holds the lock now, else None."""
        path = Path(run_dir) / LOCK_NAME
        key = Path(run_dir).resolve()
        if key in _held:
            return None
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return RunLock.holder(run_dir) or {"pid": None, "host": None}
        finally:
            os.close(fd)  # closing drops a shared lock we got
        return None

    def release(self) -> None:
        _held.pop(self.run_dir, None)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def describe_holder(h: dict | None) -> str:
    if not h:
        return "another process"
    return (f"pid {h.get('pid')} on host {h.get('host')}"
            + (f" (started {h['started']})" if h.get("started") else ""))


def holds(run_dir: Path) -> bool:
    """Whether this process holds the run's lock."""
    return Path(run_dir).resolve() in _held


def acquire(run_dir: Path, argv: list[str] | None = None) -> RunLock:
    """Take the run's lock (idempotent within this process); UserError naming the live writer."""
    run_dir = Path(run_dir)
    key = run_dir.resolve()
    if key in _held:
        return _held[key]
    path = run_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise storage_error(e, path) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UserError(f"run {run_dir} is being written by {describe_holder(RunLock.holder(run_dir))} "
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
    _held[key] = lock
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


class EngineLost(UserError):
    """The container engine stopped answering mid-run; the run stops there (exit 1)."""

    exit_code = 1


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
