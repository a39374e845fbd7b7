"""An IMPLAUSIBLE published number says whether its source's defect, reproduced here,
explains it (EXPLAINED / UNEXPLAINED, with the arithmetic), or why that is not decided here.

The GPU cell is the stored H100 cell of source 001 (docs/gpu-run), which timed the published loop without
synchronisation (train_wps, eval_wps) and the same loop synchronised (..._synced) in one process; the CPU
cell is the sample run's (docs/sample-run), where the two timings are the same."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import run_with_todays_data

from reprokit.analysis import defects, verdicts
from reprokit.catalog import suites
from reprokit.reader import load
from reprokit.reader.frozen import freeze, thaw
from reprokit.report.report import render
from tests import models

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "docs" / "gpu-run" / "20261126T175757Z-legacy-2017"
(SAMPLE,) = (REPO / "docs" / "sample-run").iterdir()
CELL = "001/pytorch/word_lm/b128-s128-h1024"


def _with_cell(run, doc: dict):
    """The run with one cell's result replaced by `doc` (a cell result document)."""
    cell = models.cell(doc)
    return dataclasses.replace(run, results=freeze({**run.results, cell.cell_id: cell}))


def _implausible(run) -> list[dict]:
    return [v for v in verdicts.verdicts_for_run(suites.load_published("001"), run, suites.load_sources())
            if v["verdict"] == verdicts.IMPLAUSIBLE]


def test_the_six_h100_rows_are_explained_by_the_missing_synchronisation():
    rows = _implausible(load.load(H100))
    assert len(rows) == 6
    for v in rows:
        (e,) = v["explanations"]
        assert e["defect"] == "d001-no-sync" and e["label"] == defects.EXPLAINED
        assert verdicts.EXPLAINED in v["labels"] and verdicts.ABOVE_PEAK in v["labels"]
        assert e["inflation_there"] >= e["inflation_needed"] > 1
        assert "inflates it 12.9x here" in e["arithmetic"] or "inflates it 12.8x here" in e["arithmetic"]
        assert "enough to explain it" in e["arithmetic"] and "assumes the host-side time" in e["arithmetic"]
        assert "EXPLAINED by d001-no-sync" in v["reason"]


def test_a_defect_that_inflates_too_little_leaves_the_number_unexplained():
    run = load.load(H100)
    cell = thaw(run.result(CELL).doc)
    for m in ("train_wps", "eval_wps"):  # the unsynchronised loop only 1.1x its synchronised rate
        synced = sorted(cell["metrics"][f"{m}_synced"]["samples"])
        cell["metrics"][m]["samples"] = [1.1 * x for x in synced]
    for v in _implausible(_with_cell(run, cell)):
        (e,) = v["explanations"]
        assert e["label"] == defects.UNEXPLAINED and "another cause must add the rest" in e["arithmetic"]
        assert verdicts.UNEXPLAINED in v["labels"]


def test_on_a_cpu_the_defect_cannot_reproduce_and_nothing_is_decided():
    for v in _implausible(load.load(SAMPLE)):
        (e,) = v["explanations"]
        assert e["label"] == defects.NOT_DECIDED and "reproduces on GPU only" in e["arithmetic"]
        assert not {verdicts.EXPLAINED, verdicts.UNEXPLAINED} & set(v["labels"])


def test_the_report_of_a_run_with_todays_catalogue_says_explained(tmp_path):
    """The committed docs/gpu-run report is rendered from its own data snapshot, which predates the
    catalogue's `explains` blocks; a copy given today's sources.yaml says EXPLAINED in every 001 row."""
    dst = tmp_path / H100.name
    render(run_with_todays_data(H100, dst))
    md = (dst / "report.md").read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("| PyTorch") and "| 001-L05" in ln]
    assert len(rows) == 6 and all("IMPLAUSIBLE ABOVE_PEAK EXPLAINED" in r for r in rows)
    assert all("EXPLAINED by d001-no-sync: it needs its timing inflated at least" in r for r in rows)
    doc = json.loads((dst / "report.json").read_text())
    assert sum(1 for n in doc["numbers"] if "EXPLAINED" in n.get("labels", [])) == 6


