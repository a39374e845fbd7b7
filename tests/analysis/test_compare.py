"""`reproduce.py compare`: fingerprint diff and significant changes between two stored runs."""

import json
from pathlib import Path

import pytest

from reprokit import cli
from reprokit.analysis import compare_runs, diff
from reprokit.reader import load

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def compared():
    return compare_runs.compare_runs(load.load(RUNS / "cpu-a"), load.load(RUNS / "cpu-b"))


def change(result, cell, metric):
    return next(c for c in result["changes"] if c["cell_id"] == cell and c["metric"] == metric)


def test_clear_change_is_significant():
    r = compared()
    c = change(r, "000/tensorflow/cudnn_lstm/b128-s30-h512", "train_time_per_example")
    assert c["ratio"] == pytest.approx(1.25, rel=0.02)
    assert c["p_value"] < 1e-6 and c["significant"] and c["direction"] == "slower"
    same = change(r, "000/tensorflow/cudnn_lstm/b128-s30-h512", "forward_time_per_example")
    assert same["p_value"] is not None and not same["significant"] and abs(same["change"]) < 0.05
    single = change(r, "000/tensorflow/cudnn_lstm/b128-s30-h512", "compile_time")
    assert single["p_value"] is None and not single["significant"]
    assert r["summary"]["slower"] == 1


def test_fingerprint_differences_are_listed():
    r = compared()
    host = {row["field"]: row for row in r["host_diff"]}
    assert host["env.OMP_NUM_THREADS"]["differs"] and host["env.OMP_NUM_THREADS"]["a"] == "8"
    assert host["cpu.model_name"]["differs"] is False
    assert host["cpu"]["a"] == "AMD Zen 3 (family 25 model 1), 8 cores" and host["cpu"]["differs"] is False
    assert set(r["stack_diff"]) == {"tf-1.2", "torch-0.1", "tf-2.0", "torch-1.3"}


def test_two_cpus_with_one_marketing_name_are_told_apart():
    """'AMD EPYC' on a Zen 4 and on a Zen 5 host: the model name is the same, the device is not."""
    zen = {"model_name": "AMD EPYC", "vendor": "AuthenticAMD", "stepping": "1", "physical_cores": 2,
           "logical_cores": 2, "usable_cores": 2, "flags": ["avx2", "fma", "avx512f"]}
    zen4, zen5 = {**zen, "family": "25", "model": "17"}, {**zen, "family": "26", "model": "2"}
    rows = {r["field"]: r for r in diff.host_diff({"cpu": zen4}, {"cpu": zen5})}
    assert rows["cpu.model_name"]["differs"] is False
    assert rows["cpu"]["differs"] is True
    assert rows["cpu"]["a"].startswith("AMD Zen 4 (family 25 model 17)")
    assert rows["cpu"]["b"].startswith("AMD Zen 5 (family 26 model 2)")


def test_mann_whitney_edge_cases():
    assert compare_runs.mann_whitney_p([1.0], [2.0, 3.0]) is None
    assert compare_runs.mann_whitney_p([1.0, 1.0], [1.0, 1.0]) == 1.0
    assert compare_runs.mann_whitney_p([1, 2, 3, 4, 5, 6], [11, 12, 13, 14, 15, 16]) < 0.01


