"""Statistics of samples: the exact CI of the median, its coverage, and the harness stop rule."""

import math
import random
import sys

import pytest

from reprokit.analysis import stats


def test_order_statistic_ranks_match_tables():
    assert stats.order_statistic_ranks(5) is None  # no 95 % interval below n = 6
    lo, hi, cov = stats.order_statistic_ranks(6)
    assert (lo, hi) == (1, 6) and cov == pytest.approx(1 - 2 / 64)
    assert stats.order_statistic_ranks(10)[:2] == (2, 9)
    assert stats.order_statistic_ranks(20)[:2] == (6, 15)
    assert stats.order_statistic_ranks(100)[:2] == (40, 61)
    for n in range(6, 300):
        assert stats.order_statistic_ranks(n)[2] >= 0.95


def test_summarize_fields_and_noisy_flag():
    s = stats.summarize([10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.0], stop_reason="precision_reached")
    assert s["n"] == 7 and s["median"] == 10.0 and s["stop_reason"] == "precision_reached"
    assert s["ci_method"] == "binomial_order_statistic" and s["ci_low"] <= 10.0 <= s["ci_high"]
    assert s["noisy"] is False and s["cv"] == pytest.approx(s["stdev"] / s["mean"])
    noisy = stats.summarize([1, 2, 3, 4, 5, 6, 7, 8])
    assert noisy["noisy"] is True
    small = stats.summarize([1.0, 2.0, 3.0])
    assert small["ci_method"] == "bootstrap_percentile" and "too narrow" in small["ci_note"]
    one = stats.summarize([4.0], stop_reason="single")
    assert one["ci_low"] is None and one["ci_method"] == "none" and one["noisy"] is None
    assert stats.interval(one) == (4.0, 4.0)
    assert stats.summarize([])["median"] is None


def test_ci_of_median_covers_true_median_in_simulation():
    """200 draws of 20 lognormal samples: the 95 % interval must cover the true median >= 90 %."""
    rng = random.Random(12345)
    true_median = math.exp(1.0)
    hits = 0
    for _ in range(200):
        xs = [rng.lognormvariate(1.0, 0.8) for _ in range(20)]
        lo, hi, _cov = stats.binomial_median_ci(xs)
        hits += lo <= true_median <= hi
    assert hits >= 180, hits
    # a deliberately wrong interval (the middle two order statistics) must fail the same check
    rng = random.Random(12345)
    bad = 0
    for _ in range(200):
        xs = sorted(rng.lognormvariate(1.0, 0.8) for _ in range(20))
        bad += xs[9] <= true_median <= xs[10]
    assert bad < 180


def test_bootstrap_cross_check_agrees_with_exact_interval():
    rng = random.Random(7)
    xs = [rng.gauss(100, 5) for _ in range(60)]
    lo, hi, _ = stats.binomial_median_ci(xs)
    blo, bhi = stats.bootstrap_median_ci(xs)
    med = stats.summarize(xs)["median"]
    assert blo <= med <= bhi and lo <= med <= hi
    assert 0.5 < (bhi - blo) / (hi - lo) < 2.0


@pytest.fixture
def bench_path(repo):
    sys.path.insert(0, str(repo / "bench"))
    yield
    sys.path.remove(str(repo / "bench"))


def test_bench_precision_matches_host_statistics(bench_path):
    import precision

    for n in range(1, 400):
        assert precision.order_statistic_ranks(n) == stats.order_statistic_ranks(n)
    xs = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95, 1.3, 0.85]
    med, lo, hi = precision.median_ci(xs)
    s = stats.summarize(xs)
    assert (med, lo, hi) == (s["median"], s["ci_low"], s["ci_high"])


def test_precision_stop_rule(bench_path):
    import precision

    stop = precision.median_precision_stop(rel_half_width=0.02)
    assert not stop([1.0] * 5)  # below 6 samples no interval exists
    assert stop([1.0, 1.001, 0.999, 1.0, 1.002, 0.998])
    assert not stop([1.0, 2.0, 0.5, 1.5, 0.8, 1.2, 3.0])
    with pytest.raises(ValueError):
        precision.median_precision_stop(rel_half_width=0)


def test_precision_stop_drives_the_real_sampler(bench_path):
    import precision
    import timing

    budget = timing.Budget(min_samples=6, max_samples=10000, time_budget_s=30.0)
    out = timing.sample(
        lambda: sum(range(2000)), budget, should_stop=precision.median_precision_stop(rel_half_width=0.5)
    )
    assert out["stop_reason"] == "precision_reached"
    assert 6 <= len(out["raw_seconds"]) < 10000
