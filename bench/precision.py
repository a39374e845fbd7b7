"""Adaptive stopping for timing.sample(): stop once the median is known precisely enough.

Runs inside old stacks: Python 3.5 syntax (2.7-compatible), standard library only, never imports
reprokit (reprokit/analysis/stats.py loads this module's order_statistic_ranks: one copy of the ranks;
tests check that the host's median interval agrees with median_ci here).

    from precision import median_precision_stop
    stop = median_precision_stop(rel_half_width=0.02)      # 2 % of the median
    timing.sample(step, budget, should_stop=stop)           # stop_reason "precision_reached"

The interval is the exact binomial order-statistic confidence interval of the median of the raw
seconds, [x_(k), x_(n-k+1)] with the largest k such that P(Bin(n, 1/2) <= k-1) <= (1-confidence)/2.
It needs no distribution assumption; at 95 % it exists from 6 samples on, so the stop rule never
fires earlier. "Half-width" is (x_(n-k+1) - x_(k)) / 2, compared with rel_half_width * median.
Because the interval is made of order statistics it holds for any monotone transform of the
seconds too (ms per example, words/s), so stopping on raw seconds is enough for every metric.
"""
import math


def _pmf_half(n, i):
    """P(Bin(n, 1/2) = i), computed in log space (works for any n)."""
    return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + n * math.log(0.5))


def order_statistic_ranks(n, confidence=0.95):
    """(lower rank, upper rank, coverage), 1-based, of the median CI for n samples, or None."""
    alpha = 1.0 - confidence
    k, cum = 0, 0.0
    while k + 1 <= (n + 1) // 2:
        nxt = cum + _pmf_half(n, k)
        if nxt > alpha / 2:
            break
        cum, k = nxt, k + 1
    if k == 0:
        return None
    return k, n - k + 1, 1.0 - 2.0 * cum


def _median(xs):
    n = len(xs)
    mid = n // 2
    return xs[mid] if n % 2 else 0.5 * (xs[mid - 1] + xs[mid])


def median_ci(values, confidence=0.95):
    """(median, low, high) of the sorted values' exact median CI, or None when n is too small."""
    xs = sorted(values)
    ranks = order_statistic_ranks(len(xs), confidence)
    if ranks is None:
        return None
    lo, hi, _coverage = ranks
    return _median(xs), xs[lo - 1], xs[hi - 1]


def relative_half_width(values, confidence=0.95):
    """Half-width of the median CI divided by the median; None when no interval exists yet."""
    ci = median_ci(values, confidence)
    if ci is None:
        return None
    med, lo, hi = ci
    if med <= 0:
        return None
    return 0.5 * (hi - lo) / med


def median_precision_stop(rel_half_width=0.02, confidence=0.95, min_samples=6):
    """A `should_stop(raw_seconds)` callable for timing.sample().

    It returns True once at least `min_samples` raw times exist and the `confidence` CI of their
    median has a half-width of at most `rel_half_width` times the median (0.02 = 2 %).
    The budget still bounds the loop: max_samples and time_budget_s stop it when precision is
    never reached, and the sampler only asks after its own min_samples.
    """
    rel_half_width = float(rel_half_width)
    if not rel_half_width > 0:
        raise ValueError("rel_half_width must be > 0, got %r" % (rel_half_width,))
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1), got %r" % (confidence,))
    min_samples = max(int(min_samples), 2)

    def should_stop(raw_seconds):
        if len(raw_seconds) < min_samples:
            return False
        rel = relative_half_width(raw_seconds, confidence)
        return rel is not None and rel <= rel_half_width

    should_stop.rel_half_width = rel_half_width
    should_stop.confidence = confidence
    should_stop.description = ("stop when the %d%% CI of the median (exact order statistics) has a "
                               "half-width <= %.3g%% of the median" % (round(100 * confidence),
                                                                       100 * rel_half_width))
    return should_stop
