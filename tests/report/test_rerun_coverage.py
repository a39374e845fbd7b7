"""scripts/bench_rerun_coverage.py: does run B's median fall inside run A's interval, and the file the
report quotes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import kitdata, validate
from reprokit.report import run_health

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tests" / "data" / "runs"


def test_compare_two_stored_runs_counts_medians_inside(tmp_path):
    out = tmp_path / "rc.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"), "--compare",
                           str(RUNS / "cpu-a"), str(RUNS / "cpu-b"), "--write", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert validate.errors("rerun_coverage", doc) == []
    assert len(doc["measurements"]) == 1
    s = doc["measurements"][0]["summary"]
    # cpu-b redraws every metric from cpu-a's distributions except cudnn train, moved by +25 %
    assert s["pairs"] == 9 and 0 < s["inside"] < s["pairs"]
    assert s["coverage"] == pytest.approx(s["inside"] / 9)
    assert s["shift_max"] == pytest.approx(0.25, abs=0.02)
    out_lines = [line for line in proc.stdout.splitlines() if line.startswith("OUT")]
    assert any("cudnn_lstm" in line and "train_time_per_example" in line for line in out_lines)
    assert doc["measurements"][0]["machine"] == "AMD Zen 3 (family 25 model 1), 8 cores"
    assert s["shift_rms"] >= s["shift_median"] and s["shift_rms"] == pytest.approx(
        (sum(x * x for x in _shifts(proc.stdout)) / 9) ** 0.5, rel=0.01)
    assert s["half_width_over_drift"] == pytest.approx(s["half_width_median"] / s["shift_median"])
    assert doc["measurements"][0]["design"] == "old" and len(doc["measurements"][0]["wall_s"]) == 2
    # a second measurement of the same kind replaces the first; the file stays valid
    again = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"), "--compare",
                            str(RUNS / "cpu-b"), str(RUNS / "cpu-a"), "--write", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    doc = json.loads(out.read_text())
    assert len(doc["measurements"]) == 1 and doc["measurements"][0]["runs"] == ["cpu-b", "cpu-a"]


def _shifts(stdout: str) -> list[float]:
    return [float(line.split("moved ")[1].split("%")[0]) / 100 for line in stdout.splitlines()
            if " moved " in line]


def _with_process_files(src: Path, dst: Path, main_factor: float) -> Path:
    """A copy of run `src` whose cells also have a process-1 file (the original samples), while the main
    results' samples are scaled by `main_factor`: --process 1 must read the former."""
    import shutil

    shutil.copytree(src, dst)
    for f in sorted((dst / "cells").glob("*.json")):
        doc = json.loads(f.read_text())
        (dst / "cells" / f.name.replace(".json", ".p1.json")).write_text(json.dumps({**doc, "process": 1}))
        for m in (doc.get("metrics") or {}).values():
            m["samples"] = [x * main_factor for x in m.get("samples") or []]
        f.write_text(json.dumps(doc))
    return dst


def test_compare_process_n_reads_each_cells_process_file(tmp_path):
    a = _with_process_files(RUNS / "cpu-a", tmp_path / "a", 1.0)
    b = _with_process_files(RUNS / "cpu-b", tmp_path / "b", 3.0)  # main results: every median 3x
    script = [sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"), "--compare", str(a), str(b)]
    whole = subprocess.run(script, capture_output=True, text=True, timeout=120)
    assert whole.returncode == 0, whole.stderr
    assert min(_shifts(whole.stdout)) > 1.5  # the main results moved by 200 %
    per_process = subprocess.run([*script, "--process", "1"], capture_output=True, text=True, timeout=120)
    assert per_process.returncode == 0, per_process.stderr
    plain = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"), "--compare",
                            str(RUNS / "cpu-a"), str(RUNS / "cpu-b")], capture_output=True, text=True,
                           timeout=120)
    assert _shifts(per_process.stdout) == _shifts(plain.stdout)  # the process files: cpu-a vs cpu-b


def test_the_packaged_measurement_is_valid_and_quoted(monkeypatch):
    path = REPO / "reprokit" / "data" / "rerun_coverage.json"
    assert path.exists(), "the packaged re-run coverage measurement is gone (scripts/bench_rerun_coverage.py)"
    doc = json.loads(path.read_text())
    assert validate.errors("rerun_coverage", doc) == []
    for m in doc["measurements"]:  # each quoted for a run whose intervals carry its between-run term
        basis = (m.get("run_term") or {}).get("basis", "none")
        monkeypatch.setattr(run_health, "_term_basis", lambda run, basis=basis: basis)
        quoted = run_health.rerun_coverage(m["summary"]["processes"])
        assert f"{m['summary']['inside']} of {m['summary']['pairs']}" in quoted["text"]
        assert m["command"] in quoted["text"] and m["date"] in quoted["text"]


