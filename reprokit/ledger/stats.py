"""The ledger's statistics over runs: pure functions of numbers, each with its threshold.

- `percentiles`: each run's percentile among the runs of one cell on one device model, by the rule
  Phoronix Test Suite / OpenBenchmarking.org state for their result percentiles: only once the
  reference distribution holds at least `PERCENTILE_MIN_RUNS` (10) results, and with results beyond
  `OUTLIER_SIGMAS` (3) standard deviations left out of that reference distribution.
- `between_units`: the spread between distinct units (GPUs, or machines) of one device model, once at
  least `UNITS_MIN` (2) units contributed.
- `history`: Conbench's rule for a change on the same hardware: a change is stated only against at
  least `HISTORY_MIN_EARLIER` (2) earlier runs.
- `disjoint_pairs`: the pairs of runs whose intervals do not overlap (the runs disagree beyond what
  each run's own interval allows).

A run here is one value (its median) with its interval [low, high] (None: the run has no interval).
Every sentence the page shows about these is made here, once.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence

PERCENTILE_MIN_RUNS = 10
OUTLIER_SIGMAS = 3.0
UNITS_MIN = 2
HISTORY_MIN_EARLIER = 2

PERCENTILE_RULE = (f"a run's percentile is stated once at least {PERCENTILE_MIN_RUNS} runs form the "
                   f"reference distribution (the rule of Phoronix Test Suite / OpenBenchmarking.org result "
                   f"percentiles); a run whose median lies more than {OUTLIER_SIGMAS:g} standard deviations "
                   "from the mean of the other runs' medians is left out of the reference distribution; "
                   "the percentile is the share of reference runs with a smaller median, counting equal "
                   "medians half")
UNITS_RULE = (f"between-unit spread, once at least {UNITS_MIN} units (a GPU by its hashed UUID, or for a CPU "
              "the machine) contributed: the standard deviation of the per-unit means of the runs' "
              "medians, relative to their mean; and, where some unit has two or more runs, the one-way "
              "random-effects (ANOVA) between-unit component sqrt(max(0, (MSB - MSW) / n0)) relative "
              "to the mean of all runs")
HISTORY_RULE = (f"a change is stated only when at least {HISTORY_MIN_EARLIER} earlier runs of the same cell, "
                "device model, stack and precision exist (Conbench's rule): the latest run's median "
                "against the range spanned by the earlier runs' intervals, the change given relative "
                "to the median of the earlier runs' medians")


def _pct(x: float) -> str:
    return f"{x:+.1f} %"


def _g(x: float) -> str:
    return f"{x:.4g}"


def outliers(values: Sequence[float]) -> list[bool]:
    """Whether each value lies more than OUTLIER_SIGMAS sample standard deviations from the mean of
    the other values (leave-one-out: a far value does not widen the deviation that judges it; with
    all values included, no value of fewer than 11 can lie 3 deviations out). Other values all equal:
    any value unlike them is out. Fewer than 3 values: none is out."""
    if len(values) < 3:
        return [False] * len(values)
    # in one pass (leave-one-out from the sums of all values, centred on their mean): many runs stay linear
    n = len(values)
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    centre = math.fsum(values) / n
    c = [v - centre for v in values]
    total, squares = math.fsum(c), math.fsum(x * x for x in c)
    out = []
    for x, v in zip(c, values):
        rest_equal = len(counts) == 1 or (len(counts) == 2 and counts[v] == 1)
        if rest_equal:
            other = next(k for k in counts if k != v) if len(counts) == 2 else v
            out.append(v != other)
            continue
        mean = (total - x) / (n - 1)
        sd = math.sqrt(max((squares - x * x - (n - 1) * mean * mean) / (n - 2), 0.0))
        out.append(abs(x - mean) > OUTLIER_SIGMAS * sd if sd > 0 else x != mean)
    return out


def percentile_rank(x: float, reference: Sequence[float]) -> float:
    """100 x (the reference values below x, plus half of those equal to x) / their number."""
    below = sum(v < x for v in reference)
    equal = sum(v == x for v in reference)
    return 100.0 * (below + 0.5 * equal) / len(reference)


def _ranks(values: Sequence[float], reference: Sequence[float]) -> list[float]:
    """percentile_rank of each value, by bisection of the sorted reference (linear-log, not quadratic)."""
    ref = sorted(reference)
    out = []
    for x in values:
        below, upto = bisect.bisect_left(ref, x), bisect.bisect_right(ref, x)
        out.append(100.0 * (below + 0.5 * (upto - below)) / len(ref))
    return out


def percentiles(values: Sequence[float]) -> dict:
    """Each run's percentile among `values` (the runs' medians), by PERCENTILE_RULE.

    Returns {"stated", "reference_runs", "excluded" (indices of the values left out as outliers),
    "ranks" (a percentile per value, None each when not stated), "text"}. Below the threshold the
    ranks are None and the text says so; outliers are only looked for from PERCENTILE_MIN_RUNS runs
    on (below it nothing is stated anyway)."""
    n = len(values)
    if n < PERCENTILE_MIN_RUNS:
        return {"stated": False, "reference_runs": n, "excluded": [], "ranks": [None] * n,
                "text": f"{n} run{'s' if n != 1 else ''}: fewer than {PERCENTILE_MIN_RUNS}, no percentile"}
    out = outliers(values)
    reference = [v for v, o in zip(values, out) if not o]
    excluded = [i for i, o in enumerate(out) if o]
    left = f"; {len(excluded)} left out beyond {OUTLIER_SIGMAS:g} sigma" if excluded else ""
    if len(reference) < PERCENTILE_MIN_RUNS:
        return {"stated": False, "reference_runs": len(reference), "excluded": excluded, "ranks": [None] * n,
                "text": f"{n} runs{left}: {len(reference)} in the reference distribution, fewer than "
                        f"{PERCENTILE_MIN_RUNS}, no percentile"}
    return {"stated": True, "reference_runs": len(reference), "excluded": excluded,
            "ranks": _ranks(values, reference),
            "text": f"{n} runs{left}: percentiles against the {len(reference)} in the reference distribution"}


def between_units(per_unit: dict[str, Sequence[float]]) -> dict:
    """The spread between units of one device model, from each unit's runs' medians (UNITS_RULE).

    Estimators (k units, unit i with n_i runs of mean m_i, N runs in all, mean of all runs x̄):
    - `relative_sd`: s_b / M, where M is the mean of the k unit means and s_b their sample standard
      deviation (k - 1 in the denominator). Stated from UNITS_MIN units, one run each suffices; it
      includes the units' within-unit noise divided by their run counts.
    - `random_effects_relative_sd`: the one-way random-effects variance component (method of moments,
      ANOVA): MSB = sum n_i (m_i - x̄)^2 / (k - 1), MSW = sum (x_ij - m_i)^2 / (N - k),
      n0 = (N - sum n_i^2 / N) / (k - 1), sigma_b^2 = max(0, (MSB - MSW) / n0); given as sigma_b / x̄.
      Only when N > k (some unit has two runs: the within-unit term has degrees of freedom); else null.
    Returns {"units", "runs", "stated", "relative_sd", "random_effects_relative_sd", "text"}."""
    groups = {u: list(v) for u, v in sorted(per_unit.items()) if v}
    k = len(groups)
    n = sum(len(v) for v in groups.values())
    base = {"units": k, "runs": n, "relative_sd": None, "random_effects_relative_sd": None}
    if k < UNITS_MIN:
        return {**base, "stated": False,
                "text": f"{k} unit{'s' if k != 1 else ''}: no between-unit spread"}
    means = [statistics.fmean(v) for v in groups.values()]
    grand = statistics.fmean(means)
    rel = statistics.stdev(means) / abs(grand) if grand else None
    if rel is None:
        text = f"{k} units, {n} runs: their mean is 0, no relative spread"
    else:
        text = f"{k} units, {n} runs: the per-unit means spread {_g(100 * rel)} % (SD / mean)"
    re_rel = None
    if n > k:
        xbar = statistics.fmean([x for v in groups.values() for x in v])
        msb = sum(len(v) * (m - xbar) ** 2 for v, m in zip(groups.values(), means)) / (k - 1)
        msw = sum((x - m) ** 2 for v, m in zip(groups.values(), means) for x in v) / (n - k)
        n0 = (n - sum(len(v) ** 2 for v in groups.values()) / n) / (k - 1)
        sigma_b = math.sqrt(max(0.0, (msb - msw) / n0))
        re_rel = sigma_b / abs(xbar) if xbar else None
        if re_rel is not None:
            text += f"; random-effects between-unit component {_g(100 * re_rel)} %"
    else:
        text += "; one run per unit: no random-effects component (nothing to separate within-unit noise)"
    return {**base, "stated": rel is not None, "relative_sd": rel, "random_effects_relative_sd": re_rel,
            "text": text}


def _bounds(run: dict) -> tuple[float, float]:
    """A run's interval, or its median as a point when it has none."""
    lo, hi = run.get("ci_low"), run.get("ci_high")
    m = run["measured"]
    return (m if lo is None else lo, m if hi is None else hi)


