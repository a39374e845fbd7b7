#!/usr/bin/env python3
"""How wide must a calibrated re-run interval be against the drift it covers? A simulation.

    python scripts/rerun_interval_bound.py [--draws N] [--seed S] [--processes K ...]

Two runs of K processes each; every process median is an independent normal draw (pure process-level
noise, no run-level drift). Run A's 95 % re-run interval is the kit's (reprokit/analysis/stats.py): the mean
of its process medians +/- t(0.975, K - 1) x s x sqrt(2 / K). Printed per K: how often run B's mean falls
inside it (its coverage, 95 % when the model holds), and the intervals' median half-width against the
median and the root-mean-square of |B - A| (the run-to-run drift), the two ratios
scripts/bench_rerun_coverage.py reports. A median half-width of at most twice the drift together with 90 %
coverage was once a calibration target: this shows which K, if any, allows it when the drift is only noise.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats


def simulate(k: int, draws: int, rng: np.random.Generator) -> dict:
    a, b = rng.standard_normal((draws, k)), rng.standard_normal((draws, k))
    half = stats.t.ppf(0.975, k - 1) * a.std(axis=1, ddof=1) * np.sqrt(2 / k)
    drift = np.abs(b.mean(axis=1) - a.mean(axis=1))
    return {"processes": k, "t": float(stats.t.ppf(0.975, k - 1)), "coverage": float(np.mean(drift <= half)),
            "over_median_drift": float(np.median(half) / np.median(drift)),
            "over_rms_drift": float(np.median(half) / np.sqrt(np.mean(drift ** 2)))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--draws", type=int, default=200_000, help="simulated pairs of runs per K")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--processes", type=int, nargs="+", default=[3, 5, 10, 20, 60], metavar="K")
    args = p.parse_args(argv)
    if args.draws < 1000 or min(args.processes) < 2:
        p.error("--draws must be at least 1000 and every K at least 2")
    rng = np.random.default_rng(args.seed)
    print("K   t(0.975)  coverage  half-width / median drift  half-width / rms drift")
    for k in args.processes:
        r = simulate(k, args.draws, rng)
        print(f"{k:<3} {r['t']:8.3f}  {r['coverage']:8.1%}  {r['over_median_drift']:25.2f}  "
              f"{r['over_rms_drift']:22.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
