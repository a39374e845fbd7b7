"""Summary statistics of one metric's samples: median with a distribution-free interval, mean, spread.

Pure functions on lists of numbers; no I/O. Every interval says how it was made (`ci_method`), what
it covers (`ci_coverage`, exact) and a short label (`ci_label`, e.g. "95 % CI" or "93.8 % interval").

One process (the samples of one cell process are taken as independent, identically distributed):
  * n >= 6: the exact binomial order-statistic interval of the median [x_(k), x_(n-k+1)] (sorted
    samples, 1-based ranks), with the largest k such that P(Bin(n, 1/2) <= k-1) <= alpha/2. No
    normality assumed; its coverage is at least the nominal 95 % and is reported exactly (0.969 at
    n = 6).
  * 2 <= n < 6: no 95 % interval of that kind exists; the widest one, [min, max], is shown with its
    real coverage 1 - 2^(1-n) (93.75 % at n = 5, 50 % at n = 2) and labelled with it, never as a
    95 % CI.
  * n = 1: no interval.
Such an interval describes the process it came from. Medians of separate processes (and of runs
minutes apart on a shared machine) vary more than that, so it does not cover a re-run.

K >= 2 processes (`reproduce.py run --repeat K`, or the default design: reprokit/analysis/design.py; the
metric's `processes` lists each process's sample count): the unit of replication is the process
(Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013: the degrees of freedom are the
top-level repetitions, not the samples). Two intervals, named (Cumming & Maillardet 2006: a
95 % CI captures a re-run's estimate only about 83 % of the time):
  * the confidence interval (`ci_low`, `ci_high`, what verdicts and claims use): where the cell's central
    value lies with 95 % confidence, centred on the pooled median m, [m e^-h, m e^h] with
    h = t(0.975, K-1) x s / sqrt(K), s the standard deviation of the logarithms of the K process
    medians (each process median carries its iterations' noise, so both levels' variance is in s; on
    the log scale a time's interval is exactly the inverse of its rate's and never reaches zero; values
    that are not all positive use the same formula on the linear scale). `ci_covers` "median".
  * with K >= 3, the prediction interval for a re-run (`pi_low`, `pi_high`, `pi_label`): where the
    median of another run of K processes falls with 95 % probability, h = t(0.975, K-1) x s x
    sqrt(2/K). It is what scripts/bench_rerun_coverage.py calibrates against two runs back to back.
Coverage is nominal (normal process medians). `ci_levels` names the levels an interval resamples
(["iterations"] or ["processes", "iterations"]), `ci_covers` what it covers ("process": this process
only; "median": the central value over processes). `between` gives the process medians and their spread.

An order-statistic interval of the median is equivariant under monotone transforms: the interval of
items/s computed from seconds is exactly the transformed interval of the seconds.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

from reprokit import files
from reprokit.analysis import steady_state
from reprokit.reader.model import Run

DEFAULT_CONFIDENCE = 0.95
DEFAULT_NOISY_CV = 0.10
MIN_EXACT_N = 6  # smallest n with an exact 95% order-statistic interval


def order_statistic_ranks(n: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[int, int, float] | None:
    """(lower rank, upper rank, exact coverage), 1-based, of the median CI for n samples; None if none exists.

    The lower rank k is the largest with P(B <= k-1) <= alpha/2, B ~ Bin(n, 1/2);
    coverage = 1 - 2 P(B <= k-1).
    bench/precision.py's function (the stacks' stopping rule uses it), the one copy across the boundary."""
    return files.bench_module("precision").order_statistic_ranks(n, confidence)


def binomial_median_ci(
    samples: Sequence[float], confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float, float] | None:
    """(low, high, coverage) of the exact order-statistic CI of the median, or None when n is too small."""
    xs = sorted(float(x) for x in samples)
    ranks = order_statistic_ranks(len(xs), confidence)
    if ranks is None:
        return None
    lo, hi, coverage = ranks
    return xs[lo - 1], xs[hi - 1], coverage


def bootstrap_median_ci(
    samples: Sequence[float], confidence: float = DEFAULT_CONFIDENCE, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile-bootstrap CI of the median (deterministic: fixed seed). None for fewer than 2 samples."""
    xs = [float(x) for x in samples]
    if len(xs) < 2:
        return None
    rng = random.Random(seed)
    n = len(xs)
    meds = sorted(statistics.median(rng.choices(xs, k=n)) for _ in range(n_boot))
    alpha = 1.0 - confidence
    lo_i = int(math.floor(alpha / 2 * (n_boot - 1)))
    hi_i = int(math.ceil((1 - alpha / 2) * (n_boot - 1)))
    return meds[lo_i], meds[hi_i]


