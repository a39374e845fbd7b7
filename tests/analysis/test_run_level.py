"""The between-run term of the re-run interval from this host's history (reprokit/analysis/run_level.py,
reprokit/run/host_history.py): the estimator on synthetic histories, the labels, and two real runs
of the smoke suite in one results directory, the second recording the first as its history."""

import json
import math
import random
import statistics

import pytest
from run.test_faults import MATMUL, cli

from reprokit import kitdata
from reprokit.analysis import run_level, stats
from reprokit.plan import code_version
from reprokit.reader.load import load


def _history(cells: dict[str, list[float]], sd_log=0.0, processes=3) -> dict:
    return {"host_id": "h", "runs": [f"r{i}" for i in range(max(len(v) for v in cells.values()))],
            "cells": {k: [{"run": f"r{i}", "median": m, "processes": processes, "sd_log": sd_log}
                          for i, m in enumerate(v)] for k, v in cells.items()}}


def test_the_estimate_recovers_a_known_between_run_spread():
    rng = random.Random(7)
    b = 0.05 ** 2
    cells = {f"c{i}": [math.exp(rng.gauss(0, math.sqrt(b))) * (i + 1) for _ in range(6)] for i in range(200)}
    got, df, n = run_level.estimate(_history(cells))
    assert n == 200 and df == 200 * 5
    assert math.sqrt(got) == pytest.approx(0.05, rel=0.15)


@pytest.mark.parametrize("runs", [2, 4])
@pytest.mark.parametrize("ratio", [0.0, 1.0, 4.0])
def test_the_estimate_is_median_unbiased_beside_the_runs_own_process_noise(runs, ratio):
    """Runs that move by b between them and by w within (their processes' noise, which their records
    state): b is recovered from two runs of a cell as from four, also where b is no bigger than w (the
    variance of two medians is chi-square with one degree of freedom: scaling its excess over w, not
    the variance, estimated b - 1.2 w, 0 at b = w)."""
    rng = random.Random(int(10 * ratio) + runs)
    sd, k = 0.06, 3
    w = sd * sd / k
    b = ratio * w
    cells = {f"c{i}": [math.exp(rng.gauss(0, math.sqrt(b)) + rng.gauss(0, math.sqrt(w)))
                       for _ in range(runs)] for i in range(800)}
    got, _, n = run_level.estimate(_history(cells, sd_log=sd, processes=k))
    assert n == 800
    within = {"abs": 0.25 * w} if ratio == 0 else {"rel": 0.3}  # 800 cells: a few % of b either way
    assert got == pytest.approx(b, **within), (got / w, ratio)


def test_a_few_cells_that_changed_between_runs_do_not_widen_every_interval():
    rng = random.Random(3)
    cells = {f"c{i}": [math.exp(rng.gauss(0, 0.03)) for _ in range(5)] for i in range(40)}
    cells.update({f"moved{i}": [1.0, 1.5, 1.0, 1.6, 1.1] for i in range(4)})
    got, _, _ = run_level.estimate(_history(cells))
    assert math.sqrt(got) < 0.05


def test_the_within_run_part_is_taken_out_and_one_earlier_run_counts_for_nothing():
    assert run_level.estimate(_history({"c": [1.0]})) is None
    noisy = _history({f"c{i}": [1.0, 1.1, 0.9, 1.05] for i in range(5)}, sd_log=0.5, processes=2)
    assert run_level.estimate(noisy)[0] == 0.0  # all of the spread is the runs' own process noise


def test_a_run_of_one_process_counts_its_process_variance_not_zero():
    """A one-process run's median carries the whole process variance: taken as the cell's pooled
    variance from its runs of several processes, it is not mistaken for variation between runs."""
    rng = random.Random(11)
    sd = 0.1  # process spread; no between-run variation at all
    cells = {}
    for i in range(150):
        multi = [{"run": f"m{j}", "median": math.exp(rng.gauss(0, sd / math.sqrt(3))), "processes": 3,
                  "sd_log": sd} for j in range(2)]
        single = [{"run": f"s{j}", "median": math.exp(rng.gauss(0, sd)), "processes": 1, "sd_log": None}
                  for j in range(3)]
        cells[f"c{i}"] = multi + single
    got, df, n = run_level.estimate({"runs": [], "cells": cells})
    assert n == 150 and df == 150 * 4
    assert math.sqrt(got) < 0.03  # counted as 0 they made it about sd x sqrt(3/5) ~ 0.08
    alone = {"c": [{"run": f"s{j}", "median": 1.0 + j / 10, "processes": 1, "sd_log": None}
                   for j in range(3)]}
    assert run_level.estimate({"runs": [], "cells": alone}) is None  # no process spread known: left out