def test_compare_pools_several_pairs_into_one_measurement(tmp_path):
    out = tmp_path / "rc.json"
    script = [sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py")]
    one = subprocess.run(script + ["--compare", str(RUNS / "cpu-a"), str(RUNS / "cpu-b")],
                         capture_output=True, text=True, timeout=120)
    pairs = ["--compare", str(RUNS / "cpu-a"), str(RUNS / "cpu-b"), "--compare", str(RUNS / "cpu-b"),
             str(RUNS / "cpu-a")]
    pooled = subprocess.run(script + pairs + ["--write", str(out)], capture_output=True, text=True,
                            timeout=120)
    assert one.returncode == 0 and pooled.returncode == 0, (one.stderr, pooled.stderr)
    m = json.loads(out.read_text())["measurements"][0]
    assert validate.errors("rerun_coverage", json.loads(out.read_text())) == []
    assert m["runs"] == ["cpu-a", "cpu-b", "cpu-b", "cpu-a"] and len(m["wall_s"]) == len(m["load_1min"]) == 4
    assert m["summary"]["pairs"] == 18  # 9 metrics from each pair
    assert m["command"].count("--compare") == 2
    lines = [line for line in pooled.stdout.splitlines() if line.startswith(("in ", "OUT"))]
    assert len(lines) == 18 and lines[:9] == [line for line in one.stdout.splitlines()
                                               if line.startswith(("in ", "OUT"))]


def test_compare_refuses_to_pool_runs_of_two_machines(tmp_path):
    import shutil
    other = tmp_path / "cpu-b"
    shutil.copytree(RUNS / "cpu-b", other)
    run = json.loads((other / "run.json").read_text())
    run["host_fingerprint"]["cpu"]["model_name"] = "Another CPU"
    run["host_fingerprint"]["cpu"]["family"], run["host_fingerprint"]["cpu"]["model"] = "6", "143"
    (other / "run.json").write_text(json.dumps(run))
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"),
                           "--compare", str(RUNS / "cpu-a"), str(RUNS / "cpu-b"),
                           "--compare", str(RUNS / "cpu-a"), str(other)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "2 machines" in proc.stderr and proc.stdout == ""


def test_the_bound_simulation_reproduces_t_coverage_and_the_large_k_limits():
    """scripts/rerun_interval_bound.py: under pure process noise the kit's re-run interval covers 95 %
    at every K; its half-width is about 1.96x the rms drift only for large K, 2.9x the median drift."""
    import importlib.util

    import numpy as np
    spec = importlib.util.spec_from_file_location("bound", REPO / "scripts" / "rerun_interval_bound.py")
    bound = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bound)
    rng = np.random.default_rng(7)
    small, large = bound.simulate(3, 40_000, rng), bound.simulate(200, 40_000, rng)
    assert small["t"] == pytest.approx(4.303, abs=1e-3)
    for r in (small, large):
        assert r["coverage"] == pytest.approx(0.95, abs=0.006)
    assert small["over_rms_drift"] > 3.3 and small["over_median_drift"] > 4.8
    assert large["over_rms_drift"] == pytest.approx(1.96, abs=0.05)
    assert large["over_median_drift"] == pytest.approx(1.96 / 0.6745, abs=0.1)


def test_each_between_run_term_is_its_own_measurement_and_a_report_quotes_its_own(tmp_path, monkeypatch):
    out = tmp_path / "rc.json"
    script = [sys.executable, str(REPO / "scripts" / "bench_rerun_coverage.py"), "--compare",
              str(RUNS / "cpu-a"), str(RUNS / "cpu-b"), "--write", str(out)]
    for term in ("none", "default", "recorded"):
        proc = subprocess.run(script + ["--run-term", term], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert validate.errors("rerun_coverage", doc) == []
    # cpu-a recorded no history: "recorded" has no term, the same kind as "none", which it replaced
    assert [m["run_term"]["basis"] for m in doc["measurements"]] == ["default", "none"]
    default, none = doc["measurements"]
    cpu_default = kitdata.load("run_variation")["classes"]["cpu"]["sd_log"]
    assert default["run_term"]["pairs"] == [{"run": "cpu-a", "sd_log": pytest.approx(cpu_default),
                                             "df": 0, "earlier_runs": 0}]
    assert none["run_term"]["pairs"][0]["sd_log"] is None
    assert default["summary"]["half_width_median"] > none["summary"]["half_width_median"]
    assert default["summary"]["inside"] >= none["summary"]["inside"]

    from reprokit import results
    from reprokit.reader.model import Run

    load = run_health.kitdata.load
    monkeypatch.setattr(run_health.kitdata, "load",
                        lambda name, *a, **k: doc if name == "rerun_coverage.json" else load(name, *a, **k))
    doc_a = results.RunDir(RUNS / "cpu-a").load_run()
    without = Run.from_doc(doc_a)
    with_default = Run.from_doc({**doc_a, "history": {"runs": [], "cells": {}}})
    k = default["summary"]["processes"]
    assert run_health.rerun_coverage(k, without)["run_term"]["basis"] == "none"
    quoted = run_health.rerun_coverage(k, with_default)
    assert quoted["run_term"]["basis"] == "default" and "the kit's default between-run term" in quoted["text"]
