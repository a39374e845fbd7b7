"""The ETA shown while a suite runs (pure logic) and the earlier-run times it is built from."""

import io
import json
from types import SimpleNamespace

import pytest

from reprokit.errors import UserError
from reprokit.run.progress import Progress, past_cell_times


def cells(*spec):
    return [SimpleNamespace(id=cid, workload=w) for cid, w in spec]


def progress(cs, history=None):
    lines = []
    return Progress(cs, say=lines.append, stream=io.StringIO(), history=history), lines


def test_without_history_the_eta_is_unknown_until_a_cell_finishes_then_per_workload():
    cs = cells(("a1", "short"), ("a2", "short"), ("b1", "long"))
    p, lines = progress(cs)
    assert p.eta() is None
    p.start(cs[0])
    assert "ETA unknown" in lines[-1]
    p.done(cs[0], "ok", 10.0)
    # a2: same workload (10 s); b1: no cell of its workload yet, mean of all finished (10 s)
    assert p.eta() == 20.0


def test_a_slow_last_cell_known_from_an_earlier_run_is_in_the_eta_from_the_start():
    cs = cells(*[(f"c{i}", "regression") for i in range(20)], ("lm", "word_lm"))
    history = {f"c{i}": 10.0 for i in range(20)} | {"lm": 330.0}
    p, _ = progress(cs, history)
    assert p.eta() == 20 * 10.0 + 330.0
    for c in cs[:20]:
        p.done(c, "ok", 10.0)
    assert p.eta() == 330.0  # the per-workload mean alone would have said 10 s


def test_the_earlier_times_scale_with_this_runs_pace():
    cs = cells(("a", "w"), ("b", "w"), ("c", "v"))
    p, _ = progress(cs, {"a": 10.0, "b": 10.0, "c": 100.0})
    p.done(cs[0], "ok", 20.0)  # this machine is twice as slow as last time
    assert p.eta() == 2 * 10.0 + 2 * 100.0


def test_a_workload_recorded_wrong_rescales_its_own_cells_not_the_others():
    """The README's run on a fresh clone: the design expected 2 s per Theano process (its costs were
    recorded with a stand-in stack), the first one took 136 s, and the ETA scaled every remaining
    cell by 68x: "ETA 70:00:05" for a run of under two hours."""
    cs = cells(("t1", "fastlstm"), ("t2", "fastlstm"), ("f1", "basic_lstm"), ("f2", "basic_lstm"))
    p, _ = progress(cs, {"t1": 2.0, "t2": 2.0, "f1": 10.0, "f2": 10.0})
    p.done(cs[0], "ok", 136.0)
    # t2: its workload's ratio (68x); f1, f2: the machine-wide scale, capped at 3x
    assert p.eta() == pytest.approx(136.0 + 2 * 10.0 * 3.0)
    p.done(cs[2], "ok", 12.0)  # basic_lstm seen: its own ratio
    assert p.eta() == pytest.approx(136.0 + 12.0)


def test_a_cells_later_processes_take_its_own_first_process_time():
    c = cells(("a", "w"))[0]
    units = [(c, 1), (c, 2), (c, 3)]
    p = Progress(units, say=[].append, stream=io.StringIO(), history={"a": 5.0}, repeat=3)
    p.done(c, "ok", 40.0, process=1)
    assert p.eta() == 2 * 40.0


def test_a_resumed_run_times_its_remaining_processes_by_the_ones_it_keeps():
    """The README run resumed for its third round: every cell had two processes kept, yet the ETA
    said 0:22:08 for a round that had taken 63-70 minutes, from the design's expected times."""
    a, b, c = cells(("a", "w"), ("b", "w"), ("c", "v"))
    units = [(a, 3), (b, 3), (c, 3)]
    history = {"a": 5.0, "b": 5.0, "c": 5.0}
    p = Progress(units, say=[].append, stream=io.StringIO(), history=history, repeat=3,
                 kept={"a": [40.0, 44.0], "c": [100.0]})
    # a and c: their own kept processes; b: its workload's pace from a's kept ones (42 / 5)
    assert p.eta() == pytest.approx(42.0 + 5.0 * 42.0 / 5.0 + 100.0)
    assert p.n_done == 0  # kept processes are not work this run does


def test_cells_without_history_fall_back_to_this_runs_times():
    cs = cells(("a", "w"), ("new", "w"), ("other", "v"))
    p, _ = progress(cs, {"a": 10.0})
    assert p.eta() is None  # two cells have no estimate at all yet
    p.done(cs[0], "ok", 30.0)
    assert p.eta() == 30.0 + 30.0


def write_run(root, name, runner="local", quick=True, started="2026-01-01T00:00:00Z", cells_=()):
    d = root / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({
        "runner": runner, "quick": quick, "protocol": "budget", "started": started,
        "cells": [{"cell_id": c, "status": s, "process_wall_s": w} for c, s, w in cells_]}))
    return d


