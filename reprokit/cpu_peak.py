"""Measure this host's CPU floating-point peak with a GEMM probe (never typed in).

`measure()` times single-precision matrix products (numpy by default, or torch) at a few sizes,
keeps the best of several repetitions per size and reports the best GFLOP/s with how it was
obtained. It is an achieved GEMM rate on all usable cores through the installed BLAS, i.e. a
practical peak for efficiency comparisons (achieved FLOP/s / peak), not the theoretical
cores x SIMD width x clock figure. The run driver stores the result in the run record
(`run["cpu_peak"]`), where reprokit.analysis.flops.cpu_peak_of finds it.
"""

from __future__ import annotations

import datetime as dt
import os
import time

DEFAULT_SIZES = (256, 512, 1024)


def _numpy_probe(n: int, repeats: int) -> tuple[float, str]:
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b  # warm-up (thread pool start, page faults)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return best, f"numpy {np.__version__} float32 matmul"


def _torch_probe(n: int, repeats: int) -> tuple[float, str]:
    import torch

    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g, dtype=torch.float32)
    b = torch.randn(n, n, generator=g, dtype=torch.float32)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return best, f"torch {torch.__version__} float32 mm ({torch.get_num_threads()} threads)"


def measure(sizes: tuple[int, ...] = DEFAULT_SIZES, repeats: int = 10, backend: str = "numpy") -> dict:
    """Best float32 GEMM rate over `sizes` (best of `repeats` each).

    Returns {"gflops", "best_size", "per_size": {n: gflops}, "backend", "library", "dtype",
    "repeats", "cpu_count", "load_avg_1min", "method", "measured"}; 2*n^3 FLOPs per n x n product.
    Other load on the host lowers the figure: `load_avg_1min` (before the probe) records it.
    """
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        load = None
    probe = {"numpy": _numpy_probe, "torch": _torch_probe}.get(backend)
    if probe is None:
        raise ValueError(f"unknown backend {backend!r}: use 'numpy' or 'torch'")
    per_size: dict[int, float] = {}
    library = backend
    for n in sizes:
        seconds, library = probe(int(n), max(1, int(repeats)))
        per_size[int(n)] = 2.0 * n**3 / seconds / 1e9
    best_n = max(per_size, key=per_size.get)
    return {
        "gflops": per_size[best_n],
        "best_size": best_n,
        "per_size": per_size,
        "backend": backend,
        "library": library,
        "dtype": "float32",
        "repeats": repeats,
        "cpu_count": os.cpu_count(),
        "load_avg_1min": load,
        "method": (
            f"measured: best of {repeats} {library} products at n = "
            f"{', '.join(str(n) for n in sizes)}; 2 n^3 FLOP each"
        ),
        "measured": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    }
