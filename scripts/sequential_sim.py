#!/usr/bin/env python3
"""Does the sequential design's stopping rule keep its error rate? A simulation with known truth.

    python scripts/sequential_sim.py [--trials N] [--seed S]

A cell that decides runs processes in rounds and is looked at after each of processes first_look..
max_processes (reprokit/data/cell_costs.yaml design.sequential); at each look the kit's interval over the
process medians (reprokit/analysis/stats.py between_process_ci, the very function the verdicts use) at
the per-look confidence 1 - alpha / looks is put against a published value's band (published x (1 +-
10 %)): inside -> REPRODUCED, entirely above or below -> DEVIATES, else another process. The truth is
known: the central value the interval estimates (the geometric mean of the process medians, found from
a million draws). A *false decision* says REPRODUCED when the truth lies outside the band, or DEVIATES
when it lies inside or on the other side. Printed per noise model (normal, heavy-tailed t5, skewed
lognormal, and a slow mode: a fifth of the processes 30 % slower) and per position of the truth
against the band: the false-decision rate, the coverage of the interval the rule stopped on, how often
it decided, and the mean processes it used; beside it the same rule uncorrected (95 % at every look),
which shows why the correction is needed, and the fixed 3-process design (one look at 95 %).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reprokit.analysis import stats  # noqa: E402
from reprokit.plan import design  # noqa: E402

PROCESS_CV = 0.10  # process-level spread: the kit measured 11.9 % median drift between runs (2 cores)
ITERATION_CV = 0.05  # within a process
ITERATIONS = 6  # the steady-state detection's minimum
TOLERANCE = 0.10
# where the truth lies against the band: published = truth / ratio
RATIOS = (0.70, 0.85, 0.88, 0.95, 1.0, 1.05, 1.12, 1.15, 1.40)


def process_factor(model: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """n multiplicative process-level factors of the noise model (median about 1)."""
    if model == "normal":
        return np.exp(rng.normal(0, PROCESS_CV, n))
    if model == "t5":
        return np.exp(PROCESS_CV * rng.standard_t(5, n) / math.sqrt(5 / 3))
    if model == "lognormal-skew":  # a right-skewed spread: slow processes further out than fast ones
        return 1 + PROCESS_CV * (rng.lognormal(0, 0.8, n) - math.exp(0.32)) / 1.0
    if model == "slow-mode":
        slow = rng.random(n) < 0.2
        return np.exp(rng.normal(0, PROCESS_CV / 2, n)) * np.where(slow, 1.3, 1.0)
    raise ValueError(model)


MODELS = ("normal", "t5", "lognormal-skew", "slow-mode")


def truth(model: str, rng: np.random.Generator) -> float:
    """The central value the interval estimates: the geometric mean of the process medians."""
    f = process_factor(model, rng, 1_000_000)
    return float(np.exp(np.mean(np.log(f))))


def verdict(lo: float, hi: float, band: tuple[float, float]) -> str | None:
    if lo >= band[0] and hi <= band[1]:
        return "inside"
    if lo > band[1]:
        return "above"
    if hi < band[0]:
        return "below"
    return None


def where(t: float, band: tuple[float, float]) -> str:
    return "inside" if band[0] <= t <= band[1] else ("above" if t > band[1] else "below")


def run_rule(model: str, ratio: float, true: float, rng: np.random.Generator, looks: list[int],
             confidence: float, trials: int) -> dict:
    published = true / ratio
    band = (published * (1 - TOLERANCE), published * (1 + TOLERANCE))
    right = where(true, band)
    false = decided = covered = 0
    used = []
    k_max = max(looks)
    for _ in range(trials):
        f = process_factor(model, rng, k_max)
        groups = [list(f[i] * np.exp(rng.normal(0, ITERATION_CV, ITERATIONS))) for i in range(k_max)]
        for k in looks:
            ci = stats.between_process_ci(groups[:k], confidence)
            v = verdict(ci["ci_low"], ci["ci_high"], band)
            if v is not None or k == k_max:
                break
        used.append(k)
        covered += ci["ci_low"] <= true <= ci["ci_high"]
        if v is not None:
            decided += 1
            false += v != right
    return {"false_decisions": false / trials, "decided": decided / trials, "coverage": covered / trials,
            "mean_processes": float(np.mean(used)), "truth_is": right}


def simulate(trials: int, seed: int, models=MODELS, ratios=RATIOS) -> dict:
    seq = design.sequential_settings()
    looks = list(range(int(seq["first_look"]), int(seq["max_processes"]) + 1))
    rules = {"sequential": (looks, seq["confidence"]), "uncorrected": (looks, 0.95),
             "fixed-3": ([3], 0.95)}
    rng = np.random.default_rng(seed)
    out: dict = {"settings": {k: seq[k] for k in ("first_look", "max_processes", "alpha", "confidence")},
                 "trials": trials, "seed": seed, "process_cv": PROCESS_CV, "iteration_cv": ITERATION_CV,
                 "iterations": ITERATIONS, "tolerance": TOLERANCE, "rows": []}
    for model in models:
        true = truth(model, rng)
        for ratio in ratios:
            row = {"model": model, "truth_over_published": ratio}
            for name, (lk, conf) in rules.items():
                row[name] = run_rule(model, ratio, true, rng, lk, conf, trials)
            out["rows"].append(row)
    worst = {name: max(r[name]["false_decisions"] for r in out["rows"]) for name in rules}
    out["worst_false_decisions"] = worst
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=4000, help="simulated cells per noise model and position")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = p.parse_args(argv)
    if args.trials < 100:
        p.error("--trials must be at least 100")
    res = simulate(args.trials, args.seed)
    s = res["settings"]
    print(f"looks at processes {s['first_look']}-{s['max_processes']}, each at "
          f"{100 * s['confidence']:.4g} %; "
          f"{args.trials} trials per row; process CV {PROCESS_CV}, iteration CV {ITERATION_CV}, "
          f"{ITERATIONS} iterations, band +-{TOLERANCE:.0%}")
    print(f"{'noise':15} {'truth/pub':>9} {'truth':>6} | {'seq false':>9} {'cover':>6} {'decided':>7} "
          f"{'procs':>5} | {'uncorr false':>12} | {'fixed-3 false':>13} {'decided':>7}")
    for r in res["rows"]:
        q, u, f = r["sequential"], r["uncorrected"], r["fixed-3"]
        print(f"{r['model']:15} {r['truth_over_published']:9.2f} {q['truth_is']:>6} | "
              f"{q['false_decisions']:9.2%} {q['coverage']:6.1%} {q['decided']:7.1%} "
              f"{q['mean_processes']:5.2f} | "
              f"{u['false_decisions']:12.2%} | {f['false_decisions']:13.2%} {f['decided']:7.1%}")
    worst = res["worst_false_decisions"]
    print("worst false-decision rate: " + ", ".join(f"{k} {v:.2%}" for k, v in worst.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
