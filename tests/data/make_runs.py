"""Writes the stored runs under tests/data/runs/ (run once; the JSON files are committed).

    python tests/data/make_runs.py

The samples are synthetic (seeded random draws around chosen medians), made to exercise each
verdict and claim status; they are not measurements of anything. Every metric of 6 or more samples is
split into 3 processes (as from the default design or `run --repeat 3`; a compile time has one sample
per process), since one process decides no verdict. Every file validates against
reprokit/schemas/{run,cell_result}.schema.json (tests/analysis/test_verdicts.py checks that).

runs/m40-same  a host with a 'Tesla M40 24GB' and the published TF 1.2.1 stack (no substitutes):
               same-hardware verdicts (REPRODUCED, DEVIATES_FASTER/SLOWER, INCONCLUSIVE), a
               Theano cell with a substitute (same_hardware_other_stack), a failed cell (NOT_RUN),
               and claims HOLDS (compile), REVERSED (train), INCONCLUSIVE (forward) for 000 s30-h512.
runs/m40-same  (also) the Theano cell ran its Python scan loop for the compiled one (a mechanism
               stand-in: NOT_TESTABLE_STANDIN); basic_lstm ran TF 1.4 for 1.2.1 (a version
               stand-in: same_hardware_other_stack); compile times of cudnn/fused have 3 samples
               (claims can decide), basic_lstm's one (NOT_TESTABLE_SAMPLES).
runs/cpu-a     a CPU-only host (AMD family 25 model 1, 8 cores, 2.45 GHz, AVX2/FMA: Zen 3) with a
               measured GEMM probe of 100 GFLOP/s (context): the GPU-published numbers of 000/001 are
               NOT_TESTABLE_HERE; the CPU-published 003 numbers get efficiency verdicts against the
               6-core Haswell of the publication; 003's CPU claims hold (TF graph vs PyTorch eager,
               training) and reverse (TF graph vs PyTorch JIT, training).
runs/cpu-b     the same cells as cpu-a, cudnn train 25 % slower (a significant change), the rest
               drawn again from the same distributions.
runs/haswell-same  a 6-core Intel family 6 model 63 host at 3.5 GHz (the CPU source 003 published on):
               003 CPU numbers get same-hardware verdicts (REPRODUCED, DEVIATES_SLOWER/FASTER).
runs/v100-other    a 'Tesla V100-SXM2-16GB' host: 000's M40 numbers are the same device class (one
               GPU), another model: efficiency verdicts.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent / "runs"
BATCH = 128


def metric(unit: str, values: list[float], per_item: bool, method: str, stop: str = "time_budget") -> dict:
    if unit == "ms" and per_item:
        raw = [v * BATCH / 1000.0 for v in values]
        deriv, items = f"1000 * seconds / {BATCH}", BATCH
    elif unit == "words/s":
        items = BATCH * BATCH
        raw = [items / v for v in values]
        deriv = f"{items} / seconds"
    else:
        raw, deriv, items = list(values), "seconds", 1
    return {
        "unit": unit,
        "samples": values,
        "raw_seconds": raw,
        "items_per_sample": items,
        "derivation": deriv,
        "warmup": 0 if stop == "single" else 2,
        "warmup_seconds": [] if stop == "single" else [raw[0] * 1.1, raw[0] * 1.05],
        "stop_reason": stop,
        "method": method,
        "sync": "implicit: session.run returns host data",
    }


def draws(rng: random.Random, median: float, rel_sd: float, n: int) -> list[float]:
    return [round(median * (1 + rng.gauss(0, rel_sd)), 7) for _ in range(n)]


def uniform(rng: random.Random, lo: float, hi: float, n: int) -> list[float]:
    return [round(rng.uniform(lo, hi), 7) for _ in range(n)]


def cell(
    run_id: str,
    cell_id: str,
    stack: str,
    device: str,
    framework: str,
    version: str,
    metrics: dict,
    substitutes=(),
    status: str = "ok",
    reason=None,
    params=None,
) -> dict:
    src, fw, variant, _cfg = cell_id.split("/")
    for name, m in metrics.items():  # as from 3 processes (run --repeat 3, or the default design)
        n = len(m["samples"])
        if n >= 6:
            m["processes"] = [n // 3 + (1 if i < n % 3 else 0) for i in range(3)]
        elif n >= 2 and "compile" in name:  # one compile time per process
            m["processes"] = [1] * n
    return {
        "schema_version": 1,
        "kind": "cell_result",
        "run_id": run_id,
        "cell_id": cell_id,
        "source": src,
        "stack": stack,
        "workload": f"s{src}_{fw}",
        "variant": variant,
        "params": params or {"batch": 128, "seq_len": 30, "hidden": 512, "layers": 1},
        "status": status,
        "reason": reason,
        "started": "2026-11-22T00:00:00Z",
        "finished": "2026-11-22T00:01:00Z",
        "wall_s": 60.0,
        "device": device,
        "protocol": "budget",
        "implementation": {
            "framework": framework,
            "framework_version": version,
            "api": "test data",
            "substitutes": list(substitutes),
            "notes": [],
        },
        "metrics": metrics if status == "ok" else {},
        "stack_fingerprint": {
            "kind": "stack_fingerprint",
            "fingerprint_version": 1,
            "python": {"version": "3.5.2"},
            "framework": {"name": framework, "version": version},
            "numpy": {"version": "1.12.1", "blas": "openblas"},
            "env": {},
        },
        "kit": {"version": "0.1.0", "git_commit": None},
        # a GPU cell's compile times get verdicts only on a warm CUDA JIT cache (reprokit/run/jit_warmup.py)
        **({"jit_cache": "warm"} if device == "gpu" else {}),
    }


TEST_CPU = {"model_name": "Test CPU @ 2.00GHz", "logical_cores": 8, "usable_cores": 8}
ZEN3 = {"model_name": "AMD EPYC", "vendor": "AuthenticAMD", "family": "25", "model": "1", "stepping": "1",
        "flags": ["avx", "avx2", "fma", "sse4_2"], "mhz": [2450.0] * 8, "physical_cores": 8,
        "logical_cores": 8, "usable_cores": 8}
HASWELL6 = {"model_name": "Intel(R) Core(TM) i7-5930K CPU @ 3.50GHz", "vendor": "GenuineIntel", "family": "6",
            "model": "63", "stepping": "2", "flags": ["avx", "avx2", "fma", "sse4_2"], "mhz": [3500.0] * 12,
            "physical_cores": 6, "logical_cores": 12, "usable_cores": 12}


def host(gpus: list[str], cpu_peak: float | None, env: dict, cpu: dict | None = None) -> dict:
    h = {
        "fingerprint_version": 1,
        "kind": "host_fingerprint",
        "collected": "2026-11-22T00:00:00Z",
        "cpu": dict(cpu or TEST_CPU),
        "memory": {"total_bytes": 64 * 2**30},
        "python": {"version": "3.11.7"},
        "nvidia": {"available": bool(gpus), "driver_version": "375.20" if gpus else None},
        "gpus": [{"index": i, "name": g} for i, g in enumerate(gpus)],
        "env": env,
    }
    return h


def write_run(name: str, hostfp: dict, cells: list[dict], cpu_peak: dict | None) -> None:
    d = HERE / name
    (d / "cells").mkdir(parents=True, exist_ok=True)
    run = {
        "schema_version": 1,
        "kind": "run",
        "run_id": name,
        "suite": "legacy-2017",
        "argv": ["reproduce.py", "--suite", "legacy-2017"],
        "runner": "local",
        "protocol": "budget",
        "quick": False,
        "repeat": 3,
        "started": "2026-11-22T00:00:00Z",
        "finished": "2026-11-22T01:00:00Z",
        "wall_s": 3600.0,
        "host_fingerprint": hostfp,
        "kit": {"version": "0.1.0", "git_commit": None},
        "cells": [],
    }
    if cpu_peak:
        run["cpu_peak"] = cpu_peak
    for c in cells:
        fname = c["cell_id"].replace("/", "__") + ".json"
        run["cells"].append(
            {
                "cell_id": c["cell_id"],
                "stack": c["stack"],
                "status": c["status"],
                "reason": c["reason"],
                "process_wall_s": 61.0,
                "result_file": f"cells/{fname}",
            }
        )
        (d / "cells" / fname).write_text(json.dumps(c, indent=1) + "\n")
    run["cells"].append(
        {
            "cell_id": "000/tensorflow/basic_lstm/b128-s100-h512",
            "stack": "tf-1.2",
            "status": "skipped",
            "reason": "preflight: no kernel image for this GPU (test data)",
            "process_wall_s": None,
            "result_file": None,
        }
    )
    (d / "run.json").write_text(json.dumps(run, indent=1) + "\n")


def m40_same() -> None:
    rng = random.Random(40)
    rid = "m40-same"
    tf = lambda cid, ms: cell(rid, cid, "tf-1.2", "gpu", "tensorflow", "1.2.1", ms)  # noqa: E731
    m = lambda u, v, per=True, stop="time_budget": metric(u, v, per, "test", stop)  # noqa: E731
    cells = [
        tf(
            "000/tensorflow/cudnn_lstm/b128-s30-h512",
            {
                "train_time_per_example": m("ms", draws(rng, 0.1405, 0.004, 30)),  # REPRODUCED
                "forward_time_per_example": m("ms", draws(rng, 0.0600, 0.004, 30)),  # DEVIATES_FASTER
                "compile_time": m("s", [2.0, 2.05, 1.98], False, "published_count"),
            },
        ),
        tf(
            "000/tensorflow/fused_lstm/b128-s30-h512",
            {
                "train_time_per_example": m("ms", draws(rng, 0.3000, 0.004, 30)),  # DEVIATES_SLOWER
                "forward_time_per_example": m("ms", uniform(rng, 0.100, 0.130, 30)),  # INCONCLUSIVE
                "compile_time": m("s", [1.0, 1.02, 0.99], False, "published_count"),
            },
        ),
        cell(
            rid,
            "000/tensorflow/basic_lstm/b128-s30-h512",
            "tf-1.2",
            "gpu",
            "tensorflow",
            "1.4.0",
            {
                "train_time_per_example": m("ms", draws(rng, 0.2542, 0.004, 30)),  # REPRODUCED, other stack
                "forward_time_per_example": m("ms", uniform(rng, 0.115, 0.132, 30)),
                "compile_time": m("s", [1.5], False, "single"),
            },
            substitutes=[{"original": "TensorFlow 1.2.1", "used": "TensorFlow 1.4.0", "why": "test data"}],
        ),
        cell(
            rid,
            "000/theano/fastlstm/b128-s30-h512",
            "theano-0.9",
            "gpu",
            "theano",
            "1.0.5",
            {
                "train_time_per_example": m("ms", draws(rng, 0.4640, 0.004, 30)),
                "forward_time_per_example": m("ms", draws(rng, 0.0900, 0.004, 30)),
                "compile_time": m("s", [7.0], False, "single"),
            },
            substitutes=[
                {"original": "Theano 0.9.0", "used": "Theano 1.0.5", "why": "test data"},
                {"original": "Theano scan time loop in Cython (scan_perform)",
                 "used": "Theano Python scan loop",
                 "why": "test data"},
            ],
        ),
        cell(
            rid,
            "000/tensorflow/cudnn_lstm/b128-s30-h1024",
            "tf-1.2",
            "gpu",
            "tensorflow",
            "1.2.1",
            {},
            status="failed",
            reason="ValueError: test data failure",
            params={"batch": 128, "seq_len": 30, "hidden": 1024, "layers": 1},
        ),
    ]
    write_run(rid, host(["Tesla M40 24GB"], None, {"CUDA_VISIBLE_DEVICES": "0"}), cells, None)


def cpu_run(name: str, seed: int, cudnn_train_ms: float, peak: float, env: dict) -> None:
    rng = random.Random(seed)
    m = lambda u, v, per=True, stop="time_budget": metric(u, v, per, "test", stop)  # noqa: E731
    cells = [
        cell(
            name,
            "000/tensorflow/cudnn_lstm/b128-s30-h512",
            "tf-1.2",
            "cpu",
            "tensorflow",
            "2.21.0",
            {
                "train_time_per_example": m("ms", draws(rng, cudnn_train_ms, 0.01, 20)),  # efficiency lower
                "forward_time_per_example": m("ms", draws(rng, 5.52, 0.005, 20)),  # efficiency similar
                "compile_time": m("s", [3.0], False, "single"),
            },  # not comparable
            substitutes=[{"original": "TensorFlow 1.2.1", "used": "TensorFlow 2.21.0", "why": "test data"}],
        ),
        cell(
            name,
            "000/tensorflow/basic_lstm/b128-s30-h512",
            "tf-1.2",
            "cpu",
            "tensorflow",
            "2.21.0",
            {"train_time_per_example": m("ms", draws(rng, 7.55, 0.01, 20))},  # efficiency higher
            substitutes=[{"original": "TensorFlow 1.2.1", "used": "TensorFlow 2.21.0", "why": "test data"}],
        ),
        cell(
            name,
            "001/pytorch/word_lm/b128-s128-h1024",
            "torch-0.1",
            "cpu",
            "torch",
            "2.13.0+cpu",
            {"train_wps": m("words/s", draws(rng, 100.0, 0.01, 8))},
            substitutes=[{"original": "PyTorch 0.1.12", "used": "PyTorch 2.13.0", "why": "test data"}],
            params={"batch": 128, "seq_len": 128, "hidden": 1024, "emb": 1024, "layers": 1, "vocab": 33279},
        ),
        s003(name, "pytorch/eager_static/forward", per_batch(rng, 0.2406, 0.01)),
        s003(name, "pytorch/eager_static/train", per_batch(rng, 2.2, 0.01)),
        s003(name, "tensorflow/graph_static/forward", per_batch(rng, 0.12, 0.01)),
        # CPU claims of 003: TF graph beats PyTorch eager on training (holds), and PyTorch JIT (reversed)
        s003(name, "tensorflow/graph_static/train", per_batch(rng, 0.9, 0.01)),
        s003(name, "pytorch/jit_static/train", per_batch(rng, 0.5, 0.01)),
    ]
    cp = {
        "gflops": peak,
        "best_size": 1024,
        "per_size": {"1024": peak},
        "backend": "numpy",
        "library": "numpy (test data)",
        "dtype": "float32",
        "repeats": 10,
        "cpu_count": 8,
        "load_avg_1min": 0.1,
        "method": "test data: a fixed value, not measured",
        "measured": "2026-11-22T00:00:00Z",
    }
    write_run(name, host([], peak, env, ZEN3), cells, cp)


P003 = {"batch": 128, "seq_len": 50, "hidden": 256, "layers": 3,
        "dataset": "PTB (word; vocab 10001; stride-3 windows)"}


def per_batch(rng: random.Random, median: float, rel_sd: float, n: int = 12) -> dict:
    """{"time_per_batch": n seconds-per-batch samples drawn around `median`}."""
    return {"time_per_batch": metric("s", draws(rng, median, rel_sd, n), False, "test")}


def s003(rid: str, rest: str, metrics: dict) -> dict:
    fw = rest.split("/")[0]
    framework, version = ("torch", "1.3.0") if fw == "pytorch" else ("tensorflow", "2.0.0")
    stack = "torch-1.3" if fw == "pytorch" else "tf-2.0"
    return cell(rid, f"003/{rest}", stack, "cpu", framework, version, metrics, params=dict(P003))


def haswell_same() -> None:
    rng = random.Random(63)
    rid = "haswell-same"
    cells = [
        s003(rid, "pytorch/eager_static/forward", per_batch(rng, 0.2406, 0.005)),
        s003(rid, "pytorch/eager_static/train", per_batch(rng, 1.0352 * 1.3, 0.005)),
        s003(rid, "tensorflow/graph_static/forward", per_batch(rng, 0.236 * 0.7, 0.005)),
    ]
    write_run(rid, host([], None, {"OMP_NUM_THREADS": "6"}, HASWELL6), cells, None)


def v100_other() -> None:
    rng = random.Random(100)
    rid = "v100-other"
    m = lambda u, v: metric(u, v, True, "test")  # noqa: E731
    cells = [
        cell(rid, "000/tensorflow/cudnn_lstm/b128-s30-h512", "tf-1.2", "gpu", "tensorflow", "1.2.1",
             {"train_time_per_example": m("ms", draws(rng, 0.1404 * 7.0 / 15.7, 0.004, 30)),  # similar
              "forward_time_per_example": m("ms", draws(rng, 0.079 / 5, 0.004, 30))}),  # higher
        cell(rid, "000/tensorflow/fused_lstm/b128-s30-h512", "tf-1.2", "gpu", "tensorflow", "1.2.1",
             {"train_time_per_example": m("ms", draws(rng, 0.2052, 0.004, 30))}),  # lower
    ]
    write_run(rid, host(["Tesla V100-SXM2-16GB"], None, {"CUDA_VISIBLE_DEVICES": "0"}), cells, None)


if __name__ == "__main__":
    m40_same()
    cpu_run("cpu-a", 1, 20.0, 100.0, {"OMP_NUM_THREADS": "8"})
    cpu_run("cpu-b", 2, 25.0, 100.0, {"OMP_NUM_THREADS": "4"})
    haswell_same()
    v100_other()
    print("wrote", ", ".join(sorted(p.name for p in HERE.iterdir())))