def test_the_cells_process_spread_is_pooled_with_its_history():
    recs = [{"run": "r1", "median": 1.0, "processes": 4, "sd_log": 0.1},
            {"run": "r2", "median": 1.0, "processes": 1, "sd_log": None}]
    var, df = run_level.pooled_within(recs, (0.2 ** 2, 2))
    assert df == 5 and var == pytest.approx((3 * 0.01 + 2 * 0.04) / 5)
    assert run_level.pooled_within(recs[1:]) is None
    summ = stats.summarize([1.0, 1.01, 0.99, 1.1, 1.11, 1.09, 0.95, 0.96, 0.94], processes=[3, 3, 3])
    s = statistics.stdev(math.log(m) for m in summ["between"]["medians"])
    same = [{"run": f"r{i}", "median": 1.0, "processes": 3, "sd_log": s} for i in range(5)]
    term = run_level.RunTerm(0.02 ** 2, 100, "history", 5, 10, "run")
    alone, pooled = run_level.widen(summ, term), run_level.widen(summ, term, same)
    assert pooled["pi_within_df"] == 12 and alone["pi_within_df"] == 2
    # the same spread known with 12 degrees of freedom instead of 2: t(0.975) falls from 4.3 to 2.2
    assert pooled["pi_high"] < alone["pi_high"] and pooled["pi_low"] > alone["pi_low"]
    assert pooled["pi_high"] > summ["median"] * math.exp(2 * math.sqrt(2 * (s * s / 3 + 0.02 ** 2)))


def test_a_cell_whose_code_changed_counts_once_per_code_version():
    """Two runs of each of two code versions of every cell: the move between the versions (a change
    of code) is not variation between runs."""
    rng = random.Random(5)
    cells = {}
    for i in range(60):
        cells[f"c{i}"] = [{"run": f"r{v}{j}", "median": (1.0 + 0.3 * v) * math.exp(rng.gauss(0, 0.01)),
                           "processes": 3, "sd_log": 0.001, "code": f"{v}" * 64}
                          for v in range(2) for j in range(2)]
    got, df, n = run_level.estimate({"runs": [], "cells": cells})
    assert n == 120 and df == 120 and math.sqrt(got) < 0.03
    mixed = {k: [dict(r, code=None) for r in v] for k, v in cells.items()}  # as kits that recorded none
    assert math.sqrt(run_level.estimate({"runs": [], "cells": mixed})[0]) > 0.1
    hist = {"runs": [], "cells": {run_level.key("c0", "t", "s", "fp32"): cells["c0"]}}
    assert len(run_level.records(hist, "c0", "t", "s", "fp32", "1" * 64)) == 2
    assert len(run_level.records(hist, "c0", "t", "s", "fp32")) == 4


def test_the_term_says_where_it_comes_from():
    assert run_level.term(None, "cpu").basis == "not_recorded"  # a run of a kit that kept no history
    default = run_level.term({"runs": [], "cells": {}}, "cpu")
    entry = kitdata.load("run_variation")["classes"]["cpu"]
    assert default.basis == "default" and default.variance == pytest.approx(entry["sd_log"] ** 2)
    assert "not calibrated on this host" in default.text and entry["measured"]["df"] >= 1
    assert run_level.term({"runs": [], "cells": {}}, "gpu").basis == "none"  # never measured on a GPU
    hist = run_level.term(_history({"a": [1.0, 1.1, 1.2], "b": [2.0, 2.1, 2.0]}), "cpu")
    assert hist.basis == "history" and "3 earlier runs, 2 cells" in hist.text


