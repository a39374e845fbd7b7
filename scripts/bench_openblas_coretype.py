#!/usr/bin/env python3
"""How much OPENBLAS_CORETYPE=Haswell speeds up the Theano 0.9.0 environment (numpy 1.12.1, whose
OpenBLAS 0.2.18 falls back to its Prescott kernels on CPUs newer than itself).

Runs, in that environment's interpreter, a float32 GEMM (numpy) and one Theano step of the shape of
source 000's LSTM (batch 128, hidden 512: x.W + h.U and the gates), alternating the two settings
ROUNDS times in one run, and prints the medians and their ratio as JSON (docs/openblas-coretype-bench.json).

    python scripts/bench_openblas_coretype.py [--venv DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
from pathlib import Path

ROUNDS = 5
PROBE = r"""
import ctypes, glob, json, os, time
import numpy
lib = glob.glob(os.path.join(os.path.dirname(numpy.__file__), ".libs", "libopenblas*"))[0]
core = ctypes.CDLL(lib)
core.openblas_get_corename.restype = ctypes.c_char_p
a = numpy.random.rand(1024, 1024).astype("float32"); b = numpy.random.rand(1024, 1024).astype("float32")
for _ in range(3): a.dot(b)
t = time.perf_counter(); n = 20
for _ in range(n): a.dot(b)
gemm = 2 * 1024 ** 3 * n / (time.perf_counter() - t) / 1e9
import theano, theano.tensor as T
x, h, W, U = T.matrix(), T.matrix(), T.matrix(), T.matrix()
z = T.dot(x, W) + T.dot(h, U)
i, f, o, g = [T.nnet.sigmoid(z[:, k * 512:(k + 1) * 512]) for k in range(4)]
step = theano.function([x, h, W, U], o * T.tanh(f * h + i * g))
xs = numpy.random.rand(128, 512).astype("float32"); hs = numpy.random.rand(128, 512).astype("float32")
Ws = numpy.random.rand(512, 2048).astype("float32"); Us = numpy.random.rand(512, 2048).astype("float32")
for _ in range(5): step(xs, hs, Ws, Us)
t = time.perf_counter(); n = 200
for _ in range(n): step(xs, hs, Ws, Us)
print(json.dumps({"corename": core.openblas_get_corename().decode(), "gemm_gflops": gemm,
                  "lstm_step_ms": (time.perf_counter() - t) / n * 1e3,
                  "numpy": numpy.__version__, "theano": theano.__version__}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", help="the Theano 0.9.0 environment (default: the kit's theano-0.9.0-py3.6 one)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    root = Path(os.environ.get("REPROKIT_VENV_DIR", Path.home() / ".cache" / "reprokit" / "venvs"))
    venv = args.venv or next(iter(sorted(glob.glob(str(root / "theano-0.9-theano-0.9.0-py3.6-*")))), None)
    if not venv:
        raise SystemExit("no theano-0.9.0-py3.6 environment: run the legacy-2017 suite once (local runner)")
    py = str(Path(venv) / "bin" / "python")
    samples: dict[str, list[dict]] = {"default": [], "Haswell": []}
    for _ in range(ROUNDS):
        for setting in samples:
            env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
            env["THEANO_FLAGS"] = ("blas.ldflags=,floatX=float32,device=cpu,"
                                   f"base_compiledir={venv}/theano-cache")
            if setting != "default":
                env["OPENBLAS_CORETYPE"] = setting
            out = subprocess.run([py, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
            samples[setting].append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {s: {k: statistics.median(r[k] for r in rs) for k in ("gemm_gflops", "lstm_step_ms")}
           for s, rs in samples.items()}
    report = {"command": "python scripts/bench_openblas_coretype.py", "rounds": ROUNDS, "venv": venv,
              "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                           if ln.startswith("model name")), None),
              "load_avg_start": os.getloadavg(),
              "corename": {s: rs[0]["corename"] for s, rs in samples.items()},
              "versions": {k: samples["default"][0][k] for k in ("numpy", "theano")},
              "median": med,
              "gemm_speedup": med["Haswell"]["gemm_gflops"] / med["default"]["gemm_gflops"],
              "lstm_step_speedup": med["default"]["lstm_step_ms"] / med["Haswell"]["lstm_step_ms"],
              "samples": samples}
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    keys = ("corename", "median", "gemm_speedup", "lstm_step_speedup")
    print(json.dumps({k: report[k] for k in keys}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
