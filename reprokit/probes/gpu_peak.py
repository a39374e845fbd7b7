"""Measure the run's GPUs' GEMM rate, fp32 and TF32, with the host's PyTorch (never typed in).

Like reprokit/probes/cpu_peak.py for the CPU: an achieved rate beside the datasheet peak (peaks.yaml), never
the peak itself. `probe()` runs `python -m reprokit.probes.gpu_peak` in a child process, so the run driver
never imports torch nor holds a CUDA context (and its GPU memory) while the cells run; the child
prints one JSON document:

- {"method", "gpus": [{"index", "uuid", "name", "compute_capability", "fp32_tflops", "tf32_tflops",
  "size", "per_size": {...}, ...}], "torch", "cuda", "measured"} when torch sees CUDA devices: each GPU
  times float32 n x n products with `torch.backends.cuda.matmul.allow_tf32` False (fp32 on the CUDA
  cores) and then True (TF32 on tensor cores; null on GPUs before compute capability 8.0, which have
  none), at several sizes, best of `repeats` each, timed with CUDA events after a warm-up;
- {"skipped": "<why>"} when there is no CUDA framework here (torch not importable, a CPU build, no
  device); {"error": "<why>"} when the probe itself failed.

2 n^3 FLOP per product (`tflops`). The GPU path ran on one NVIDIA H100 (torch 2.11 / JAX 0.11,
2026-11-26, docs/gpu-run: every run.json's `gpu_peak`, fp32 and TF32 at the three sizes, and the
`gpu`-marked test, pytest-probes.log); never on a GPU below compute capability 8.0 (the `tf32_reason`
path), on several GPUs, or on a Slurm node. The development machines have no GPU; the tests marked `gpu`
run it where there is one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from reprokit import kitdata

DEFAULT_SIZES = (2048, 4096, 8192)
DEFAULT_REPEATS = 10


def tf32_min_cc() -> tuple[int, int]:
    """The first compute capability with TF32 tensor cores (reprokit/data/float_precision.yaml)."""

    major, minor = kitdata.load("float_precision")["tf32"]["min_compute_capability"].split(".")
    return int(major), int(minor)


def tflops(n: int, seconds: float) -> float:
    """The rate of one n x n x n float product taking `seconds`: 2 n^3 FLOP."""
    if seconds <= 0:
        raise ValueError(f"a product cannot take {seconds} s")
    return 2.0 * float(n) ** 3 / seconds / 1e12


def best_rate(times: dict[int, list[float]]) -> tuple[int, dict[int, float]]:
    """(size of the best rate, {size: TFLOP/s of its fastest repetition}) from {size: [seconds]}."""
    per_size = {int(n): tflops(n, min(ts)) for n, ts in times.items() if ts}
    if not per_size:
        raise ValueError("no timing to rate")
    return max(per_size, key=per_size.get), per_size


def _set_tf32(torch, on: bool) -> dict:
    """Allow or forbid TF32 for float32 matmuls; what torch reports back."""
    torch.backends.cuda.matmul.allow_tf32 = on
    back = {"torch.backends.cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32)}
    try:
        back["torch.get_float32_matmul_precision"] = torch.get_float32_matmul_precision()
    except Exception as e:  # older torch has none; newer may refuse to mix the two APIs
        back["torch.get_float32_matmul_precision"] = f"unreadable: {type(e).__name__}"
    return back


def _time_sizes(torch, device, sizes, repeats: int) -> dict[int, list[float]]:
    times: dict[int, list[float]] = {}
    for n in sizes:
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(n, n, device=device, dtype=torch.float32, generator=g)
        b = torch.randn(n, n, device=device, dtype=torch.float32, generator=g)
        c = torch.empty(n, n, device=device, dtype=torch.float32)
        for _ in range(2):  # warm-up: cuBLAS handle, kernel choice, clocks up
            torch.mm(a, b, out=c)
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(repeats):
            start.record()
            torch.mm(a, b, out=c)
            end.record()
            end.synchronize()
            ts.append(start.elapsed_time(end) / 1000.0)  # ms -> s
        times[int(n)] = ts
        del a, b, c
        torch.cuda.empty_cache()
    return times


def sm_clock_during(torch, device, uuid: str | None, n: int = 4096, products: int = 20,
                    nvml=None) -> dict:
    """The SM clock while GEMMs run (the peak probe's rate alone says nothing of the clock it ran
    at): `products` n x n float32 products are queued without a synchronisation, NVML's SM clock of
    the device (matched by UUID) is read while they run, then the queue is drained. {"sm_clock_mhz":
    the median reading, "max_sm_clock_mhz", "readings"}, or {"error": why}. Never run on a GPU."""
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
    except Exception as e:  # no nvidia-ml-py, no driver
        return {"error": f"NVML not available: {type(e).__name__}: {e}"[:300]}
    try:
        handle = None
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            got = nvml.nvmlDeviceGetUUID(h)
            got = got.decode() if isinstance(got, bytes) else str(got)
            if uuid and got == uuid:
                handle = h
        if handle is None:
            return {"error": f"no NVML device has the UUID {uuid} torch gave"}
        a = torch.randn(n, n, device=device, dtype=torch.float32)
        b = torch.randn(n, n, device=device, dtype=torch.float32)
        c = torch.empty(n, n, device=device, dtype=torch.float32)
        torch.cuda.synchronize(device)
        for _ in range(products):
            torch.mm(a, b, out=c)
        readings = []
        for _ in range(5):  # the queue keeps the GPU busy meanwhile
            readings.append(int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)))
        torch.cuda.synchronize(device)
        peak = int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))
        del a, b, c
        return {"sm_clock_mhz": sorted(readings)[len(readings) // 2], "max_sm_clock_mhz": peak,
                "readings": readings,
                "method": f"NVML SM clock read 5 times while {products} queued {n}x{n} float32 products ran"}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def _uuid(props) -> str | None:
    u = getattr(props, "uuid", None)
    if u is None:
        return None
    s = str(u)
    return s if s.startswith(("GPU-", "MIG-")) else "GPU-" + s  # NVML's spelling


def measure(sizes: tuple[int, ...] = DEFAULT_SIZES, repeats: int = DEFAULT_REPEATS) -> dict:
    """In this process: the fp32 and TF32 GEMM rate of every CUDA device torch sees, or
    {"skipped": why} without one."""
    try:
        import torch
    except ImportError as e:
        return {"skipped": f"no CUDA framework on this host: torch is not importable ({e})"}
    if not torch.cuda.is_available():
        why = "a CPU build" if torch.version.cuda is None else "no GPU or driver"
        return {"skipped": f"torch {torch.__version__} sees no CUDA device (torch.version.cuda = "
                           f"{torch.version.cuda}: {why})"}
    before = (torch.backends.cuda.matmul.allow_tf32,)
    min_cc = tf32_min_cc()
    gpus = []
    try:
        for i in range(torch.cuda.device_count()):
            device = torch.device("cuda", i)
            props = torch.cuda.get_device_properties(i)
            cc = (props.major, props.minor)
            entry = {"index": i, "uuid": _uuid(props), "name": props.name,
                     "compute_capability": "%d.%d" % cc}
            try:
                entry["precision_fp32"] = _set_tf32(torch, False)
                fp32_times = _time_sizes(torch, device, sizes, repeats)
                n, per = best_rate(fp32_times)
                entry.update({"fp32_tflops": per[n], "size": n, "per_size": {"fp32": per}})
                entry["sm_clock_during_fp32"] = sm_clock_during(torch, device, entry["uuid"])
                if cc >= min_cc:
                    entry["precision_tf32"] = _set_tf32(torch, True)
                    n32, per32 = best_rate(_time_sizes(torch, device, sizes, repeats))
                    entry.update({"tf32_tflops": per32[n32], "tf32_size": n32})
                    entry["per_size"]["tf32"] = per32
                else:
                    entry["tf32_tflops"] = None
                    entry["tf32_reason"] = f"compute capability {entry['compute_capability']} has no TF32"
            except Exception as e:  # one GPU failing (out of memory) leaves the others measured
                entry.setdefault("fp32_tflops", None)
                entry.setdefault("tf32_tflops", None)
                entry["error"] = f"{type(e).__name__}: {e}"[:500]
            gpus.append(entry)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before[0]
    return {
        "gpus": gpus, "torch": torch.__version__, "cuda": torch.version.cuda,
        "sizes": list(sizes), "repeats": repeats,
        "method": (f"measured: best of {repeats} torch {torch.__version__} float32 mm per size, "
                   f"n = {', '.join(str(n) for n in sizes)}, timed with CUDA events after 2 warm-up "
                   "products; fp32 with torch.backends.cuda.matmul.allow_tf32 = False, then TF32 with "
                   "True; 2 n^3 FLOP each"),
        "measured": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    }


def probe(python: str | None = None, timeout_s: float = 600, env: dict | None = None) -> dict:
    """`measure()` in a child process (`python -m reprokit.probes.gpu_peak`); never raises."""
    cmd = [python or sys.executable, "-m", "reprokit.probes.gpu_peak"]
    env = dict(os.environ if env is None else env)  # the kit importable from any directory
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"the GPU GEMM probe took more than {timeout_s:.0f} s and was stopped"}
    except OSError as e:
        return {"error": f"the GPU GEMM probe could not start: {e}"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"the GPU GEMM probe exited {out.returncode}: {tail[0][:300]}"}
    try:
        return json.loads(lines[-1])
    except ValueError as e:
        return {"error": f"the GPU GEMM probe printed no JSON: {e}"}


def summary(peak: dict | None) -> str:
    """One line for logs: the rates, or why there are none."""
    if not peak:
        return "not measured"
    if "skipped" in peak:
        return "skipped: " + peak["skipped"]
    if "error" in peak:
        return "failed: " + peak["error"]
    parts = []
    for g in peak.get("gpus") or []:
        fp32, tf32 = g.get("fp32_tflops"), g.get("tf32_tflops")
        parts.append(f"GPU {g.get('index')} {g.get('name')}: fp32 "
                     + (f"{fp32:.1f}" if fp32 is not None else "n/a")
                     + (f", TF32 {tf32:.1f}" if tf32 is not None else "") + " TFLOP/s")
    return "; ".join(parts) or "no GPU measured"


def main() -> int:
    try:
        doc = measure()
    except Exception as e:
        doc = {"error": f"{type(e).__name__}: {e}"[:500]}
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