def test_widening_adds_the_run_level_and_says_so():
    summ = stats.summarize([1.0, 1.01, 0.99, 1.1, 1.11, 1.09, 0.95, 0.96, 0.94], processes=[3, 3, 3])
    term = run_level.RunTerm(0.05 ** 2, 100, "history", 4, 10, "run (this host's history)")
    wide = run_level.widen(summ, term)
    assert wide["pi_low"] <= summ["pi_low"] and wide["pi_high"] >= summ["pi_high"]
    big = run_level.widen(summ, run_level.RunTerm(0.3 ** 2, 100, "history", 4, 10, "run"))
    assert big["pi_low"] < summ["pi_low"] and big["pi_high"] > summ["pi_high"]
    assert math.sqrt(wide["pi_low"] * wide["pi_high"]) == pytest.approx(summ["median"])
    assert wide["pi_covers"] == ["process", "run"] and wide["pi_run"]["basis"] == "history"
    same = run_level.widen(summ, run_level.term(None, "cpu"))
    assert (same["pi_low"], same["pi_high"]) == (summ["pi_low"], summ["pi_high"])
    assert same["pi_covers"] == ["process"]


def test_later_runs_record_the_earlier_ones_as_this_hosts_history(tmp_path):
    """Three real runs of one cell, 3 processes each, in one results directory: each run.json holds the
    central values of the runs before it on this host; with one earlier run the term is the CPU
    default (labelled), with two it is this host's own."""
    for _ in range(3):
        p = cli("run", "--suite", "smoke", "--runner", "local", "--cells", MATMUL, "--repeat", "3",
                "--quick", "--results", str(tmp_path), "--no-report", timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
    runs = sorted(d for d in tmp_path.iterdir() if d.is_dir())
    hist = [json.loads((d / "run.json").read_text())["history"] for d in runs]
    assert hist[0]["runs"] == [] and hist[0]["cells"] == {}
    assert hist[1]["runs"] == [runs[0].name] and hist[2]["runs"] == [runs[1].name, runs[0].name]
    (rec,) = [r for k, recs in hist[1]["cells"].items() if k.startswith(MATMUL + " | matmul_time |")
              for r in recs]
    assert rec["run"] == runs[0].name and rec["processes"] == 3 and rec["median"] > 0
    cell = load(runs[0]).result(MATMUL)
    assert rec["code"] == cell.code == code_version.digest(cell.workload)  # the code the process ran
    assert [run_level.term(load(d).history, "cpu").basis for d in runs] == ["default", "default", "history"]
    assert "2 earlier runs" in run_level.term(load(runs[2]).history, "cpu").text


def test_an_as_published_figures_interval_is_widened_like_a_medians():
    """A figure of the source's own definition (reprokit/analysis/published_metric.py) has its
    processes' interval but no iteration medians: the within-run part is read back from the interval."""
    median = stats.summarize([1.0, 1.01, 0.99, 1.1, 1.11, 1.09, 0.95, 0.96, 0.94], processes=[3, 3, 3])
    figure = {k: median[k] for k in ("pi_low", "pi_high", "processes", "median", "ci_confidence")}
    term = run_level.RunTerm(0.1 ** 2, 50, "history", 4, 10, "run")
    a, b = run_level.widen(median, term), run_level.widen(figure, term)
    assert (a["pi_low"], a["pi_high"]) == pytest.approx((b["pi_low"], b["pi_high"]))
    assert b["pi_covers"] == ["process", "run"] and b["pi_high"] > median["pi_high"]


def test_a_machine_of_the_same_host_name_but_another_cpu_is_not_this_hosts_history(tmp_path):
    """Machines share host names (every cloud VM here is `vm`), so the host id alone let a run on an
    AMD machine count as the history of one on an Intel machine: the history reads only the runs of
    the same machine (host id, CPU model, GPUs). Two copies of a committed run, one moved to another
    CPU model under the same host id."""
    import shutil
    from pathlib import Path

    from reprokit.run import host_history

    src = Path(__file__).resolve().parent.parent / "data" / "runs" / "smoke-current"
    same, other = tmp_path / "20260101T000000Z-smoke", tmp_path / "20260102T000000Z-smoke"
    shutil.copytree(src, same)
    shutil.copytree(src, other)
    doc = json.loads((other / "run.json").read_text())
    doc["host_fingerprint"]["cpu"]["model"] = "other"
    (other / "run.json").write_text(json.dumps(doc))
    fingerprint = json.loads((same / "run.json").read_text())["host_fingerprint"]
    assert doc["host_fingerprint"]["host_id"] == fingerprint["host_id"]
    hist = host_history.from_runs([other, same], fingerprint, None)
    assert hist["runs"] == [json.loads((same / "run.json").read_text())["run_id"]] and hist["cells"]
    assert host_history.from_runs([other], fingerprint, None)["runs"] == []
