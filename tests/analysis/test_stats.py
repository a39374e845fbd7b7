"""Statistics of samples: the exact CI of the median, its coverage, and the harness stop rule."""

import math
import random
import statistics
import sys
from pathlib import Path

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
    assert small["ci_method"] == "min_max" and (small["ci_low"], small["ci_high"]) == (1.0, 3.0)
    assert small["ci_coverage"] == pytest.approx(0.75) and small["ci_label"] == "75 % interval"
    one = stats.summarize([4.0], stop_reason="single")
    assert one["ci_low"] is None and one["ci_method"] == "none" and one["noisy"] is None
    assert stats.interval(one) == (4.0, 4.0)
    assert stats.summarize([])["median"] is None


@pytest.mark.parametrize("n,coverage,label", [(2, 0.5, "50 % interval"), (5, 0.9375, "93.8 % interval"),
                                              (6, 1 - 2 / 64, "95 % CI"), (20, None, "95 % CI")])
def test_every_interval_states_its_real_coverage(n, coverage, label):
    """Below n = 6 the interval is [min, max], labelled with its real coverage, never '95 % CI'."""
    s = stats.summarize([float(i) for i in range(n)])
    assert s["ci_label"] == label
    if coverage is not None:
        assert s["ci_coverage"] == pytest.approx(coverage)
    assert s["ci_coverage"] <= 1 and (s["ci_coverage"] >= 0.95) == (label == "95 % CI")


def test_min_max_coverage_is_what_a_simulation_finds():
    """[min, max] of 5 draws covers the true median 93.75 % of the time, not 95 %."""
    rng = random.Random(5)
    draws = ([rng.gauss(0, 1) for _ in range(5)] for _ in range(20000))
    hits = sum(min(xs) <= 0.0 <= max(xs) for xs in draws)
    assert abs(hits / 20000 - stats.summarize([1, 2, 3, 4, 5])["ci_coverage"]) < 0.006


def _two_level(rng: random.Random, k: int, n: int, between: float, within: float) -> tuple[list, list]:
    """k processes of n samples: each process has its own level (between-process spread)."""
    samples, counts = [], []
    for _ in range(k):
        level = 1.0 + rng.gauss(0, between)
        samples += [level * (1 + rng.gauss(0, within)) for _ in range(n)]
        counts.append(n)
    return samples, counts


def test_processes_widen_the_interval_to_the_spread_between_them():
    rng = random.Random(3)
    xs, counts = _two_level(rng, 6, 20, between=0.10, within=0.01)
    pooled = stats.summarize(xs)
    by_process = stats.summarize(xs, processes=counts)
    assert by_process["ci_method"] == "process_t" and by_process["processes"] == 6
    assert by_process["ci_coverage"] == 0.95 and by_process["ci_label"] == "95 % CI over 6 processes"
    assert by_process["ci_levels"] == ["processes", "iterations"] and by_process["ci_covers"] == "median"
    assert pooled["ci_levels"] == ["iterations"] and pooled["ci_covers"] == "process"
    assert "covers that process only" in pooled["ci_note"]
    meds = by_process["between"]["medians"]
    half = stats.t_quantile(0.975, 5) * statistics.stdev([math.log(m) for m in meds]) / 6 ** 0.5
    m = by_process["median"]
    assert (by_process["ci_low"], by_process["ci_high"]) == (pytest.approx(m * math.exp(-half)),
                                                             pytest.approx(m * math.exp(half)))
    # the prediction interval for a re-run of 6 processes: sqrt 2 wider on the log scale
    assert (by_process["pi_low"], by_process["pi_high"]) == (pytest.approx(m * math.exp(-half * 2 ** 0.5)),
                                                             pytest.approx(m * math.exp(half * 2 ** 0.5)))
    assert (by_process["ci_high"] - by_process["ci_low"]) > 3 * (pooled["ci_high"] - pooled["ci_low"])
    assert by_process["between"]["spread_rel"] > 5 * by_process["between"]["within_half_width_rel"]
    three = stats.summarize(xs[:60], processes=counts[:3])
    assert three["ci_method"] == "process_t" and three["between"]["processes"] == 3
    two = stats.summarize(xs[:40], processes=counts[:2])  # no prediction interval from 2 processes
    assert two["ci_low"] is not None and two["pi_low"] is None and two["pi_label"] is None


def test_process_interval_covers_a_fresh_process_median_as_stated():
    """With a large between-process spread, the pooled interval of one run misses the next process's
    median most of the time; the interval over 6 process medians covers the median of the process
    distribution at least as often as its stated coverage."""
    rng = random.Random(11)
    pooled_hits = process_hits = trials = 0
    for _ in range(400):
        xs, counts = _two_level(rng, 6, 10, between=0.05, within=0.01)
        pooled = stats.summarize(xs)
        by_process = stats.summarize(xs, processes=counts)
        trials += 1
        pooled_hits += pooled["ci_low"] <= 1.0 <= pooled["ci_high"]
        process_hits += by_process["ci_low"] <= 1.0 <= by_process["ci_high"]
    assert process_hits / trials >= by_process["ci_coverage"] - 0.03
    assert pooled_hits / trials < 0.6


def test_processes_that_do_not_add_up_are_ignored():
    s = stats.summarize([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], processes=[2, 2])
    assert s["processes"] == 1 and s["ci_method"] == "binomial_order_statistic"
    assert stats.summarize_metric({"samples": [1.0, 2.0, 3.0, 4.0], "processes": [2, 2], "unit": "s"})[
        "processes"] == 2


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
    # one copy across the host/stack boundary: the host calls bench's function, it has none of its own
    assert "_pmf" not in Path(stats.__file__).read_text()
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


def test_a_rerun_interval_of_times_is_the_inverse_of_the_rates_and_stays_positive():
    """Three processes far apart (a loaded machine): the interval on the log scale never reaches zero,
    and the interval of rates is exactly the inverse of the interval of their times."""
    times = [1.0, 1.1, 0.9, 3.0, 3.2, 2.9, 0.4, 0.5, 0.45]
    counts = [3, 3, 3]
    t = stats.summarize(times, processes=counts)
    r = stats.summarize([1 / x for x in times], processes=counts)
    assert t["ci_low"] > 0 and r["ci_low"] > 0
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(1 / t["ci_high"]), pytest.approx(1 / t["ci_low"]))


def test_the_real_work_digest_is_kept_out_of_the_loops_wall_time(bench_path):
    """bench/timing.py: `wall_seconds` is what a source that timed its whole loop saw (the as-published
    figures take the time between batches from it); the real-work check's digest before the timed steps
    is the kit's, not the benchmark's, so its time is left out. A digest of 0.3 s against steps of
    microseconds: with it counted, wall_seconds would exceed 0.5 s."""
    import time

    import timing

    budget = timing.Budget(min_samples=3, max_samples=3, time_budget_s=0, warmup=1)
    out = timing.sample(lambda: None, budget, before_timed=lambda: time.sleep(0.5) or 7.0)
    assert out["before_timed"] == 7.0
    assert out["wall_seconds"] < 0.5, out["wall_seconds"]
