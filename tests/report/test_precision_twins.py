"""The report puts each framework-defaults twin beside its fp32 cell, so a user sees what TF32 buys; on a
CPU run the twins are not run, and the report says why in one line."""

from __future__ import annotations

from conftest import REPO

from reprokit.report import variants
from tests import models

FP32 = "modern/000/pytorch/nn_lstm/b128-s30-h512"
TWIN = FP32 + "/framework-defaults"


def _cell(cid: str, seconds: list[float], effective: str, status: str = "ok") -> dict:
    return {"cell_id": cid, "status": status, "reason": None if status == "ok" else "made so",
            "precision": {"effective": effective},
            "metrics": {"train_time_per_example": {"unit": "ms", "samples": seconds}}}


def test_a_twin_that_ran_is_beside_its_fp32_cell_with_the_ratio():
    cells = {FP32: _cell(FP32, [2.0] * 7, "fp32"), TWIN: _cell(TWIN, [1.0] * 7, "tf32")}
    twins = variants.precision_twins(models.run(suite="modern", cells=cells))
    (row,) = twins["ran"]
    assert row["cell"] == TWIN and row["fp32_cell"] == FP32
    assert row["precision"] == {"fp32": "fp32", "defaults": "tf32"}
    train = next(m for m in row["metrics"] if m["metric"] == "train_time_per_example")
    assert train["ratio"] == 0.5 and train["as_published"]["median"] == 2.0
    assert twins["not_run"] == []


def test_twins_not_run_are_counted_by_reason():
    skipped = {**_cell(TWIN, [], "fp32", "skipped"),
               "reason": "framework defaults are fp32 on a CPU: same as the fp32 cell"}
    twins = variants.precision_twins(models.run(suite="modern", cells=[_cell(FP32, [2.0] * 7, "fp32"),
                                                                       skipped]))
    assert twins == {"ran": [], "not_run": [
        {"reason": "framework defaults are fp32 on a CPU: same as the fp32 cell", "cells": 1}]}
    assert variants.precision_twins(models.run(suite="legacy-2017")) == {"ran": [], "not_run": []}


def test_a_cpu_run_of_twins_renders_the_section(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "--suite", "modern", "--cells",
                        "modern/000/pytorch/*/framework-defaults", "--runner", "local", "--results",
                        str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=str(REPO))
    # on a CPU both twins are skipped (same as their fp32 cells): nothing was measured, so exit 1
    assert p.returncode == 1 and "no cell of the run measured anything" in p.stderr, p.stderr
    (run,) = [d for d in tmp_path.iterdir() if (d / "run.json").exists()]
    md, html = (run / "report.md").read_text(), (run / "report.html").read_text()
    assert "## Framework defaults beside fp32" in md
    assert "2 twin(s) not run: framework defaults are fp32 on a CPU: same as the fp32 cell" in md
    assert 'id="precision-twins"' in html

