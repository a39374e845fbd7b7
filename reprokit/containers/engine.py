"""The one way the kit connects to a Docker engine (the docker SDK, never the CLI).

`client()` is every command's and runner's connection: TIMEOUT_S is its read timeout for every
call (a build step, a `docker save` chunk or an image load can be silent for minutes; the Docker
runner waits for a cell in slices with timeouts of its own). `answers()` only asks whether an engine
answers at all, within PING_TIMEOUT_S: `--runner auto`, preflight, and the Docker runner after a
failed call (is the engine gone?).

A driver killed by SIGKILL cannot remove its cell's container, which stops itself once the run's
heartbeat goes stale and would then stay listed as exited. Two things remove it, each
saving the container's output as its cell's log where the driver could not:
- the driver's successor: the Docker runner starts `watch()` (`python -m reprokit.containers.engine
  watch PID START`) in a session of its own; it waits for the driver to end, then removes that
  driver's containers as they end, and exits when none is left (or after WATCH_GIVE_UP_S);
- the reaper: every command that talks to the engine (`client()`: run, resume, preflight, build,
  archive, restore, export --with-images) first removes the exited containers of dead drivers of
  this host (`reap_exited`), for when the successor was killed too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from reprokit.errors import UserError
from reprokit.probes import processes

TIMEOUT_S = 600
PING_TIMEOUT_S = 5


def _connect(timeout: float):
    import docker

    c = docker.from_env(timeout=timeout)
    c.ping()
    return c


def client(reap: bool = True):
    """A client of the engine DOCKER_HOST (or the local socket) names; a one-line UserError when
    none answers. With `reap`, the exited containers of dead drivers are removed first
    (reap_exited), each said in one line on stderr."""
    try:
        c = _connect(TIMEOUT_S)
    except Exception as e:  # no SDK, no socket, engine down: all mean "no engine"
        raise UserError(f"no Docker engine answers ({type(e).__name__}); run .ci/docker-setup.sh "
                        "or start dockerd") from None
    if reap:
        reap_exited(c, say=lambda m: print(m, file=sys.stderr, flush=True))
    return c


# -- the reaper ---------------------------------------------------------------------------------
# Labels the Docker runner gives each cell's container (reprokit/runners/docker.py)
RUN_LABEL, RUN_DIR_LABEL = "reprokit.run", "reprokit.run_dir"
PID_LABEL, HOST_LABEL, START_LABEL = ("reprokit.driver.pid", "reprokit.driver.host",
                                      "reprokit.driver.start")
ENDED = ("exited", "dead", "created")  # states of a container that runs no cell


def driver_dead(labels: dict) -> int | None:
    """The pid of the container's driver when that driver ran on this host and is dead (its pid
    gone, or reused by a later process); None otherwise (alive, another host, no driver labels)."""

    if labels.get(HOST_LABEL) != processes.host_name():
        return None
    try:
        pid = int(labels.get(PID_LABEL) or "")
    except ValueError:
        return None
    return None if processes.pid_alive(pid, labels.get(START_LABEL) or None) else pid


def save_log(container) -> Path | None:
    """Write an ended container's output as its cell's log (logs/<cell file>.log of the run in its
    labels), as the driver would have, unless that log already holds something. The path written,
    or None (no cell or run directory in the labels, the directory gone, or not writable)."""
    from reprokit import results

    labels = container.labels or {}
    run_dir, cell = labels.get(RUN_DIR_LABEL), labels.get("reprokit.cell")
    if not run_dir or not cell or not (Path(run_dir) / "run.json").is_file():
        return None
    process = labels.get("reprokit.process")
    try:
        path = results.RunDir(Path(run_dir)).log_path(cell, int(process) if process else None)
        if path.is_file() and path.stat().st_size:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(container.logs(stdout=True, stderr=True))
        return path
    except (OSError, ValueError):
        return None
    except Exception:  # the engine's error: the container is still removed
        return None


def reap_exited(c, say=None, pid: int | None = None) -> list[str]:
    """Remove the containers of dead drivers of this host (with `pid`: of that driver only) that have
    ended (exited, or created and never started); running ones are left to stop themselves (a cell
    that ends after its driver died still writes its result, which --resume adopts). The names
    removed."""
    labels = [RUN_LABEL, f"{PID_LABEL}={pid}" if pid is not None else PID_LABEL]
    try:
        found = c.containers.list(all=True, filters={"label": labels, "status": list(ENDED)})
    except Exception:  # the reaper never costs a command its engine
        return []
    gone = []
    for ct in found:
        pid = driver_dead(ct.labels or {})
        if pid is not None and remove(ct, "exited", f"of a dead driver (pid {pid})", say):
            gone.append(ct.name)
    return gone


def remove(ct, kind: str, why: str, say=None) -> bool:
    """Remove a cell's container (its output saved as the cell's log first when it has ended) and
    say so in one line; False when the engine would not remove it."""
    log = save_log(ct) if ct.status in ENDED else None
    try:
        ct.remove(force=True)
    except Exception:
        return False
    if say:
        labels = ct.labels or {}
        say(f"docker: removed {kind} container {ct.name} ({labels.get('reprokit.cell')}, run "
            f"{labels.get(RUN_LABEL)}) {why}" + (f"; its output is the cell's log {log}" if log else ""))
    return True


def answers() -> tuple[bool, str]:
    """(whether an engine answers a ping within PING_TIMEOUT_S, the reason in words)."""
    try:
        _connect(PING_TIMEOUT_S)
        return True, "a Docker engine answers"
    except Exception as e:
        return False, f"no Docker engine ({type(e).__name__})"


# -- the driver's successor -----------------------------------------------------------------------
# How long the successor waits, after its driver died, for the driver's running containers to stop
# themselves (a stale heartbeat ends a cell within its stale limit, a killed one within the grace)
WATCH_GIVE_UP_S = 600
WATCH_POLL_S = 1.0
_watched: set[int] = set()  # drivers this process started a successor for (one each)


def start_watch(pid: int, start: str | None) -> subprocess.Popen | None:
    """Start the successor of driver `pid` (watch(), below) in a session of its own, so that a signal
    to the driver's process group does not reach it; once per driver. None when one was started
    before, or it cannot be started (the reaper of the next command then removes the containers)."""
    if pid in _watched:
        return None
    _watched.add(pid)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    try:
        return subprocess.Popen([sys.executable, "-m", "reprokit.containers.engine", "watch", str(pid),
                                 start or ""], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                                env=env, cwd=root)
    except OSError:
        return None


def watch(pid: int, start: str | None, give_up_s: float = WATCH_GIVE_UP_S) -> list[str]:
    """Wait until driver `pid` (with its start time) has ended, then remove its containers as they end
    (reap_exited for that driver); return when none is left or after `give_up_s`. The names removed."""

    while processes.pid_alive(pid, start or None):
        time.sleep(WATCH_POLL_S)
    try:
        c = _connect(TIMEOUT_S)
    except Exception:
        return []
    gone: list[str] = []
    end = time.monotonic() + give_up_s
    while True:
        gone += reap_exited(c, pid=pid)
        try:
            left = c.containers.list(all=True, filters={"label": [
                RUN_LABEL, f"{PID_LABEL}={pid}", f"{HOST_LABEL}={processes.host_name()}"]})
        except Exception:
            return gone
        if not left or time.monotonic() > end:
            return gone
        time.sleep(WATCH_POLL_S)


if __name__ == "__main__":  # python -m reprokit.containers.engine watch PID START (start_watch)
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        watch(int(sys.argv[2]), sys.argv[3] or None)