def test_past_cell_times_takes_the_newest_matching_ok_run_of_each_cell(tmp_path):
    write_run(tmp_path, "old", started="2026-01-01T00:00:00Z", cells_=[("a", "ok", 5.0),
                                                                       ("b", "ok", 7.0)])
    write_run(tmp_path, "new", started="2026-02-01T00:00:00Z", cells_=[("a", "ok", 6.0),
                                                                       ("b", "crashed", 1.0)])
    write_run(tmp_path, "docker", runner="docker", started="2026-03-01T00:00:00Z",
              cells_=[("a", "ok", 99.0)])
    write_run(tmp_path, "full", quick=False, started="2026-03-01T00:00:00Z",
              cells_=[("a", "ok", 99.0)])
    current = write_run(tmp_path, "current", started="2026-04-01T00:00:00Z",
                        cells_=[("a", "ok", 1.0)])
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("{not json")
    got = past_cell_times(tmp_path, "local", True, "budget", exclude=current)
    assert got == {"a": 6.0, "b": 7.0}
    assert past_cell_times(tmp_path / "missing", "local", True, "budget") == {}


def test_a_fresh_clone_has_an_eta_before_its_first_cell_from_the_recorded_times():
    """No earlier run on this host: the recorded times of the suite (reprokit/data/cell_times.yaml) give
    the ETA from the start, the 001 word-LM cell included (a fresh clone's ETA once read 0:00:35 before a
    458 s cell)."""
    from reprokit.catalog import suites
    from reprokit.run.progress import recorded_times

    suite = suites.load_suite("legacy-2017")
    rec = recorded_times("local", False, "budget")
    assert {c.id for c in suite.cells} <= set(rec)
    p, lines = progress(suite.cells, rec)
    p.start(suite.cells[0])
    assert "ETA unknown" not in lines[-1]
    lm = "001/pytorch/word_lm/b128-s128-h1024"
    assert rec[lm] > 100 and p.eta() >= rec[lm] + sum(v for k, v in rec.items() if k.startswith("000/")) - 1
    # the docker runner and --quick find their own kind of measurement, or none
    assert recorded_times("docker", False, "budget") == rec                      # another runner's times
    assert "003/pytorch/jit_static/train" in recorded_times("local", True, "budget")
    assert recorded_times("local", False, "published") == {}


def test_recorded_times_come_from_a_real_run_and_validate(tmp_path):
    import sys
    from pathlib import Path

    from reprokit import validate

    repo = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(repo / "tools"))
    try:
        import record_cell_times
    finally:
        sys.path.remove(str(repo / "tools"))
    e = record_cell_times.entry(repo / "tests" / "data" / "runs" / "cpu-a")
    # the stored run's cells ran in 3 processes (tests/data/make_runs.py): seconds per process
    assert e["suite"] == "legacy-2017" and e["cells"]["000/tensorflow/cudnn_lstm/b128-s30-h512"] == 20.3
    assert "000/tensorflow/basic_lstm/b128-s100-h512" not in e["cells"]                 # skipped: not ok
    assert validate.errors("cell_times", {"schema_version": 1, "measurements": [e]}) == []


def test_merge_keeps_the_cells_a_partial_run_did_not_run(tmp_path):
    """record_cell_times.py --merge: a run of some cells replaces those cells' times only; the others
    stay, named under `earlier` with the run they came from; a second merge keeps that source."""
    import sys
    from pathlib import Path

    from reprokit import validate

    repo = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(repo / "tools"))
    try:
        import record_cell_times
    finally:
        sys.path.remove(str(repo / "tools"))
    old = {"suite": "s", "runner": "local", "quick": False, "protocol": "budget", "run": "R1",
           "machine": "M1", "date": "2026-01-01", "cells": {"a": 1.0, "b": 2.0, "c": 3.0}}
    new = dict(old, run="R2", machine="M2", date="2026-01-02", cells={"b": 5.0, "d": 6.0})
    m = record_cell_times.merged(new, old)
    assert m["cells"] == {"a": 1.0, "b": 5.0, "c": 3.0, "d": 6.0} and m["run"] == "R2"
    assert m["earlier"] == {"run": "R1", "machine": "M1", "date": "2026-01-01", "cells": ["a", "c"]}
    with pytest.raises(UserError, match="two earlier runs"):  # b and d came from R2, c from R1
        record_cell_times.merged(dict(new, run="R3", cells={"a": 7.0}), m)
    again = record_cell_times.merged(dict(new, run="R3", cells={"b": 8.0, "d": 9.0}), m)
    assert again["earlier"]["run"] == "R1" and again["earlier"]["cells"] == ["a", "c"]
    assert validate.errors("cell_times", {"schema_version": 1, "measurements": [m]}) == []
    assert record_cell_times.merged(new, None) == new


def test_a_cell_left_by_the_time_limit_is_one_line_under_its_own_counter_and_not_in_the_eta():
    cs = cells(("a1", "short"), ("a2", "short"), ("b1", "long"))
    p, lines = progress(cs)
    p.start(cs[0])
    p.done(cs[0], "ok", 10.0)
    p.left(cs[1], "left by --time-limit 1 min: 5 s were left, it needs about 10 s")
    assert lines[-1] == "[2/3] a2: skipped: left by --time-limit 1 min: 5 s were left, it needs about 10 s"
    assert sum("a2" in ln for ln in lines) == 1  # once, not also as an indented line under a1
    assert p.eta() == 10.0  # b1 at the mean of the cells that ran: a left one took no 0 s


def test_the_eta_never_goes_past_the_runs_time_limit():
    import time

    cs = cells(("a1", "w"), ("a2", "w"), ("a3", "w"))
    lines = []
    p = Progress(cs, say=lines.append, stream=io.StringIO(), deadline=time.time() + 100.0)
    p.start(cs[0])
    p.done(cs[0], "ok", 300.0)  # two more at 300 s each: 600 s, but the limit ends the run in 100 s
    assert 0.0 < p.eta() <= 100.0
