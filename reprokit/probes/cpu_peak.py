"""Measure this host's CPU: its effective clock (dependent adds) and floating-point rate (GEMM probe).

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
import stat
import sys
import time

from reprokit import kitdata

DEFAULT_SIZES = (256, 512, 1024)

# -- the effective clock: chains of dependent instructions of known cycle count (data/clock_probe.yaml) --
# The binary is cached by the hash of its source (asm included), so a changed chain builds a new one.
_CLOCK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv) {
    long blocks = atol(argv[1]); int repeats = atoi(argv[2]);
    unsigned long x = 0; double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        for (long i = 0; i < blocks; i++) { __asm__ volatile(BLOCK : "+r"(x)); }
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    printf("%.9f %lu\n", best, x);
    return 0;
}
"""


def _clock_binary(asm: str, adds: int) -> tuple[str | None, str | None]:
    """(path of the compiled probe, None) or (None, why not): the C loop above with `adds` copies of
    `asm` per block, compiled once per source with the host's C compiler (cached under ~/.cache)."""
    import hashlib
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None, "no C compiler (cc, gcc, clang) on this host"
    block = '"' + "\\n\\t".join([asm] * adds) + '"'
    src = _CLOCK_C.replace("BLOCK", block)
    key = hashlib.sha256(src.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reprokit" / "clock_probe"
    exe = cache / f"clock-{key}"
    if _usable(exe):
        return str(exe), None
    exe.unlink(missing_ok=True)  # a cut-short copy (a full disk) is rebuilt, never run
    part = None
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as d:
            c = Path(d) / "clock.c"
            c.write_text(src)
            # built beside its final name (one file system), renamed only once complete
            fd, part = tempfile.mkstemp(prefix=".tmp-clock-", dir=cache)
            os.close(fd)
            p = subprocess.run([cc, "-O1", "-o", part, str(c)], capture_output=True, text=True,
                               timeout=120)
            if p.returncode != 0:
                return None, f"{cc} failed: {(p.stderr.strip().splitlines() or ['?'])[-1][:200]}"
            if not _usable(Path(part)):
                return None, f"{cc} wrote no usable program (a full disk?)"
            os.replace(part, exe)
            part = None
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"the clock probe could not be built: {type(e).__name__}: {e}"
    finally:
        if part:
            Path(part).unlink(missing_ok=True)
    return str(exe), None


def _usable(exe) -> bool:
    """A cached probe program is run only when it is a whole executable: a regular file that starts
    like an ELF program, with its execute bit (a 0-byte file left by a full disk is not)."""
    try:
        st = exe.lstat()
        with open(exe, "rb") as f:
            magic = f.read(4)
    except OSError:
        return False
    elf = magic == b"\x7fELF" or not sys.platform.startswith("linux")
    return stat.S_ISREG(st.st_mode) and st.st_size > 64 and elf and bool(st.st_mode & 0o100)


def clock_spread(a_ghz: float, b_ghz: float) -> float:
    """How far apart two clock figures are: the larger over the smaller, minus 1 (0.1 = 10 % apart)."""
    lo, hi = sorted((float(a_ghz), float(b_ghz)))
    return hi / lo - 1.0 if lo > 0 else float("inf")


def _cycles(n: float) -> str:
    return f"{n:g} cycle{'' if n == 1 else 's'}"


def disagreement(chains: list[dict], tolerance: float) -> str | None:
    """None when the chains' clocks ({"asm", "latency_cycles", "ghz"} each, the `clock` chain first) are
    within `tolerance` of each other (clock_spread), else the one-line reason naming every figure. A chain
    that a core executes faster than its stated latency (Golden Cove's renamer adds small immediates with
    zero latency: an add-immediate chain read 16-17 GHz there) reads a clock several times too high, and
    only a second, independent chain shows it."""
    figures = [float(c["ghz"]) for c in chains]
    spread = max(clock_spread(a, b) for a in figures for b in figures)
    if spread <= tolerance:
        return None
    named = " but ".join(f"'{c['asm']}' ({_cycles(c['latency_cycles'])} each) reads {float(c['ghz']):.3g} GHz"
                         for c in chains)
    return (f"the clock is not measured: {named}, {100 * spread:.0f} % apart, more than the "
            f"{100 * tolerance:g} % allowed (data/clock_probe.yaml agreement_tolerance): one chain does not "
            "take its stated cycles on this core")


def _chains_of(doc: dict, isa: str) -> tuple[dict | None, dict | None]:
    """(the ISA's clock chain, its cross-check chain) in data/clock_probe.yaml; None where missing."""
    mine = [e for e in doc["instructions"] if e["isa"] == isa]
    clock = next((e for e in mine if e.get("role", "clock") == "clock"), None)
    check = next((e for e in mine if e.get("role") == "cross_check"), None)
    return clock, check


def _time_chains(chains: list[dict], per_block: int, target_s: float, repeats: int) -> list[dict] | str:
    """Time each chain (the best of `repeats` timings of about `target_s`, in two halves taken in turn so
    that a clock ramping up or down during the probe affects the chains alike): one figure per chain, or
    the reason none could be taken."""
    import subprocess

    exes = []
    for e in chains:
        exe, why = _clock_binary(e["asm"], per_block)
        if exe is None:
            return why or "the clock probe could not be built"
        exes.append(exe)

    def timed(exe: str, blocks: int, reps: int) -> float:
        p = subprocess.run([exe, str(blocks), str(reps)], capture_output=True, text=True, timeout=120)
        return float(p.stdout.split()[0])

    try:
        blocks = []
        for exe in exes:  # calibrate (best of 20): about target_s per timing
            t = timed(exe, 20_000, 20)
            blocks.append(max(1000, int(20_000 * target_s / max(t, 1e-6))))
        best = [float("inf")] * len(exes)
        for half in (repeats // 2, repeats - repeats // 2):
            for i, exe in enumerate(exes):
                best[i] = min(best[i], timed(exe, blocks[i], max(1, half)))
    except (OSError, ValueError, IndexError, subprocess.SubprocessError) as e:
        return f"the clock probe failed: {type(e).__name__}: {e}"
    out = []
    for e, n, t in zip(chains, blocks, best, strict=True):
        ops = n * per_block
        out.append({"role": e.get("role", "clock"), "asm": e["asm"], "latency_cycles": e["latency_cycles"],
                    "ops": ops, "seconds": t, "ghz": ops * float(e["latency_cycles"]) / t / 1e9,
                    "source": e["source"], "verified": bool(e["verified"])})
    return out


def measure_clock(target_s: float = 0.001, repeats: int = 300, doc: dict | None = None) -> dict:
    """The effective clock of one core now: the best of `repeats` timings of a chain of dependent
    register-register adds (data/clock_probe.yaml: the ISA's add latency in cycles, with its source), each
    about `target_s` long, cross-checked by a second chain of another instruction and latency (x86_64: a
    3-cycle imul) timed alike. Returns {"ghz" (None when not measured, or when the two chains disagree by
    more than the data's agreement_tolerance), "reason", "method", "isa", "adds", "seconds", "source",
    "verified", "load_avg_1min", "chains" (each chain's {role, asm, latency_cycles, ops, seconds, ghz,
    source, verified}), "agreement" ({tolerance, spread})}. An add-immediate chain is not used: Intel
    Golden Cove and later P-cores add small immediates at rename with zero latency (data/clock_probe.yaml
    not_used). The timings are short (1 ms) and many, so on a shared or virtual machine the best of them is
    one no other process or hypervisor interrupted (20 ms timings on the project's loaded 2-vCPU VM read
    2.0 GHz, 1 ms ones 3.7 GHz); what the cores run at under the benchmark's own load (all cores busy) may
    be lower. `doc`: the probe's data (default data/clock_probe.yaml; tests give another)."""
    import platform


    doc = doc if doc is not None else kitdata.load("clock_probe")
    isa = platform.machine().lower().replace("amd64", "x86_64").replace("arm64", "aarch64")
    clock, check = _chains_of(doc, isa)
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        load = None
    base = {"ghz": None, "isa": isa, "load_avg_1min": load, "source": None, "verified": None,
            "method": None}
    if clock is None or check is None:
        return {**base, "reason": f"no dependent-chain probe with a cross-check for the ISA {isa} "
                                  "(data/clock_probe.yaml)"}
    chains = _time_chains([clock, check], int(doc["adds_per_block"]), target_s, repeats)
    if isinstance(chains, str):
        return {**base, "reason": chains}
    tolerance = float(doc["agreement_tolerance"])
    first, second = chains
    out = {**base, "adds": first["ops"], "seconds": first["seconds"], "source": first["source"],
           "chains": chains, "agreement": {"tolerance": tolerance,
                                           "spread": clock_spread(first["ghz"], second["ghz"])}}
    why = disagreement(chains, tolerance)
    if why:
        return {**out, "reason": why}
    return {**out, "ghz": first["ghz"], "reason": None, "verified": all(c["verified"] for c in chains),
            "method": (f"measured: best of {repeats} timings of {first['ops']:,} dependent '{first['asm']}' "
                       f"({_cycles(first['latency_cycles'])} each, {isa}), compiled C on one core; "
                       f"cross-checked by '{second['asm']}' ({_cycles(second['latency_cycles'])} each): "
                       f"{second['ghz']:.3g} GHz, {100 * out['agreement']['spread']:.1f} % apart")}


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


def measure(sizes: tuple[int, ...] = DEFAULT_SIZES, repeats: int = 10, backend: str = "numpy",
            with_clock: bool = True) -> dict:
    """Best float32 GEMM rate over `sizes` (best of `repeats` each).

    Returns {"gflops", "best_size", "per_size": {n: gflops}, "backend", "library", "dtype",
    "repeats", "cpu_count", "load_avg_1min", "method", "measured", "clock" (measure_clock(), the
    effective clock the theoretical peak is computed with)}; 2*n^3 FLOPs per n x n product.
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
    clock = measure_clock() if with_clock else None
    return {
        "clock": clock,
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
