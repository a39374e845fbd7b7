"""`run --time-limit` (reprokit/plan/time_limit.py, reprokit/run/serial.py): the plan fits what
the limit holds in the order of what each cell lets the run learn per second, and leaves the rest with
the time it would take; the executor checks again before each process and cuts the running one."""

from __future__ import annotations

import json

import pytest

from reprokit import checks, cli
from reprokit.errors import UserError
from reprokit.plan import time_limit


def test_deciding_cells_go_first_then_context_by_published_numbers_per_second():
    roles = {"d": {"role": "decides", "numbers": [], "claims": ["c1", "c2"]},
             "x": {"role": "context", "published": 3}, "y": {"role": "context", "published": 1},
             "z": {"role": "context", "published": 0}, "u": {"role": "context", "published": 5}}
    costs = {"d": 100.0, "x": 10.0, "y": 1.0, "z": 1.0, "u": None}
    f = time_limit.fit(list(roles), roles, costs, limit_s=1000)
    assert f.order == ["d", "y", "x", "z", "u"] and not f.left  # y: 1/s beats x: 0.3/s; unknown last


def test_what_does_not_fit_is_left_and_a_cheaper_cell_after_it_still_runs():
    roles = {c: {"role": "context", "published": 1} for c in "abc"}
    f = time_limit.fit(["a", "b", "c"], roles, {"a": 50.0, "b": 500.0, "c": 60.0}, limit_s=300, reserve_s=60)
    assert f.order == ["a", "c"] and f.left == [("b", 500.0)]
    assert "2 of 3 cells planned" in f.text and "1 left" in f.text


@pytest.mark.parametrize("text,seconds", [("14m", 840.0), ("900s", 900.0), ("900", 900.0), ("1.5h", 5400.0),
                                          (" 2M ", 120.0)])
def test_a_duration_takes_seconds_minutes_or_hours(text, seconds):
    assert checks.duration("--time-limit")(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "ten minutes", "-5m", "nanm", "10s", "99999h"])
def test_a_bad_duration_is_one_line(text):
    with pytest.raises(UserError, match="--time-limit must be a duration"):
        checks.duration("--time-limit")(text)


def test_a_run_left_whole_by_its_limit_ends_at_once_with_the_cells_listed(tmp_path, capsys):
    """A real run (local runner): the 60 s limit holds no cell once the run's reserve is taken, so
    every cell is left, recorded `skipped` with the time it would take; nothing failed, but nothing
    was measured either (exit 1, said in one line), and the report renders and names the cells left."""
    code = cli.main(["run", "--suite", "legacy-2017", "--cells", "001/*", "000/pytorch/*s30-h512",
                     "--runner", "local", "--device", "cpu", "--time-limit", "1m",
                     "--results", str(tmp_path)])
    assert code == 1
    (rd,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    run = json.loads((rd / "run.json").read_text())
    assert run["options"]["time_limit_s"] == 60.0
    assert [e["status"] for e in run["cells"]] == ["skipped", "skipped"]
    assert all("left by --time-limit 1 min: it would take about" in e["reason"] for e in run["cells"])
    err = capsys.readouterr().err
    assert "--time-limit 1 min: 0 of 2 cells planned" in err and "2 left" in err
    assert "0 of 54 numbers and 0 of 15 claims can be decided" in err
    assert "reproduce.py: no cell of the run measured anything" in err
    md = (rd / "report.md").read_text()
    assert "Run with `--time-limit 1m`: 2 cells left unmeasured" in md