def test_cli_json_and_table(capsys):
    assert cli.main(["compare", str(RUNS / "cpu-a"), str(RUNS / "cpu-b"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["run_a"] == "cpu-a" and doc["summary"]["significant"] == 1
    assert cli.main(["compare", str(RUNS / "cpu-a"), str(RUNS / "cpu-b")]) == 0
    out = capsys.readouterr().out
    assert "slower" in out and "OMP_NUM_THREADS" in out


def test_cli_user_error_is_one_line(capsys, tmp_path):
    assert cli.main(["compare", str(tmp_path / "missing"), str(RUNS / "cpu-b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("reproduce.py: error:") and "\n" not in err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.json").write_text("{not json")
    assert cli.main(["compare", str(bad), str(RUNS / "cpu-b")]) == 2
    assert "unreadable" in capsys.readouterr().err


def test_table_shows_data_as_typed_not_as_rich_markup(capsys, tmp_path, monkeypatch):
    """A field read from a results file is printed literally: '[x, h]' is kept, and a '[red]'
    tag from a file neither disappears nor restyles the terminal."""
    import shutil

    b = tmp_path / "cpu-b"
    shutil.copytree(RUNS / "cpu-b", b)
    run = json.loads((b / "run.json").read_text())
    run["host_fingerprint"]["cpu"]["model_name"] = "cpu [x, h] [red]z[/red]"
    (b / "run.json").write_text(json.dumps(run))
    monkeypatch.setenv("COLUMNS", "250")
    assert cli.main(["compare", str(RUNS / "cpu-a"), str(b)]) == 0
    assert "cpu [x, h] [red]z[/red]" in capsys.readouterr().out


def test_piped_tables_keep_each_cell_id_on_one_line(tmp_path, repo):
    """Written to a pipe, rich would wrap the table at 80 columns and split every cell id."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run([sys.executable, str(repo / "reproduce.py"), "compare", str(RUNS / "cpu-a"),
                        str(RUNS / "cpu-b")], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    ids = [json.loads(f.read_text())["cell_id"] for f in (RUNS / "cpu-a" / "cells").glob("*.json")]
    assert ids and all(any(i in line for line in p.stdout.splitlines()) for i in ids), p.stdout


def _copy_run(tmp_path, name, **changes):
    import shutil

    d = tmp_path / name
    shutil.copytree(RUNS / "cpu-b", d)
    run = json.loads((d / "run.json").read_text())
    run.update(changes)
    (d / "run.json").write_text(json.dumps(run))
    return d


def test_two_suites_are_one_line_and_exit_2(capsys, tmp_path):
    """Two suites share no cell: one line, exit 2 (it said '0 metrics compared' and exited 0)."""
    other = _copy_run(tmp_path, "other-suite", suite="smoke")
    assert cli.main(["compare", str(RUNS / "cpu-a"), str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("reproduce.py: error:") and "\n" not in err
    assert "suite" in err and "smoke" in err


def test_nothing_measured_in_both_is_exit_1(capsys, tmp_path):
    d = _copy_run(tmp_path, "failed-b")
    for f in (d / "cells").glob("*.json"):
        cell = json.loads(f.read_text())
        cell["status"], cell["reason"] = "failed", "RuntimeError: made to fail"
        f.write_text(json.dumps(cell))
    run = json.loads((d / "run.json").read_text())
    for c in run["cells"]:
        c["status"], c["reason"] = "failed", "RuntimeError: made to fail"
    (d / "run.json").write_text(json.dumps(run))
    assert cli.main(["compare", str(RUNS / "cpu-a"), str(d)]) == 1
    err = capsys.readouterr().err
    assert "no metric was measured in both runs" in err


def test_cells_that_ran_on_other_nodes_get_their_own_table(capsys):
    """A Slurm run's cells may run on other nodes than the driver's: each such cell's node
    differences are a table of their own, or one line when the two nodes do not differ."""
    from reprokit.commands.compare import _print

    result = {"run_a": "A", "run_b": "B", "host_diff": [], "stack_diff": {},
              "node_diff": {"c1": {"node_a": "n1", "node_b": "n2",
                                   "rows": [{"field": "cpu_model", "a": "X", "b": "Y"}]},
                            "c2": {"node_a": "n1", "node_b": "n3", "rows": []}},
              "alpha": 0.05, "threshold": 0.05, "changes": [], "only_in_a": [], "only_in_b": ["c3"],
              "not_ok": [], "summary": {"compared": 0, "significant": 0, "faster": 0, "slower": 0}}
    _print(result, show_all=False)
    out = " ".join(capsys.readouterr().out.split())  # a table's title wraps at its width
    assert "host fingerprint: no differences in the compared fields" in out
    assert "c1: ran on n1 (A) and n2 (B)" in out and "cpu_model" in out and "Y" in out
    assert "c2: ran on n1 (A) and n3 (B), no differences in the compared fields" in out
    assert "only in B: c3" in out
