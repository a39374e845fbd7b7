"""What a GPU container needs at start, and what a cell records of it.

    link_libcuda(environ, argv)      with REPROKIT_LIBCUDA_DIR set: link DIR/libcuda.so to the
                                     driver's libcuda.so.1 and re-execute the process with DIR
                                     first on LD_LIBRARY_PATH (does not return then)
    libcuda_record(environ)          what link_libcuda did, for the stack fingerprint
    cuda_cache_state(environ)        the CUDA JIT cache directory now (files, bytes, writable)
    cuda_cache_record(before, after, environ)
                                     the stack fingerprint's `cuda_cache`: `cold` is true when the
                                     cache held no file when the cell started

Why the link: libgpuarray (Theano's GPU backend) dlopens the unversioned "libcuda.so", and the
NVIDIA container toolkit mounts only the driver's libcuda.so.<version> with its libcuda.so.1 link
into the loader cache. The root filesystem is read-only, so the link goes to a directory on the
/tmp tmpfs, which must be on LD_LIBRARY_PATH before the process starts: glibc reads
LD_LIBRARY_PATH once, at start, hence the re-exec. The target is the file the loader itself
resolves libcuda.so.1 to, wherever the toolkit put it. The link has never run with a real driver
(no GPU with Docker has been available). cuda_cache_state and cuda_cache_record ran on one NVIDIA
H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run) under the local runner (every cell's
stack_fingerprint.cuda_cache).

Python 3.5 syntax (2.7-compatible), standard library only; never imports the host package.
"""
from __future__ import print_function

import ctypes
import json
import os
import sys

LINK_DIR_ENV = "REPROKIT_LIBCUDA_DIR"
LINK_DONE_ENV = "REPROKIT_LIBCUDA_LINK"  # set before the re-exec: what was done (JSON)
CACHE_WALK_MAX = 200000  # files counted at most (a 4 GiB cache holds far fewer)


def _err(e):
    return ("%s: %s" % (type(e).__name__, e)).strip()[:300]


def _mapped(prefix, maps_path="/proc/self/maps"):
    """Paths mapped into this process whose file name starts with `prefix`."""
    found = []
    try:
        with open(maps_path) as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if os.path.basename(path).startswith(prefix) and path not in found:
                        found.append(path)
    except (IOError, OSError):
        pass
    return found


def find_driver_libcuda(soname="libcuda.so.1"):
    """(path the loader resolves `soname` to, None) or (None, why not)."""
    before = set(_mapped("libcuda"))
    try:
        ctypes.CDLL(soname)
    except OSError as e:
        return None, "%s not loadable (no driver mounted?): %s" % (soname, _err(e))
    new = [p for p in _mapped("libcuda") if p not in before] or _mapped("libcuda")
    if not new:
        return None, "%s loaded but not found in /proc/self/maps" % soname
    return new[0], None


def link_libcuda(environ=None, argv=None, execv=None):
    """With REPROKIT_LIBCUDA_DIR=DIR set and not yet done: make DIR/libcuda.so a link to the
    driver's libcuda.so.1 and re-execute `argv` (default sys.argv) under sys.executable with DIR
    first on LD_LIBRARY_PATH. Returns the record (see libcuda_record) when nothing is to be done,
    the driver is absent or the link cannot be made (the cell runs on and records why)."""
    environ = os.environ if environ is None else environ
    where = environ.get(LINK_DIR_ENV)
    if not where:
        return None
    if environ.get(LINK_DONE_ENV):
        return libcuda_record(environ)
    link = os.path.join(where, "libcuda.so")
    record = {"dir": where, "link": link, "target": None}
    target, why = find_driver_libcuda()
    if target is None:
        record.update({"status": "no driver", "reason": why})
        environ[LINK_DONE_ENV] = json.dumps(record, sort_keys=True)
        return record
    try:
        if not os.path.isdir(where):
            os.makedirs(where)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(target, link)
    except OSError as e:
        record.update({"status": "failed", "reason": "cannot link %s -> %s: %s" % (link, target, _err(e))})
        environ[LINK_DONE_ENV] = json.dumps(record, sort_keys=True)
        return record
    record.update({"status": "linked", "target": target})
    environ[LINK_DONE_ENV] = json.dumps(record, sort_keys=True)
    paths = environ.get("LD_LIBRARY_PATH", "")
    environ["LD_LIBRARY_PATH"] = where + (":" + paths if paths else "")
    sys.stdout.flush()
    sys.stderr.flush()
    args = [sys.executable] + list(sys.argv if argv is None else argv)
    (execv or os.execv)(sys.executable, args)
    return record  # only reached with a test's execv


