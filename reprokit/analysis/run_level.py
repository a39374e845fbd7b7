"""The between-run component of a re-run's prediction interval, from this host's own history.

A run's processes sample the variation between processes; a re-run on another day also moves as a
whole (Kalibera & Jones' multi-level design: an interval built from one run's processes cannot cover
a level it never sampled). The model, on the logarithm of a cell's central value (times and rates
alike):

    run median of run i = mu + r_i + e_i,   r_i ~ N(0, b) between runs,   e_i ~ N(0, w_i) within run i

w_i is run i's own within-run variance of its median (s^2 / K: s the standard deviation of the log
process medians, K processes). A run of one process has no s of its own: its w is the cell's pooled
process variance from the cell's runs of several processes (a one-process median carries the whole
process variance; counting it as 0 put that variance into b), and without such a run the record is
left out. The between-run excess b is estimated from the host's history (run.json `history`,
written when a run starts: reprokit/run/host_history.py): for every cell (cell id, metric, stack,
precision) and code version (reprokit/plan/code_version.py; the runs of kits that recorded none are
one version) with m >= 2 earlier runs, the variance of their log medians made median-unbiased (over
its chi-square median factor) minus their mean w, floored at 0; b is the median of these over the
cells, one figure for the host (`estimate`), with sum(m - 1) degrees of freedom.

The process variance s^2 of the cell itself is pooled the same way: this run's K - 1 degrees of
freedom with the cell's earlier runs of several processes on this host, of its code version
(`pooled_within`, the within-group mean square of a one-way design), so three processes no longer
make the interval pay t(0.975, 2) = 4.3 when the host has measured the cell's process spread before.

Fewer than 2 earlier runs of every cell: the calibrated default of the device class
(reprokit/data/run_variation.yaml), labelled "not calibrated on this host"; a class with no default,
or a run that recorded no history (kits before it): no run term, and the interval says it covers
processes only.

The re-run prediction interval (95 %) of a cell measured in K >= 3 processes is then

    log median +- t(0.975, df) x sqrt(2 x (s_pooled^2 / K + b))

(a new run's median minus this one's: both carry the within and the between-run variance), df the
Welch-Satterthwaite combination of the pooled within part's degrees of freedom (K - 1 without a
history) and b's own (a default b is taken as known). Without a run term the interval is the
processes' own.
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


def key(cell_id: str, metric: str, stack: str | None, precision: str) -> str:
    """A cell's key in a history (reprokit/run/host_history.py)."""
    return f"{cell_id} | {metric} | {stack or '-'} | {precision}"


def records(history: dict | None, cell_id: str, metric: str, stack: str | None, precision: str,
            code: str | None = None) -> list:
    """The history's records of one cell and metric (none: []); with `code`, those of that code version
    only."""
    found = ((history or {}).get("cells") or {}).get(key(cell_id, metric, stack, precision)) or []
    return [r for r in found if code is None or r.get("code") == code]


def by_code(records) -> list[list]:
    """A cell's records in groups of one code version each (records that name none form one group:
    kits before code versions were recorded)."""
    groups: dict = {}
    for r in records:
        groups.setdefault(r.get("code"), []).append(r)
    return list(groups.values())


def _own(entry: dict) -> tuple[float, int] | None:
    """(sd_log^2, K - 1) of a record measured in K >= 2 processes; None for one process."""
    sd, k = entry.get("sd_log"), int(entry.get("processes") or 1)
    return (float(sd) ** 2, k - 1) if sd is not None and k >= 2 else None


def pooled_within(records, own: tuple[float, int] | None = None) -> tuple[float, int] | None:
    """(pooled process variance on the log scale, its degrees of freedom) of a cell: the records of its
    runs of several processes, with `own` (this run's s^2, K - 1) when given; None with none."""
    parts = [p for p in (_own(r) for r in records) if p is not None] + ([own] if own else [])
    df = sum(d for _, d in parts)
    return (sum(v * d for v, d in parts) / df, df) if df else None