def history(runs: Sequence[dict]) -> dict:
    """Conbench's rule over one series, oldest first (each run {"measured", "ci_low", "ci_high"}):
    the latest run against the earlier ones (HISTORY_RULE). A run without an interval counts as its
    median alone.

    Returns {"earlier", "stated", "change", "change_pct", "range", "text"}: `stated` whether the rule
    applied (>= HISTORY_MIN_EARLIER earlier runs); `change` whether the latest median lies outside the
    range [min low, max high] of the earlier runs' intervals; `change_pct` the latest median against
    the median of the earlier medians, in percent (null when no change is stated)."""
    earlier = list(runs[:-1])
    base = {"earlier": len(earlier), "change": None, "change_pct": None, "range": None}
    if len(earlier) < HISTORY_MIN_EARLIER:
        return {**base, "stated": False, "text": f"fewer than {HISTORY_MIN_EARLIER} earlier runs "
                f"({len(earlier)}): no change stated"}
    latest = runs[-1]["measured"]
    lo = min(_bounds(r)[0] for r in earlier)
    hi = max(_bounds(r)[1] for r in earlier)
    ref = statistics.median(r["measured"] for r in earlier)
    where = f"the range [{_g(lo)}, {_g(hi)}] of the {len(earlier)} earlier runs' intervals"
    if lo <= latest <= hi:
        return {**base, "stated": True, "change": False, "range": [lo, hi],
                "text": f"latest run's median {_g(latest)} is inside {where}: no change"}
    pct = 100.0 * (latest - ref) / abs(ref) if ref else None
    by = f": {_pct(pct)} against their median {_g(ref)}" if pct is not None else ""
    return {**base, "stated": True, "change": True, "change_pct": pct, "range": [lo, hi],
            "text": f"latest run's median {_g(latest)} is outside {where}{by}"}


def disjoint_pairs(runs: Sequence[dict]) -> list[tuple[int, int]]:
    """Index pairs (i < j) of runs whose intervals do not overlap; runs without an interval take no
    part (a point says nothing of its own spread)."""
    with_ci = [(i, r["ci_low"], r["ci_high"]) for i, r in enumerate(runs)
               if r.get("ci_low") is not None and r.get("ci_high") is not None]
    return [(i, j) for a, (i, lo_i, hi_i) in enumerate(with_ci) for (j, lo_j, hi_j) in with_ci[a + 1:]
            if hi_i < lo_j or hi_j < lo_i]
