"""Test workload: what a GPU container gives a cell, checked on machines without a GPU.

params: write_cuda_cache (true or a kernel's name: write one file of that name, "kernel" for true,
under $CUDA_CACHE_PATH unless it is there, standing in for the CUDA driver, which stores the machine
code it JIT-compiles from PTX there and serves it from there next time), dlopen (library names to
load with ctypes.CDLL, as libgpuarray loads "libcuda.so"; `extra.dlopen` records the files each
one mapped, or the error). Records `cache_files`: files under the cache directory after it ran.
Not a benchmark. Python 3.5 syntax (2.7-compatible), standard library only.
"""
from __future__ import print_function

import ctypes
import os

FRAMEWORK = None


def _mapped():
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip().startswith("/"):
                found.add(parts[5].strip())
    return found


def run(ctx):
    ctx.describe(framework="python", framework_version=None, api="ctypes, os")
    cache = os.environ.get("CUDA_CACHE_PATH")
    if ctx.params.get("write_cuda_cache"):
        if not cache:
            raise RuntimeError("write_cuda_cache: CUDA_CACHE_PATH is not set")
        name = ctx.params["write_cuda_cache"]
        entry = "reprokit-test-" + ("kernel" if name is True else str(name))
        path = os.path.join(cache, entry)
        if not os.path.exists(path):  # as the driver: a kernel compiled once is served from the cache
            with open(path, "w") as f:
                f.write("stands in for a JIT-compiled kernel\n")
            ctx.note("wrote %s into %s" % (entry, cache))
    loaded = {}
    for name in ctx.params.get("dlopen", []):
        before = _mapped()
        try:
            ctypes.CDLL(name)
        except OSError as e:
            loaded[name] = {"error": str(e)[:300]}
            continue
        loaded[name] = {"mapped": sorted(_mapped() - before)}
    if loaded:
        ctx.extra["dlopen"] = loaded
    files = 0
    if cache and os.path.isdir(cache):
        for _root, _dirs, names in os.walk(cache):
            files += len(names)
    ctx.record_value("cache_files", [files], unit="files",
                     method="os.walk of $CUDA_CACHE_PATH after the workload")
