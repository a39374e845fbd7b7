"""Every finished process counts: a `--repeat K` cell whose later processes were left by --time-limit
(or not run, or interrupted) reports the processes it finished, labelled with how many and why the
others were not measured; a run that measured no cell at all exits 1.

Real runs of the smoke suite through the local runner. The limit is made to pass between the first
and the second round by the clock the serial loop reads (its `time`), so the test does not depend on
how fast this machine runs the cells.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from reprokit import cli, results
from reprokit.reader import merge
from reprokit.reader.load import load
from reprokit.run import serial
from tests import models

SMOKE = {"smoke/python/matmul/n24", "smoke/pytorch/nn_lstm/b8-s5-h32"}


def _limit_passes_before_round(monkeypatch, rnd_limit: int) -> None:
    """From round `rnd_limit` on, the serial loop's clock reads one second past the run's deadline."""
    real = serial._within_limit

    def within(ex, c, rnd, job_cell):
        if (rnd or 1) >= rnd_limit:
            late = ex.plan.options.deadline + 1.0
            monkeypatch.setattr(serial, "time", SimpleNamespace(time=lambda: late))
        return real(ex, c, rnd, job_cell)

    monkeypatch.setattr(serial, "_within_limit", within)


def _only_run(root: Path) -> results.RunDir:
    (rd,) = [results.RunDir(p) for p in root.iterdir() if (p / "run.json").exists()]
    return rd


def test_cells_whose_second_process_the_limit_left_report_their_first(tmp_path, monkeypatch, capsys):
    _limit_passes_before_round(monkeypatch, 2)
    code = cli.main(["run", "--suite", "smoke", "--runner", "local", "--quick", "--repeat", "2",
                     "--time-limit", "1h", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 0, err  # nothing failed, and every cell measured something
    rd = _only_run(tmp_path)
    run = load(rd)
    assert {e.cell_id: e.status for e in run.entries} == dict.fromkeys(SMOKE, "skipped")
    for cid in SMOKE:
        c = run.result(cid)
        assert c.measured and not c.ok
        want = "1 of 2 processes; process 2 of 2: left by --time-limit 60 min"
        assert c.partial.startswith(want), c.partial
        assert [p.status for p in c.processes] == ["ok", "skipped"]
        assert all(sum(m["processes"]) == len(m["samples"]) > 0 for m in c.metrics.values())
    assert "2 cell(s) reported from the processes they finished" in err
    report = json.loads((rd.path / "report.json").read_text())
    shown = {r["cell"] for r in report["unmatched"]}
    assert shown == SMOKE  # each cell's metrics are in the report, measured by its first process
    md = (rd.path / "report.md").read_text()
    assert md.count("reported from 1 of 2 processes; process 2 of 2: left by --time-limit") == 2


def test_a_run_that_measured_no_cell_exits_1_saying_so(tmp_path, monkeypatch, capsys):
    _limit_passes_before_round(monkeypatch, 1)
    code = cli.main(["run", "--suite", "smoke", "--runner", "local", "--quick", "--time-limit", "1h",
                     "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.count("reproduce.py: no cell of the run measured anything") == 1
    run = load(_only_run(tmp_path))
    assert {e.status for e in run.entries} == {"skipped"} and not run.measured()
    code = cli.main(["report", str(_only_run(tmp_path).path)])
    assert code == 1 and "no cell of the run measured anything" in capsys.readouterr().err


def _process(i: int, status: str = "ok", samples=(1.0, 2.0)) -> dict:
    m = {"unit": "ms", "samples": list(samples), "raw_seconds": [s / 1000 for s in samples],
         "warmup": 0, "warmup_seconds": [], "stop_reason": "min_samples", "items_per_sample": 1,
         "derivation": "1000 * seconds", "method": "t", "sync": "none"}
    return {"run_id": "r", "cell_id": "a/b", "stack": "s", "workload": "w", "status": status,
            "reason": None if status == "ok" else f"{status} here", "process": i,
            "metrics": {"t": m} if status == "ok" else {}}


def test_only_processes_that_measured_nothing_leave_the_others_reported():
    # interrupted (Ctrl-C) or not run yet: the finished processes are reported
    for later in ({3: _process(3, "interrupted")}, {}):
        c = models.cell(merge.merge({1: _process(1), 2: _process(2), **later}, 4))
        assert c.measured and c.partial.startswith("2 of 4 processes; process 3 of 4: ")
    # a failed, crashed or timed-out process calls the whole cell into question: not reported
    for bad in ("failed", "crashed", "timeout", "oom"):
        c = models.cell(merge.merge({1: _process(1), 2: _process(2, bad)}, 2))
        assert not c.measured and c.partial is None
    # no process finished: nothing to report
    c = models.cell(merge.merge({1: _process(1, "skipped")}, 2))
    assert not c.measured


def test_a_process_stopped_by_the_limit_keeps_what_it_measured(tmp_path, capsys):
    """The harness keeps its samples on disk as it goes (every 5 s, atomically); a process the limit
    stops leaves them, and its result keeps them as `cut`, which the report lists (100,000 samples
    take minutes on any machine, so the 1-minute limit stops the LSTM cell while it samples)."""
    from reprokit import validate

    lstm = "smoke/pytorch/nn_lstm/b8-s5-h32"
    code = cli.main(["run", "--suite", "smoke", "--cells", lstm, "--runner", "local", "--time-limit", "1m",
                     "--min-samples", "100000", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "no cell of the run measured anything" in err, err
    rd = _only_run(tmp_path)
    doc = rd.load_cell(lstm)
    assert doc["status"] == "skipped" and doc["skip"]["when"] == "while_running", doc["reason"]
    assert not validate.errors("cell_result", doc)
    sampling = doc["cut"]["sampling"]
    assert sampling["metric"] and len(sampling["raw_seconds"]) > 0
    assert all(s > 0 for s in sampling["raw_seconds"])
    assert not list((rd.cells_dir / ".partial").glob("*.json"))  # adopted into the result
    md = (rd.path / "report.md").read_text()
    assert f"it had taken {len(sampling['raw_seconds']):,} samples of {sampling['metric']}" in md


def test_a_merged_cell_lists_each_stopped_process_once():
    cut = {"at": "t", "finished": {"a": {}}, "sampling": {"metric": "t", "unit": "ms",
                                                          "raw_seconds": [0.1, 0.2], "warmup_seconds": []}}
    stopped = [{**_process(i, "skipped"), "cut": cut} for i in (1, 2)]
    c = models.cell(merge.merge({1: stopped[0], 2: stopped[1]}, 2))
    assert c.cut is None
    assert c.cuts() == [f"process {i} had taken 2 samples of t after finishing a when it was stopped (kept "
                        "in its result file; no verdict uses them: it ended before its stopping rule)"
                        for i in (1, 2)]
