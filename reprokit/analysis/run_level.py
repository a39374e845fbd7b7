"""The between-run component of a re-run's prediction interval, from this host's own history.

A run's processes sample the variation between processes; a re-run on another day also moves as a
whole (Kalibera & Jones' multi-level design: an interval built from one run's processes cannot cover
a level it never sampled). The model, on the logarithm of a cell's central value (times and rates
alike):

    run median of run i = mu + r_i + e_i,   r_i ~ N(0, b) between runs,   e_i ~ N(0, w_i) within run i

w_i is run i's own within-run variance of its median (s^2 / K: s the standard deviation of the log
process medians, K processes). The between-run excess b is estimated from the host's history
(run.json `history`, written when a run starts: reprokit/run/host_history.py): for every cell
(cell id, metric, stack, precision) with m >= 2 earlier runs, the variance of their log medians minus
their mean w, floored at 0, scaled to be median-unbiased; b is the median of these over the cells,
one figure for the host (`estimate`), with sum(m - 1) degrees of freedom. Fewer than 2 earlier runs
of every cell: the calibrated default of the device class (reprokit/data/run_variation.yaml),
labelled "not calibrated on this host"; a class with no default, or a run that recorded no history
(kits before it): no run term, and the
interval says it covers processes only.

The re-run prediction interval (95 %) of a cell measured in K >= 3 processes is then

    log median +- t(0.975, df) x sqrt(2 x (s^2 / K + b))

(a new run's median minus this one's: both carry the within and the between-run variance), df the
Welch-Satterthwaite combination of K - 1 (the within part) and b's own degrees of freedom (a default
b is taken as known), and never narrower than the processes' own interval.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from reprokit import kitdata

HISTORY_MIN_RUNS = 2  # earlier runs of one cell before its variance counts


@dataclass(frozen=True)
class RunTerm:
    variance: float | None  # b on the log scale; None: no run term
    df: int  # degrees of freedom of b (0 for a default or none)
    basis: str  # "history", "default" or "none"
    runs: int  # earlier runs of this host the history holds
    cells: int  # cells whose history counted
    text: str  # what the interval covers, in words

    def doc(self) -> dict:
        return {"variance": self.variance, "df": self.df, "basis": self.basis, "runs": self.runs,
                "cells": self.cells, "text": self.text}


def within(entry: dict) -> float:
    """w of one earlier run's record: (sd of its log process medians)^2 / K; 0 for one process."""
    sd, k = entry.get("sd_log"), int(entry.get("processes") or 1)
    return float(sd) ** 2 / k if sd is not None and k >= 2 else 0.0


def estimate(history: dict | None) -> tuple[float, int, int] | None:
    """(b, its degrees of freedom, cells counted) from the history's cells with >= 2 earlier runs; None
    when no cell has that many. Each cell's excess (variance of its log run medians minus their mean
    within-run part, floored at 0) over its median chi-square factor is a median-unbiased estimate of
    b; b is their median over the cells, robust to a few cells whose code or data changed between runs
    (a mean let such cells widen every interval of the host: docs/verdicts.md)."""
    from scipy.stats import chi2

    per_cell, df = [], 0
    for records in ((history or {}).get("cells") or {}).values():
        kept = [r for r in records if r.get("median") and r["median"] > 0]
        if len(kept) < HISTORY_MIN_RUNS:
            continue
        logs = [math.log(r["median"]) for r in kept]
        excess = max(0.0, statistics.variance(logs) - statistics.fmean(within(r) for r in kept))
        d = len(logs) - 1
        per_cell.append(excess / (float(chi2.median(d)) / d))
        df += d
    return (statistics.median(per_cell), df, len(per_cell)) if per_cell else None


def term(history: dict | None, device: str) -> RunTerm:
    """The run term for a cell of device class `device` ("cpu" or "gpu") of a run with `history`
    (None: a run that recorded none, from before histories were kept: no run term)."""
    if history is None:
        return RunTerm(None, 0, "not_recorded", 0, 0, "")
    runs = len(history.get("runs") or [])
    got = estimate(history)
    if got is not None:
        b, df, cells = got
        return RunTerm(b, df, "history", runs, cells,
                       f"run (this host's history: {runs} earlier run{'s' if runs != 1 else ''}, "
                       f"{cells} cell{'s' if cells != 1 else ''}, {df} df)")
    entry = (kitdata.load("run_variation").get("classes") or {}).get(device) or {}
    if entry.get("sd_log") is not None:
        sd = float(entry["sd_log"])
        return RunTerm(sd * sd, 0, "default", runs, 0,
                       f"run (the kit's {device.upper()} default, not calibrated on this host)")
    return RunTerm(None, 0, "none", runs, 0, "")


def satterthwaite(a: float, df_a: int, b: float, df_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a + b, each estimated with its own df; a default b
    (df 0) is taken as known (infinite df)."""
    if a + b <= 0:
        return float(df_a)
    denom = a * a / df_a + (b * b / df_b if df_b else 0.0)
    return (a + b) ** 2 / denom if denom > 0 else float("inf")


def widen(summary: dict, run_term: RunTerm) -> dict:
    """The summary with its re-run prediction interval widened by the run term (a copy). The within-run
    part s^2 / K is read back from the processes' own interval (t(0.975, K - 1) x s x sqrt(2 / K) on the
    log scale: reprokit/analysis/stats.py between_process_ci), so a median's interval and an
    as-published figure's are widened alike. A summary without a prediction interval, or with bounds
    that are not all positive, is returned as it is, with `pi_covers`."""
    out = dict(summary)
    lo, hi = summary.get("pi_low"), summary.get("pi_high")
    k = int(summary.get("processes") or 0)
    out["pi_run"] = run_term.doc() if lo is not None else None
    out["pi_covers"] = ["process"] if lo is not None else None
    if lo is None or hi is None or k < 3 or run_term.variance is None or lo <= 0 or hi <= lo:
        return out
    from reprokit.analysis import stats

    conf = float(summary.get("ci_confidence") or stats.DEFAULT_CONFIDENCE)
    own = math.log(hi / lo) / 2  # the processes' own half-width, in logs
    a = (own / stats.t_quantile(1 - (1 - conf) / 2, k - 1)) ** 2 / 2
    b = run_term.variance
    df = satterthwaite(a, k - 1, b, run_term.df)
    half = stats.t_quantile(1 - (1 - conf) / 2, df) * math.sqrt(2 * (a + b))
    # never narrower than the processes' own interval: a small, well-known b raises the degrees of
    # freedom, and t would shrink faster than the variance grows
    half = max(half, own)
    centre = math.sqrt(lo * hi)  # the interval is symmetric in logs
    out["pi_low"], out["pi_high"] = centre * math.exp(-half), centre * math.exp(half)
    out["pi_covers"] = ["process", "run"]
    return out
