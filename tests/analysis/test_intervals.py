"""Intervals from all levels: the re-run interval over processes (t, df = processes - 1),
one process decides no verdict, and claims get a hierarchical-bootstrap interval of the ratio."""

import math
import random
import statistics
from pathlib import Path

import pytest

from reprokit import results
from reprokit.analysis import bootstrap, claims, stats, steady_state, verdicts
from reprokit.catalog import suites
from reprokit.reader import load
from reprokit.reader.frozen import thaw
from reprokit.report import run_health
from tests import models

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def two_level(rng, k, n, between, within, shift=0.0):
    xs, counts = [], []
    for _ in range(k):
        level = (1.0 + shift) * (1 + rng.gauss(0, between))
        xs += [level * (1 + rng.gauss(0, within)) for _ in range(n)]
        counts.append(n)
    return xs, counts


def test_rerun_interval_covers_the_next_runs_median_where_one_process_does_not():
    """Two runs back to back of K = 5 processes each, processes 3 % apart, iterations 1 %: the second run's
    median falls inside the first run's prediction interval about 95 % of the time; its confidence
    interval (the true central value's, which verdicts use) catches a re-run less often (Cumming &
    Maillardet 2006: about 83 %); a one-process interval (the old design) far less often."""
    rng = random.Random(21)
    hits_rerun = hits_ci = hits_one = trials = 0
    for _ in range(300):
        a, ca = two_level(rng, 5, 12, 0.03, 0.01)
        b, cb = two_level(rng, 5, 12, 0.03, 0.01)
        s = stats.summarize(a, processes=ca)
        second = stats.summarize(b, processes=cb)["median"]
        hits_rerun += s["pi_low"] <= second <= s["pi_high"]
        hits_ci += s["ci_low"] <= second <= s["ci_high"]
        one = stats.summarize(a[:12])
        second_one = stats.summarize(b[:12])["median"]
        hits_one += one["ci_low"] <= second_one <= one["ci_high"]
        trials += 1
    assert hits_rerun / trials >= 0.90
    assert 0.70 <= hits_ci / trials < hits_rerun / trials
    assert hits_one / trials < 0.5


def m40():
    return load.load(RUNS / "m40-same")


def test_one_process_decides_no_verdict_and_says_why():
    run = m40()
    num = next(n for n in suites.load_published("000") if n["id"] == "000-L012")
    assert verdicts.verdict(num, run.result(num["cell"]), run)["verdict"] == "REPRODUCED"  # 3 processes
    doc = thaw(run.result(num["cell"]).doc)
    m = doc["metrics"][num["metric"]]
    m.pop("processes")  # the same samples as one process
    m.pop("as_published", None)
    v = verdicts.verdict(num, models.cell(doc), run)
    assert v["verdict"] == "INCONCLUSIVE" and v["undecided_rule"] == "REPRODUCED"
    assert "one process: its interval covers that process only" in v["reason"]
    assert v["measured"]["ci_covers"] == "process" and v["measured"]["ci_levels"] == ["iterations"]


def test_efficiency_on_one_process_is_not_decided_either():
    run = load.load(RUNS / "cpu-a")
    nums = [n for n in suites.load_published("003")]
    vs = verdicts.verdicts_for_run(nums, run, suites.load_sources())
    decided = [v for v in vs if v["verdict"].startswith("EFFICIENCY_")]
    assert decided
    v0 = decided[0]
    doc = thaw(run.result(v0["cell_id"]).doc)
    for m in doc["metrics"].values():
        m.pop("processes", None)
        m.pop("as_published_processes", None)
    num = next(n for n in nums if n["id"] == v0["number_id"])
    v = verdicts.verdict(num, models.cell(doc), run, suites.load_sources()["003"].get("tolerance"))
    assert v["verdict"] == "INCONCLUSIVE" and v["undecided_rule"] == v0["verdict"], v["reason"]


def test_ratio_bootstrap_resamples_both_levels():
    rng = random.Random(5)
    a, ca = two_level(rng, 4, 15, 0.03, 0.01)
    b, cb = two_level(rng, 4, 15, 0.03, 0.01, shift=0.5)
    ga, gb = steady_state.split_processes(a, ca), steady_state.split_processes(b, cb)
    r = bootstrap.ratio_interval(gb, ga)
    assert r["levels"] == ["processes", "iterations"] and r["processes"] == [4, 4]
    assert r["low"] < r["ratio"] < r["high"] and r["low"] < 1.5 < r["high"]
    one = bootstrap.ratio_interval([b[:15]], [a[:15]])
    assert one["levels"] == ["iterations"]
    assert (one["high"] - one["low"]) < (r["high"] - r["low"])  # the process level widens it
    assert bootstrap.ratio_interval(gb, ga) == r  # deterministic


def obs(cell, groups, unit="words/s"):
    xs = [x for g in groups for x in g]
    return {"cell_id": cell, "metric": "m", "unit": unit, "device": "cpu", "hw": None, "label": "test CPU",
            "count": 1, "standins": [], "exact": False, "origin": "test", "groups": groups,
            "summary": stats.summarize(xs, processes=[len(g) for g in groups] if len(groups) > 1 else None)}


CLAIM = {"id": "c999-o", "source": "999", "kind": "order", "origin": "table", "text": "t", "reference": "r",
         "metric": "m", "order": ["A", "B"], "hardware": "none (test CPU)"}


