"""Summary statistics of one metric's samples: median with a distribution-free 95% CI, mean, spread.

Pure functions on lists of numbers; no I/O.

The confidence interval of the median is the exact binomial order-statistic interval
[x_(k), x_(n-k+1)] (sorted samples, 1-based ranks), with the largest k such that
P(Bin(n, 1/2) <= k-1) <= alpha/2. It assumes only independent, identically distributed samples
(no normality), its coverage is at least the nominal level and is reported exactly
(`ci_coverage`, e.g. 0.969 for n=6). At 95% it exists from n = 6 on. For 2 <= n < 6 no such interval
exists; the summary then falls back to a percentile bootstrap of the median (`ci_method`
"bootstrap_percentile"), which is known to be too narrow for so few samples and is flagged as such.
`bootstrap_median_ci` is also available on its own as a cross-check.

An order-statistic interval of the median is equivariant under monotone transforms: the interval of
items/s computed from seconds is exactly the transformed interval of the seconds.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

DEFAULT_CONFIDENCE = 0.95
DEFAULT_NOISY_CV = 0.10
MIN_EXACT_N = 6  # smallest n with an exact 95% order-statistic interval


def _binom_half_pmf(n: int, i: int) -> float:
    """P(Bin(n, 1/2) = i), in log space so it works for any n."""
    return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + n * math.log(0.5))


def order_statistic_ranks(n: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[int, int, float] | None:
    """(lower rank, upper rank, exact coverage), 1-based, of the median CI for n samples; None if none exists.

    The lower rank k is the largest with P(B <= k-1) <= alpha/2, B ~ Bin(n, 1/2);
    coverage = 1 - 2 P(B <= k-1).
    """
    alpha = 1.0 - confidence
    k, cum = 0, 0.0  # cum = P(B <= k-1)
    while k + 1 <= (n + 1) // 2:
        nxt = cum + _binom_half_pmf(n, k)  # P(B <= k)
        if nxt > alpha / 2:
            break
        cum, k = nxt, k + 1
    if k == 0:
        return None
    return k, n - k + 1, 1.0 - 2.0 * cum


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


def median_ci(samples: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """The CI used by `summarize`: exact order statistics when possible, else bootstrap, else none."""
    exact = binomial_median_ci(samples, confidence)
    if exact is not None:
        lo, hi, coverage = exact
        return {
            "ci_low": lo,
            "ci_high": hi,
            "ci_method": "binomial_order_statistic",
            "ci_coverage": coverage,
            "ci_note": None,
        }
    n = len(samples)
    boot = bootstrap_median_ci(samples, confidence)
    if boot is not None:
        return {
            "ci_low": boot[0],
            "ci_high": boot[1],
            "ci_method": "bootstrap_percentile",
            "ci_coverage": None,
            "ci_note": f"n={n} < {MIN_EXACT_N}: no distribution-free {confidence:.0%} interval exists; "
            "percentile bootstrap, likely too narrow",
        }
    return {
        "ci_low": None,
        "ci_high": None,
        "ci_method": "none",
        "ci_coverage": None,
        "ci_note": f"n={n}: a single sample has no interval",
    }


def summarize(
    samples: Sequence[float],
    stop_reason: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    noisy_cv: float = DEFAULT_NOISY_CV,
) -> dict:
    """Median, CI of the median, mean, stdev, CV, n, noisy flag and the sampler's stop reason.

    Returns {"n", "median", "mean", "stdev", "cv", "min", "max", "ci_low", "ci_high", "ci_method",
    "ci_coverage", "ci_confidence", "ci_note", "noisy", "noisy_threshold", "stop_reason"}.
    stdev is the sample standard deviation (n-1); cv = stdev / |mean|; noisy = cv > noisy_cv
    (None when n < 2). An empty list gives n = 0 and None everywhere.
    """
    xs = [float(x) for x in samples]
    n = len(xs)
    out: dict = {"n": n, "stop_reason": stop_reason, "ci_confidence": confidence, "noisy_threshold": noisy_cv}
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
            ci_note="no samples",
            noisy=None,
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
    out.update(median_ci(xs, confidence))
    return out


def summarize_metric(metric: dict, **kw) -> dict:
    """`summarize` of one metric of a cell result (its `samples` and `stop_reason`), plus its unit."""
    s = summarize(metric.get("samples") or [], metric.get("stop_reason"), **kw)
    s["unit"] = metric.get("unit")
    return s


def summarize_cell(cell: dict, **kw) -> dict[str, dict]:
    """{metric name: summarize_metric(...)} for every metric of a cell result."""
    return {name: summarize_metric(m, **kw) for name, m in (cell.get("metrics") or {}).items()}


def interval(summary: dict) -> tuple[float, float] | None:
    """(low, high) of a summary's CI; a single sample gives the degenerate (x, x); None without data."""
    if summary.get("ci_low") is not None and summary.get("ci_high") is not None:
        return summary["ci_low"], summary["ci_high"]
    if summary.get("median") is not None:
        return summary["median"], summary["median"]
    return None