def libcuda_record(environ=None):
    """What link_libcuda did in this container (None when the stack needs no link)."""
    environ = os.environ if environ is None else environ
    if not environ.get(LINK_DIR_ENV):
        return None
    text = environ.get(LINK_DONE_ENV)
    if not text:
        return {"dir": environ.get(LINK_DIR_ENV), "status": "not attempted",
                "reason": "the harness was not started as a process (link_libcuda not called)"}
    try:
        record = json.loads(text)
    except ValueError:
        return {"status": "unreadable", "reason": "%s is not JSON" % LINK_DONE_ENV}
    where = record.get("dir") or ""
    record["on_ld_library_path"] = where in environ.get("LD_LIBRARY_PATH", "").split(":")
    return record


# -- CUDA JIT cache ------------------------------------------------------------------------------
def cache_path(environ=None):
    """(directory the CUDA driver caches JIT output in, where that comes from)."""
    environ = os.environ if environ is None else environ
    if environ.get("CUDA_CACHE_PATH"):
        return environ["CUDA_CACHE_PATH"], "CUDA_CACHE_PATH"
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".nv", "ComputeCache"), "the driver's default ($HOME/.nv/ComputeCache)"


def cuda_cache_state(environ=None):
    """The cache directory now: whether it exists and is writable, files and bytes in it."""
    path, _ = cache_path(environ)
    out = {"exists": os.path.isdir(path), "files": 0, "bytes": 0}
    if not out["exists"]:
        parent = os.path.dirname(path.rstrip("/")) or "/"
        out["writable"] = os.access(parent, os.W_OK)
        return out
    out["writable"] = os.access(path, os.W_OK | os.X_OK)
    for root, _dirs, names in os.walk(path):
        for name in names:
            out["files"] += 1
            try:
                out["bytes"] += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
            if out["files"] >= CACHE_WALK_MAX:
                out["truncated"] = True
                return out
    return out


def cuda_cache_record(before, after=None, environ=None):
    """The stack fingerprint's `cuda_cache`. `before` is cuda_cache_state() at the cell's start,
    before its workload imported anything; `cold`: the cache held no file then, so any PTX JIT of
    this cell was paid in full (a cache the process cannot write stays cold for every cell)."""
    environ = os.environ if environ is None else environ
    path, source = cache_path(environ)
    record = {"path": path, "source": source, "maxsize": environ.get("CUDA_CACHE_MAXSIZE"),
              "disabled": environ.get("CUDA_CACHE_DISABLE") == "1",
              "at_start": before, "cold": not before.get("files")}
    if after is not None:
        record["at_end"] = after
    return record


def _cached_files(snapshot):
    if not isinstance(snapshot, dict) or "error" in snapshot:
        return None
    n = snapshot.get("files")
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def jit_cache_state(cache):
    """What a GPU cell's CUDA JIT cache record (`stack_fingerprint.cuda_cache`, cuda_cache_record: at
    the cell's start and end) shows of the cell: "compiled" (files added while it ran), "cold" (empty
    at the start and its end unknown, or caching disabled or not writable), "unknown", "warm" (files at
    the start, none added), "none" (empty at both ends). The one copy of these rules: bench/harness.py
    writes the cell's `jit_cache` with it and the host reads results with it
    (reprokit/probes/jit_cache.py, through files.bench_module)."""
    if not isinstance(cache, dict) or "error" in cache:
        return "unknown"
    start, end = _cached_files(cache.get("at_start")), _cached_files(cache.get("at_end"))
    if start is None:
        if "cold" not in cache:
            return "unknown"
        start = 0 if cache["cold"] else 1
    disabled = bool(cache.get("disabled"))
    blind = disabled or (cache.get("at_start") or {}).get("writable") is False
    if end is not None and end > start and not disabled:
        return "compiled"
    if blind or (end is None and start == 0):
        return "cold"
    if end is None or start > 0:
        return "warm"
    return "none"