def within(entry: dict, pooled: float | None) -> float | None:
    """w of one earlier run's record: its own sd^2 / K; for a run of one process the cell's pooled
    process variance `pooled` (None: unknown, the record cannot count)."""
    own = _own(entry)
    if own is not None:
        return own[0] / (own[1] + 1)
    return pooled / int(entry.get("processes") or 1) if pooled is not None else None


def estimate(history: dict | None) -> tuple[float, int, int] | None:
    """(b, its degrees of freedom, cells counted) from the history's cells with >= 2 earlier runs of one
    code version (a cell whose code changed counts once per version: the move between versions is a
    change of code, not of run); None when no cell has that many. A cell's variance of its log run
    medians over its median chi-square factor is a median-unbiased estimate of its whole run-to-run
    variance w + b; less their mean within-run part w (known from the runs' own processes), floored at
    0, it is a median-unbiased estimate of b (the factor scales the variance, not the difference: it
    must not scale w). b is their median over the cells, robust to a few cells whose data changed
    between runs (a mean let such cells widen every interval of the host: docs/verdicts.md)."""
    from scipy.stats import chi2

    per_cell, df = [], 0
    for records in (g for rs in ((history or {}).get("cells") or {}).values() for g in by_code(rs)):
        pooled = pooled_within(records)
        kept = [(r, w) for r in records if r.get("median") and r["median"] > 0
                and (w := within(r, pooled[0] if pooled else None)) is not None]
        if len(kept) < HISTORY_MIN_RUNS:
            continue
        logs = [math.log(r["median"]) for r, _ in kept]
        d = len(logs) - 1
        total = statistics.variance(logs) / (float(chi2.median(d)) / d)  # w + b, median-unbiased
        per_cell.append(max(0.0, total - statistics.fmean(w for _, w in kept)))
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


def widen(summary: dict, run_term: RunTerm, records=()) -> dict:
    """The summary with its re-run prediction interval widened by the run term (a copy). The within-run
    part s^2 / K is read back from the processes' own interval (t(0.975, K - 1) x s x sqrt(2 / K) on the
    log scale: reprokit/analysis/stats.py between_process_ci), so a median's interval and an
    as-published figure's are widened alike, and pooled with `records`, the host's history of the same
    cell and metric (`pooled_within`). A summary without a prediction interval, or with bounds that are
    not all positive, is returned as it is, with `pi_covers`."""
    out = dict(summary)
    lo, hi = summary.get("pi_low"), summary.get("pi_high")
    k = int(summary.get("processes") or 0)
    out["pi_run"] = run_term.doc() if lo is not None else None
    out["pi_covers"] = ["process"] if lo is not None else None
    if lo is None or hi is None or k < 3 or run_term.variance is None or lo <= 0 or hi <= lo:
        return out
    from reprokit.analysis import stats

    conf = float(summary.get("ci_confidence") or stats.DEFAULT_CONFIDENCE)
    q = 1 - (1 - conf) / 2
    s2 = (math.log(hi / lo) / 2 / stats.t_quantile(q, k - 1)) ** 2 * k / 2  # this run's s^2
    s2, df_a = pooled_within(records, (s2, k - 1)) or (s2, k - 1)
    a, b = s2 / k, run_term.variance
    df = satterthwaite(a, df_a, b, run_term.df)
    half = stats.t_quantile(q, df) * math.sqrt(2 * (a + b))
    # never narrower than the processes' interval of the same within-run estimate: a small, well-known
    # b raises the degrees of freedom, and t would shrink faster than the variance grows
    half = max(half, stats.t_quantile(q, df_a) * math.sqrt(2 * a))
    centre = math.sqrt(lo * hi)  # the interval is symmetric in logs
    out["pi_low"], out["pi_high"] = centre * math.exp(-half), centre * math.exp(half)
    out["pi_covers"] = ["process", "run"]
    out["pi_within_df"] = df_a
    return out