def test_a_claim_states_its_effect_with_the_bootstrap_interval():
    rng = random.Random(8)
    a, ca = two_level(rng, 3, 10, 0.02, 0.01, shift=0.3)
    b, cb = two_level(rng, 3, 10, 0.02, 0.01)
    sides = [obs("A", steady_state.split_processes(a, ca)), obs("B", steady_state.split_processes(b, cb))]
    r = claims.check_claim(CLAIM, sides, published=[])["pairs"][0]
    assert r["status"] == "HOLDS", r["reason"]
    assert r["speedup_interval"]["method"] == "hierarchical_bootstrap"
    assert r["speedup_interval"]["levels"] == ["processes", "iterations"]
    assert r["effect_text"].startswith("A better than B by ") and " % ± " in r["effect_text"]
    lo, hi = r["speedup"]
    assert lo < r["speedup_median"] < hi


def test_a_claim_with_a_one_process_side_is_not_decided():
    rng = random.Random(9)
    a, _ = two_level(rng, 1, 30, 0.0, 0.01, shift=0.3)
    b, _ = two_level(rng, 1, 30, 0.0, 0.01)
    r = claims.check_claim(CLAIM, [obs("A", [a]), obs("B", [b])], published=[])["pairs"][0]
    assert r["status"] == "INCONCLUSIVE" and "ran in one process" in r["reason"]
    assert r["speedup_interval"]["levels"] == ["iterations"]


@pytest.mark.parametrize("k", [2, 3, 6])
def test_degrees_of_freedom_are_the_processes(k):
    rng = random.Random(k)
    xs, counts = two_level(rng, k, 10, 0.05, 0.01)
    s = stats.summarize(xs, processes=counts)
    logs = [math.log(m) for m in s["between"]["medians"]]
    half = stats.t_quantile(0.975, k - 1) * statistics.stdev(logs) / k ** 0.5
    assert math.log(s["ci_high"] / s["ci_low"]) / 2 == pytest.approx(half)
    if k >= 3:  # the prediction interval for a re-run: sqrt(2/K) instead of sqrt(1/K)
        assert math.log(s["pi_high"] / s["pi_low"]) / 2 == pytest.approx(half * 2 ** 0.5)


def test_a_report_of_processes_says_whether_the_kit_measured_this_kind_of_intervals_coverage(tmp_path):
    import shutil

    from reprokit.report import report

    shutil.copytree(RUNS / "m40-same", tmp_path / "m40-same")
    md, html, js = report.render(results.RunDir(tmp_path / "m40-same"))
    text = md.read_text()
    assert "Each\ninterval over processes is a confidence interval of the cell's central value" in text
    measured = run_health.rerun_coverage(3)  # the packaged measurement with several processes per cell
    if measured is not None and measured["current"]:  # it measured the re-run intervals the kit makes
        assert "The kit's measured coverage of the re-run (prediction) interval: " + measured["short"] in text
        assert "has not yet measured how often" not in text
    else:
        assert "has not yet measured how often these re-run intervals cover a re-run" in text
    assert "For comparison, with one process per cell" not in text



def _medians_one_by_one(groups, n_boot, seed):
    """The hierarchical bootstrap's definition, drawn process by process (the reference)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    procs = [np.asarray(g, dtype=float) for g in groups if len(g)]
    out = []
    for _ in range(n_boot):
        picks = rng.integers(0, len(procs), size=len(procs)) if len(procs) > 1 else [0]
        out.append(np.median(np.concatenate([procs[i][rng.integers(0, len(procs[i]), size=len(procs[i]))]
                                             for i in picks])))
    return np.array(out)



def test_one_process_resamples_draw_the_values_drawn_resample_by_resample():
    import numpy as np

    r = np.random.default_rng(11)
    for n in (7, 50, 1001):  # 300 x 1001 values: past one chunk
        groups = [list(r.normal(10, 1, n))]
        got = bootstrap.medians(groups, n_boot=300, seed=4)
        assert np.array_equal(got, _medians_one_by_one(groups, 300, 4))


@pytest.mark.parametrize("lengths", [(3, 3, 3), (30, 30), (5, 9, 12), (6, 100, 100, 100), (1, 2)])
def test_several_processes_resample_as_the_definition_does(lengths):
    """Processes drawn in chunks give the distribution of the definition drawn resample by resample:
    its 2.5, 50 and 97.5 % quantiles within 0.1 of the data's SD (4000 resamples each; the two differ
    by at most 0.032 SD at these seeds)."""
    import numpy as np

    r = np.random.default_rng(11)
    groups = [list(r.normal(10 + 0.5 * i, 1, n)) for i, n in enumerate(lengths)]
    got = np.quantile(bootstrap.medians(groups, n_boot=4000, seed=3), [0.025, 0.5, 0.975])
    want = np.quantile(_medians_one_by_one(groups, 4000, 3), [0.025, 0.5, 0.975])
    assert np.all(np.abs(got - want) <= 0.1 * np.std(np.concatenate(groups))), (got, want)
    assert np.array_equal(bootstrap.medians(groups, n_boot=500, seed=3),
                          bootstrap.medians(groups, n_boot=500, seed=3))  # deterministic
