"""An independent timing of source 000's PyTorch workload, beside the kit's cells.

Plain torch, nothing from reprokit or bench/: one LSTM layer (input = hidden), time-major input
[seq, batch, hidden] of uniform random float32 already on the device, sum of squared errors of the
last step against a random [batch, hidden] target, plain SGD lr 0.01. Each step is bracketed by
torch.cuda.synchronize(); the figure is the median of --samples steps after --warmup untimed ones,
divided by the batch (ms per example, the kit's forward_time_per_example / train_time_per_example).
Run once with TF32 off (the kit's fp32 cells) and once with torch's own defaults.

    python scripts/gpu_independent_check.py --out check.json

Writes one JSON object per configuration and precision; prints one line each.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

CONFIGS = [(128, 30, 512), (128, 30, 1024), (128, 100, 512), (128, 100, 1024)]


def set_precision(mode: str) -> dict:
    if mode == "fp32":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    else:  # torch's own defaults in a fresh process
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("highest")
    return {"matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32}


def time_steps(step, warmup: int, samples: int) -> list[float]:
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times


def measure(batch: int, seq: int, hidden: int, warmup: int, samples: int) -> dict:
    dev = torch.device("cuda")
    torch.manual_seed(1234)
    x = torch.rand(seq, batch, hidden, device=dev)
    y = torch.rand(batch, hidden, device=dev)
    lstm = torch.nn.LSTM(hidden, hidden, num_layers=1).to(dev)
    opt = torch.optim.SGD(lstm.parameters(), lr=0.01)

    def train():
        opt.zero_grad()
        out, _ = lstm(x)
        ((out[-1] - y) ** 2).sum().backward()
        opt.step()

    def forward():
        with torch.no_grad():
            lstm(x)

    out = {}
    for name, step in (("forward_time_per_example", forward), ("train_time_per_example", train)):
        t = time_steps(step, warmup, samples)
        out[name] = {"median_ms": statistics.median(t) * 1e3 / batch, "unit": "ms",
                     "samples_s": t, "items": batch}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--samples", type=int, default=50)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_independent_check: torch.cuda.is_available() is False; run it on a GPU")
    result = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "gpu": torch.cuda.get_device_name(0), "method":
              "median of %d synchronised steps after %d warm-ups, / batch" % (args.samples, args.warmup),
              "rows": []}
    for mode in ("fp32", "defaults"):
        settings = set_precision(mode)
        for batch, seq, hidden in CONFIGS:
            figures = measure(batch, seq, hidden, args.warmup, args.samples)
            result["rows"].append({"config": "b%d-s%d-h%d" % (batch, seq, hidden), "precision": mode,
                                   "settings": settings, **figures})
            print("%s b%d-s%d-h%d forward %.5f ms/ex train %.5f ms/ex" % (
                mode, batch, seq, hidden, figures["forward_time_per_example"]["median_ms"],
                figures["train_time_per_example"]["median_ms"]), flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
