"""A claim pair's speed-up as a ratio with its interval beside the published ratio and
the claimed range, each side's roofline class (what bounds it on its device) and whether the ratio is
expected to carry to another device; the first screen names the claims decided here.

The GPU cells are the stored H100 cells of docs/gpu-run (one process each); the CPU run is
docs/calibration's stacked-lstm-2019 run measured on this kit's 2-core VM. Both were recorded before the
rule existed, so their data snapshots lack it: the copies here get today's verdict_policy.yaml, and one
test checks what an old snapshot says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_with_todays_data

from reprokit import files, kitdata, results
from reprokit.analysis import claims, roofline
from reprokit.reader import load
from reprokit.report.report import render
from reprokit.run.record import write_run
from tests import models

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "docs" / "gpu-run" / "20261126T180107Z-stacked-lstm-2019"
CPU_RUN = REPO / "docs" / "calibration" / "20261127T132330Z-stacked-lstm-2019"
RULE = kitdata.load("verdict_policy")["roofline_class"]


def _with_todays_rule(src: Path, dst: Path) -> results.RunDir:
    return run_with_todays_data(src, dst)


def test_the_h100_cells_are_launch_bound_mixed_or_without_a_roofline():
    """The H100 ran 003's fine-grained cells at 1.4 % of its fp32 bound: kernel launches bound them, so
    a ratio between them says nothing about another GPU; cuDNN's fused LSTM reached 22 % (mixed); the JIT
    cells' FLOP model is withheld by d003-jit-broken."""
    got = {(o["cell_id"], o["metric"]): o["roofline"]
           for o in claims.observations_from_cells(load.load(H100))}
    fine = got[("003/pytorch/eager_fine_grained/forward", "time_per_batch")]
    assert fine["class"] == roofline.LAUNCH and fine["compute_fraction"] < RULE["launch_fraction"]
    assert fine["memory_fraction"] < RULE["launch_fraction"]
    assert got[("003/pytorch/eager_cudnn/forward", "time_per_batch")]["class"] == roofline.MIXED
    jit = got[("003/pytorch/jit_static/train", "time_per_batch")]
    assert jit["class"] == roofline.UNKNOWN and "d003-jit-broken" in jit["why"]


def _fine_cell():
    """The stored cell result, brought to today's version of the format."""
    return files.read_json(H100 / "cells" / "003__pytorch__eager_fine_grained__forward.json", "cell_result")