# -- d003-no-final-sync (mechanism drops_tail): the as-published PyTorch forward stops its timer without
# waiting for the device. The stored H100 cell predates the end-synced figure; the tests give it one.
STACKED = REPO / "docs" / "gpu-run" / "20261126T180107Z-stacked-lstm-2019"
FORWARD = "003/pytorch/eager_cudnn/forward"
SUSPECT = ("003-L428", "003-L429", "003-L430")


def _suspects(inflation: float | None, queued: int | None) -> dict[str, list[dict]]:
    run = load.load(STACKED)
    if inflation is not None:
        cell = thaw(run.result(FORWARD).doc)
        avg = cell["metrics"]["time_per_batch"]["as_published"]["value"]
        cell["metrics"]["time_per_batch_end_synced"] = {"unit": "s", "samples": [avg * inflation]}
        cell["metrics"]["seq_per_s_end_synced"] = {"unit": "seq/s", "samples": [128 / (avg * inflation)]}
        cell.setdefault("extra", {})["end_sync"] = {"tail_s": 50 * avg * (inflation - 1),
                                                    "planned_batches": 50, "launch_queue_batches": queued}
        run = _with_cell(run, cell)
    return {v["number_id"]: v["explanations"]
            for v in verdicts.verdicts_for_run(suites.load_published("003"), run, suites.load_sources())
            if v["number_id"] in SUSPECT}


def test_without_the_end_synced_figure_the_missing_final_sync_is_not_decided():
    """Before the catalogue said how to reproduce it, these read 'no known defect explains it'."""
    got = _suspects(None, None)
    assert set(got) == set(SUSPECT)
    for ex in got.values():
        (e,) = ex
        assert e["defect"] == "d003-no-final-sync" and e["label"] == defects.NOT_DECIDED
        assert "were not both measured in this run" in e["arithmetic"]


def test_a_tail_as_large_as_the_need_explains_the_suspicious_forward_rows():
    for ex in _suspects(1.5, 40).values():
        (e,) = ex
        assert e["label"] == defects.EXPLAINED and abs(e["inflation_here"] - 1.5) < 1e-9
        assert "enough to explain it" in e["arithmetic"] and "1.5x here" in e["arithmetic"]


def test_a_small_tail_and_a_short_launch_queue_leave_them_unexplained():
    """3 batches queued (+1 being launched) of 50: at most 50/46 = 1.087x on any device < 1.31x."""
    for ex in _suspects(1.02, 3).values():
        (e,) = ex
        assert e["label"] == defects.UNEXPLAINED and abs(e["inflation_there"] - 50 / 46) < 1e-9
        assert "at most 4 of the 50 timed batches fit" in e["arithmetic"]
        assert "another cause must add the rest" in e["arithmetic"]


@pytest.mark.parametrize("queued", [30, None])
def test_a_small_tail_with_room_in_the_queue_is_not_decided(queued):
    for ex in _suspects(1.02, queued).values():
        (e,) = ex
        assert e["label"] == defects.NOT_DECIDED and e["inflation_there"] is None
        assert "may have held more of it queued" in e["arithmetic"]
        if queued is None:
            assert "no upper limit" in e["arithmetic"]


def test_a_defect_explains_only_the_numbers_it_applies_to():
    """d003-no-final-sync applies to forward rows on the RTX: a train row with the same metric that
    is suspicious is not given its label."""
    (n,) = [dict(n) for n in suites.load_published("003") if n["id"] == "003-L428"]
    n["defects"] = [d for d in n["defects"] if d != "d003-no-final-sync"]
    bound = {"fraction_of_bound": 0.66, "tier": "SUSPICIOUS", "suspicious_fraction": 0.5,
             "device": "GeForce RTX 2080 Ti"}
    (e,) = defects.explain(n, bound, None, None)
    assert e["defect"] is None and e["label"] == defects.UNEXPLAINED
