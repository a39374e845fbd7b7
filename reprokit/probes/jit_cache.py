"""What a GPU cell's CUDA JIT cache says about the cell: whether the driver JIT-compiled PTX while it ran.

bench/harness.py records the cache directory (`stack_fingerprint.cuda_cache`, bench/gpu_runtime.py)
before the cell's workload imports anything (`at_start`) and after it ran (`at_end`). The state read
from the two, worst first (a merged cell keeps the worst of its processes):

- `compiled`: files were added while the cell ran: the driver JIT-compiled kernels inside the cell's
  process (warm-up or timed window: the cache cannot tell which), so a compile time holds PTX JIT;
- `cold`: the cache was empty at the start and its end was not recorded (older results),
  or caching was disabled or the cache not writable (a JIT, if any, leaves no trace and is paid again
  by every process);
- `unknown`: a GPU cell that recorded no readable cache;
- `warm`: files at the start and none added: what the cell needed was cached;
- `none`: empty at the start and at the end, writable: the cell JIT-compiled nothing (its stack has
  native kernels for the GPU);
- `n/a`: a CPU cell.

Both ends are read because the start alone misleads: read that way, 5 of the 6 stacked-lstm cells of
the stored H100 run said "cold" although 4 of them added no file. In the probes stage (with gpu_state): the
executor, the merge, the verdicts and the report read it. The rules themselves are
bench/gpu_runtime.py's `jit_cache_state`, which bench/harness.py applies inside the stack.
"""

from __future__ import annotations

from reprokit import files

STATES = ("compiled", "cold", "unknown", "warm", "none", "n/a")  # worst first
NO_JIT = ("warm", "none", "n/a")  # a compile time measured on these holds no PTX JIT


def from_record(cache: object) -> str:
    """The state a GPU cell's `stack_fingerprint.cuda_cache` gives: bench/gpu_runtime.py's rules,
    the ones bench/harness.py applies inside the stack."""
    return files.bench_module("gpu_runtime").jit_cache_state(cache)


def _files(snapshot: object) -> int | None:
    if not isinstance(snapshot, dict) or "error" in snapshot:
        return None
    n = snapshot.get("files")
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def state(result: dict) -> str:
    """A cell result's state: "n/a" on a CPU; from the cell's own cache record where it has its end (a
    process result); else its stored `jit_cache` (a merged cell: the worst of its processes)."""
    gpu = result.get("device") == "gpu"
    cache = (result.get("stack_fingerprint") or {}).get("cuda_cache")
    if gpu and isinstance(cache, dict) and "at_end" in cache and not result.get("processes"):
        return from_record(cache)
    if result.get("jit_cache") in STATES:
        return result["jit_cache"]
    return from_record(cache) if gpu else "n/a"


def at_start(result: dict) -> str:
    """The cache as the cell found it: cold (empty, or not kept), warm, unknown, n/a (a CPU cell)."""
    if result.get("device") != "gpu":
        return "n/a"
    cache = (result.get("stack_fingerprint") or {}).get("cuda_cache")
    if not isinstance(cache, dict):
        return "unknown"
    return from_record({k: v for k, v in cache.items() if k != "at_end"})


def worst(states: list[str | None]) -> str | None:
    """The worst of some states (None when none is one)."""
    return next((s for s in STATES if s in states), None)


def describe(result: dict) -> str:
    """One line for the report: the state and the files behind it."""
    s = state(result)
    cache = (result.get("stack_fingerprint") or {}).get("cuda_cache") or {}
    start = _files(cache.get("at_start"))
    end = _files(cache.get("at_end"))
    if s == "compiled" and start is not None and end is not None:
        grown = (cache["at_end"].get("bytes") or 0) - (cache["at_start"].get("bytes") or 0)
        return (f"compiled: the CUDA JIT cache grew by {end - start} file(s), {grown:,} bytes, while "
                "the cell ran (PTX JIT inside its process)")
    return {
        "compiled": "compiled: some process of the cell added files to the CUDA JIT cache",
        "cold": "cold: the CUDA JIT cache was empty at the start, or not kept; a JIT would not show",
        "unknown": "unknown: no readable CUDA JIT cache record",
        "warm": f"warm: {start if start is not None else 'some'} file(s) cached at the start, none added",
        "none": "none: the CUDA JIT cache stayed empty (no JIT-compiled kernel was cached)",
        "n/a": "n/a (CPU)",
    }[s]
