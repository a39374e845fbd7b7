"""Fault injection for the runners' tests: a cell that sleeps, crashes, raises or exhausts memory.

params: {"mode": "ok" | "sleep" | "raise" | "segfault" | "exit" | "memory", "seconds": float,
         "fail_process": N (optional: the fault happens only in process N of `run --repeat K`;
         every other process, and a run without --repeat, behaves as mode "ok")}
Python 3.5 syntax, standard library only.
"""
import os
import signal
import time

FRAMEWORK = None


def run(ctx):
    mode = ctx.params.get("mode", "ok")
    only = ctx.params.get("fail_process")
    if only is not None and ctx.process != int(only):
        mode = "ok"
    seconds = float(ctx.params.get("seconds", 0.0))
    ctx.describe(framework="python", framework_version=None, api="fault injection: " + mode)
    if mode == "sleep":
        time.sleep(seconds)
    elif mode == "raise":
        raise RuntimeError("injected failure")
    elif mode == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "exit":
        os._exit(7)
    elif mode == "memory":
        hog = []
        while True:  # until MemoryError (rlimit) or the OOM killer
            hog.append(bytearray(64 * 2 ** 20))
    ctx.measure("noop_time", lambda: None, unit="ms", kind="ms", items=1,
                method="an empty Python call")