@pytest.mark.parametrize("device, want", [
    ({"kind": "gpu", "peaks": {"fp32": 0.001}, "bandwidth_gbs": 3350.0}, roofline.COMPUTE),
    ({"kind": "gpu", "peaks": {"fp32": 51.2}, "bandwidth_gbs": 0.5}, roofline.MEMORY),
    ({"kind": "gpu", "peaks": {"fp32": 51.2}, "bandwidth_gbs": 3350.0}, roofline.LAUNCH),
    ({"kind": "gpu", "peaks": {"fp32": 2.0}, "bandwidth_gbs": 3350.0}, roofline.MIXED),
    ({"kind": "cpu", "peak_tflops": 51.2, "bandwidth_gbs": 3350.0}, roofline.OVERHEAD),
    ({"kind": "cpu", "peak_tflops": 51.2, "bandwidth_gbs": None}, roofline.UNKNOWN),
    ({"kind": "gpu", "peaks": {}, "bandwidth_gbs": 3350.0}, roofline.UNKNOWN),
])
def test_the_class_follows_the_shares_of_the_two_bounds(device, want):
    cell = models.cell(_fine_cell())
    samples = sorted(cell.metrics["time_per_batch"]["samples"])
    median = samples[len(samples) // 2]
    got = roofline.cell_class(cell, "time_per_batch", cell.metrics["time_per_batch"]["unit"], median,
                              device, RULE)
    assert got["class"] == want, got
    assert roofline.cell_class(cell, "time_per_batch", "s", median, device, None)["why"] == roofline.NO_RULE


def test_which_ratios_are_expected_to_carry():
    assert roofline.ratio_carries(roofline.COMPUTE, roofline.COMPUTE, RULE)[0] == "expected"
    assert roofline.ratio_carries(roofline.MEMORY, roofline.MEMORY, RULE)[0] == "expected"
    assert roofline.ratio_carries(roofline.LAUNCH, roofline.COMPUTE, RULE)[0] == "not expected"
    assert roofline.ratio_carries(roofline.OVERHEAD, roofline.OVERHEAD, RULE)[0] == "not expected"
    assert roofline.ratio_carries(roofline.COMPUTE, roofline.MEMORY, RULE)[0] == "no expectation"
    assert roofline.ratio_carries(roofline.MIXED, roofline.MIXED, RULE)[0] == "no expectation"
    assert roofline.ratio_carries(roofline.COMPUTE, roofline.COMPUTE, None) == ("no expectation",
                                                                               roofline.NO_RULE)


def test_a_gpu_claim_pair_shows_its_ratio_published_ratio_and_classes(tmp_path):
    """A GPU fixture: the H100 run with a JIT fine-grained forward cell made from its eager one with every
    sample halved (synthetic: the H100 session ran no JIT fine-grained cell), so c003-jit-2-5x-on-gpu's
    forward pair has both sides measured on the GPU."""
    rd = _with_todays_rule(H100, tmp_path / H100.name)
    cell = _fine_cell()
    cell["cell_id"] = "003/pytorch/jit_fine_grained/forward"
    cell["workload"], cell["variant"] = "s003_pytorch", "jit_fine_grained"
    for m in cell["metrics"].values():
        factor = 2.0 if m["unit"].endswith("/s") else 0.5
        m["samples"] = [x * factor for x in m["samples"]]
        m["raw_seconds"] = [x * 0.5 for x in m["raw_seconds"]]
        pub = m["as_published"]  # the figure of the source's own definition, from the same seconds
        pub["value"] *= factor
        for seg in pub["segments"]:
            seg["seconds"] = [x * 0.5 for x in seg["seconds"]]
    rd.write_cell(cell)
    run = rd.load_run()
    eager = next(e for e in run["cells"] if e["cell_id"] == "003/pytorch/eager_fine_grained/forward")
    run["cells"].append(dict(eager, cell_id=cell["cell_id"],
                             file=f"cells/{cell['cell_id'].replace('/', '__')}.json"))
    write_run(rd, run)
    render(rd)
    report = json.loads((rd.path / "report.json").read_text())
    (row,) = [x for x in report["claim_ratios"] if x["claim"] == "c003-jit-2-5x-on-gpu"]
    assert row["here"].startswith("2x [") and row["published"].endswith("x")
    assert "GeForce RTX 2080 Ti" in row["published_on"] and row["claimed"].startswith("[")
    assert row["classes"][1].startswith("launch-bound (1.4 % of the compute bound")
    assert row["carries"] == "not expected"
    md = (rd.path / "report.md").read_text()
    assert "The speed-ups here beside the published ones" in md and "| c003-jit-2-5x-on-gpu |" in md


def test_the_cpu_run_shows_its_claims_as_ratio_intervals_and_the_first_screen_names_them(tmp_path):
    rd = _with_todays_rule(CPU_RUN, tmp_path / CPU_RUN.name)
    render(rd)
    report = json.loads((rd.path / "report.json").read_text())
    rows = report["claim_ratios"]
    assert len(rows) >= 16 and all(" [" in x["here"] and x["interval"] for x in rows)
    assert all("Haswell" in x["published_on"] for x in rows)
    assert {x["carries"] for x in rows} <= {"expected", "not expected", "no expectation"}
    assert any(x["classes"][0].startswith("compute-bound (") for x in rows)
    first = (rd.path / "report.md").read_text().split("## ")[1]
    assert ("decided here: c003-order-static-cpu-train HOLDS (1.14x [1.07, 1.24] here, published 1.58x"
            in first)


def test_a_run_recorded_before_the_rule_says_so(tmp_path):
    shutil.copytree(CPU_RUN, tmp_path / "old")
    rd = results.RunDir(tmp_path / "old")
    render(rd)
    rows = json.loads((rd.path / "report.json").read_text())["claim_ratios"]
    assert rows and all(x["carries_why"] == roofline.NO_RULE for x in rows)