def _label(coverage: float | None, confidence: float) -> str:
    if coverage is None:
        return "no interval"
    if coverage >= confidence:
        return f"{confidence:.0%} CI".replace("%", " %")
    return f"{100 * coverage:.3g} % interval"


def median_ci(samples: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """The interval of the median of one process's samples (see the module docstring)."""
    xs = sorted(float(x) for x in samples)
    n = len(xs)
    exact = binomial_median_ci(xs, confidence)
    if exact is not None:
        lo, hi, coverage = exact
        return {"ci_low": lo, "ci_high": hi, "ci_method": "binomial_order_statistic", "ci_coverage": coverage,
                "ci_label": _label(coverage, confidence), "ci_note": None}
    if n >= 2:
        coverage = 1.0 - 2.0 ** (1 - n)
        return {"ci_low": xs[0], "ci_high": xs[-1], "ci_method": "min_max", "ci_coverage": coverage,
                "ci_label": _label(coverage, confidence),
                "ci_note": f"n={n} < {MIN_EXACT_N}: no {confidence:.0%} order-statistic interval exists; "
                f"[min, max] covers the median with probability {coverage:.2%}"}
    return {"ci_low": None, "ci_high": None, "ci_method": "none", "ci_coverage": None,
            "ci_label": _label(None, confidence), "ci_note": f"n={n}: a single sample has no interval"}


def _percent(confidence: float) -> str:
    """'95 %', '98.75 %': the level as it is (a Bonferroni-corrected one is not rounded up)."""
    return f"{100 * confidence:.4g} %"


def t_quantile(p: float, df: int) -> float:
    """The p quantile of Student's t with df degrees of freedom (scipy)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def between_process_ci(groups: list[list[float]], confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """The intervals over K >= 2 processes (module docstring): centre the pooled median; the confidence
    interval's half-width t(1 - alpha/2, K - 1) x s / sqrt(K), and with K >= 3 the re-run prediction
    interval's t(1 - alpha/2, K - 1) x s x sqrt(2 / K), s the standard deviation of the K process
    medians (of their logarithms where all are positive)."""
    pooled = [x for g in groups for x in g]
    medians = [statistics.median(g) for g in groups]
    k = len(medians)
    centre = statistics.median(pooled)
    s = statistics.stdev(medians)
    t = t_quantile(1 - (1 - confidence) / 2, k - 1)
    log_scale = centre > 0 and all(m > 0 for m in medians)
    spread = statistics.stdev([math.log(m) for m in medians]) if log_scale else s

    def around(factor: float) -> tuple[float, float]:
        half = t * spread * factor
        if log_scale:  # times and rates: multiplicative spread, never a negative bound, rate = 1 / time
            return centre * math.exp(-half), centre * math.exp(half)
        return centre - half, centre + half

    lo, hi = around(math.sqrt(1.0 / k))
    pi = around(math.sqrt(2.0 / k)) if k >= 3 else (None, None)
    within = [median_ci(g, confidence) for g in groups]
    halves = [(w["ci_high"] - w["ci_low"]) / 2 / abs(statistics.median(g))
              for w, g in zip(within, groups) if w["ci_low"] is not None and statistics.median(g)]
    range_rel = (max(medians) - min(medians)) / abs(centre) if centre else None
    level = _percent(confidence)
    return {
        "ci_low": lo, "ci_high": hi, "ci_method": "process_t",
        "ci_coverage": confidence, "ci_label": f"{level} CI over {k} processes",
        "ci_levels": ["processes", "iterations"], "ci_covers": "median",
        "ci_note": f"{k} processes: the cell's central value lies in it with confidence {level} (t with "
        f"{k - 1} degrees of freedom on the {'logarithms of the ' if log_scale else ''}process medians, "
        "both levels' variance included; nominal coverage, Kalibera & Jones 2013)"
        + (f"; a re-run's median falls in the wider prediction interval [{pi[0]:.4g}, {pi[1]:.4g}]"
           if pi[0] is not None else "; with 2 processes no prediction interval for a re-run is given"),
        "pi_low": pi[0], "pi_high": pi[1],
        "pi_label": None if pi[0] is None else f"{level} prediction interval for a re-run of {k} processes",
        "between": {
            "processes": k,
            "medians": medians,
            "spread_rel": range_rel,
            "sd_rel": s / abs(centre) if centre else None,
            "within_half_width_rel": statistics.median(halves) if halves else None,
        },
    }


ONE_PROCESS_NOTE = ("one process: the interval covers that process only (iterations are its only level); "
                    "the median of a re-run moves more than that (reprokit/data/rerun_coverage.json)")


def summarize(
    samples: Sequence[float],
    stop_reason: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    noisy_cv: float = DEFAULT_NOISY_CV,
    processes: Sequence[int] | None = None,
) -> dict:
    """Median, interval of the median, mean, stdev, CV, n, noisy flag and the sampler's stop reason.

    Returns {"n", "median", "mean", "stdev", "cv", "min", "max", "ci_low", "ci_high", "ci_method",
    "ci_coverage", "ci_label", "ci_confidence", "ci_note", "processes", "between", "noisy",
    "noisy_threshold", "stop_reason"}. stdev is the sample standard deviation (n-1); cv = stdev /
    |mean|; noisy = cv > noisy_cv (None when n < 2). `processes` (sample count per process, from
    `run --repeat K`) switches to the between-process interval. An empty list gives n = 0 and None
    everywhere.
    """
    xs = [float(x) for x in samples]
    n = len(xs)
    groups = steady_state.split_processes(xs, processes)
    out: dict = {"n": n, "stop_reason": stop_reason, "ci_confidence": confidence, "noisy_threshold": noisy_cv,
                 "processes": len(groups), "between": None}
    if n == 0:
        out.update(
            median=None,
            mean=None,
            stdev=None,
            cv=None,
            min=None,
            max=None,
            ci_low=None,
            ci_high=None,
            ci_method="none",
            ci_coverage=None,
            ci_label="no interval",
            ci_note="no samples",
            noisy=None,
            processes=0,
        )
        return out
    mean = statistics.fmean(xs)
    stdev = statistics.stdev(xs) if n >= 2 else None
    cv = stdev / abs(mean) if stdev is not None and mean != 0 else None
    out.update(
        median=statistics.median(xs),
        mean=mean,
        stdev=stdev,
        cv=cv,
        min=min(xs),
        max=max(xs),
        noisy=(cv > noisy_cv) if cv is not None else None,
    )
    if len(groups) > 1:
        out.update(between_process_ci(groups, confidence))
    else:
        one = median_ci(xs, confidence)
        one.update(ci_levels=["iterations"], ci_covers="process",
                   ci_note="; ".join(x for x in (one["ci_note"], ONE_PROCESS_NOTE) if x))
        out.update(one)
    return out


def summarize_metric(metric: dict, steady: bool = True, **kw) -> dict:
    """`summarize` of one metric of a cell result (its `samples`, `stop_reason` and, from a run with
    --repeat K, `processes`), plus its unit. With `steady` (the default) each process's samples are
    first cut to its steady state (reprokit/analysis/steady_state.py): `steady_state` says per process
    what was detected and dropped, and `n_recorded` how many samples the metric holds."""
    samples, processes, ss = metric.get("samples") or [], metric.get("processes"), None
    if steady and samples:
        ss = steady_state.of_metric(metric)
        samples, processes = ss.pop("samples"), ss.pop("processes")
    s = summarize(samples, metric.get("stop_reason"), processes=processes, **kw)
    s["unit"] = metric.get("unit")
    s["steady_state"] = ss
    s["n_recorded"] = len(metric.get("samples") or [])
    return s


def cell_confidence(run: Run | None, cell_id: str | None) -> float:
    """The confidence of the cell's intervals: a sequentially designed cell's (run.json design.cells,
    1 - alpha / looks: reprokit/plan/design.py sequential_settings), else DEFAULT_CONFIDENCE."""
    own = run.design.cell(cell_id or "") if run is not None and run.design is not None else None
    return float(own.confidence) if own is not None and own.sequential and own.confidence \
        else DEFAULT_CONFIDENCE


def interval(summary: dict) -> tuple[float, float] | None:
    """(low, high) of a summary's CI; a single sample gives the degenerate (x, x); None without data."""
    if summary.get("ci_low") is not None and summary.get("ci_high") is not None:
        return summary["ci_low"], summary["ci_high"]
    if summary.get("median") is not None:
        return summary["median"], summary["median"]
    return None
