"""Run a program the kit does not control (a user's interpreter, `--python STACK=PATH`) and read what it
says, bounded: at most LIMIT bytes of each stream are kept, and the program's whole process group is
ended when it times out, prints past the bound, or exits (unbounded, an "interpreter" that printed
without end was read into 4 GB of memory; one that ran `sleep 1000` left it running under PID 1).

Written by hand on `subprocess.Popen` and `selectors`: `subprocess.run(capture_output=True)` keeps
everything a program prints and kills only the program itself, not what it started.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass

LIMIT = 1 << 20  # bytes kept of each of stdout and stderr


class TooMuchOutput(RuntimeError):
    """The program printed more than the bound; it and its process group were ended."""


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def _end_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session's group: the program and its children
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run(argv: list[str], *, timeout: float, env: dict | None = None, cwd: str | None = None,
        limit: int = LIMIT) -> Result:
    """`argv` in a session of its own, its output read up to `limit` bytes a stream.
    subprocess.TimeoutExpired past `timeout`, TooMuchOutput past `limit`, OSError when it cannot
    start; whatever it started is ended in every case."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=env, cwd=cwd, start_new_session=True)
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as sel:
            for stream in kept:
                sel.register(stream, selectors.EVENT_READ)
            while sel.get_map():
                exited = proc.poll() is not None  # a child it left may hold the pipes open
                left = deadline - time.monotonic()
                if left <= 0 and not exited:
                    raise subprocess.TimeoutExpired(argv, timeout)
                ready = sel.select(0 if exited else min(left, 0.2))
                if exited and not ready:
                    break  # all it wrote before exiting has been read
                for key, _ in ready:
                    chunk = os.read(key.fileobj.fileno(), 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buf = kept[key.fileobj]
                    buf += chunk
                    if len(buf) > limit:
                        raise TooMuchOutput(f"{argv[0]} printed more than {limit:,} bytes")
        left = max(deadline - time.monotonic(), 0.01)
        try:
            code = proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            raise subprocess.TimeoutExpired(argv, timeout) from None
    finally:
        _end_group(proc)  # a child it left behind (a daemon, a `sleep 1000`) goes with it
        for stream in kept:
            stream.close()
    return Result(code, kept[proc.stdout].decode(errors="replace"),
                  kept[proc.stderr].decode(errors="replace"))
