"""Test workload: sleeps, so runners can be tested on kills, timeouts and memory limits.

params: seconds (total sleep, default 1), alloc_mb (optional: allocate and touch this many MB
first, to trigger a memory limit). Records one metric, `slept`. Not a benchmark.
Python 3.5 syntax (2.7-compatible), standard library only.
"""
from __future__ import print_function

import sys
import time

FRAMEWORK = None


def run(ctx):
    seconds = float(ctx.params.get("seconds", 1))
    alloc_mb = int(ctx.params.get("alloc_mb", 0))
    ctx.describe(framework="python", framework_version=None, api="time.sleep")
    if alloc_mb:
        block = bytearray(alloc_mb * 1024 * 1024)
        for i in range(0, len(block), 4096):  # touch every page so it is really resident
            block[i] = 1
        ctx.note("allocated %d MB" % alloc_mb)
    start = time.time()
    print("test_sleep: sleeping %.1f s" % seconds)
    sys.stdout.flush()
    while time.time() - start < seconds:
        time.sleep(min(0.2, max(0.0, seconds - (time.time() - start))))
    ctx.record_single("slept", time.time() - start, unit="s", method="time.sleep loop, wall time")
