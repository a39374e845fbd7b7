"""Corrected and alternative cells are labelled in the suite data (kind, the defects
they correct, the as-published cell they stand beside) and the report puts each beside its
as-published cell with the ratio of the medians; compile metrics show their cache state."""

from __future__ import annotations

import pytest

from reprokit import formats, results
from reprokit.catalog import suites
from reprokit.errors import UserError
from reprokit.reader import load
from reprokit.report import context, report
from reprokit.run.record import write_run

RUN_ID = "20260101T000000Z-legacy-2017"
PUB = "000/tensorflow/basic_lstm/b128-s30-h512"
FIXED = "000/tensorflow/basic_lstm_fixed/b128-s30-h512"
THEANO = "000/theano/fastlstm/b128-s30-h512"
THEANO_ALT = "000/theano/lstm/b128-s30-h512"


def test_suites_label_every_corrected_and_alternative_cell():
    cells = {c.id: c for c in suites.load_suite("legacy-2017").cells}
    assert cells[PUB].label is None
    assert cells[FIXED].label == {"kind": "corrected", "defects": ["d000-tf-transfers"],
                                  "as_published_cell": PUB}
    assert cells[THEANO_ALT].label == {"kind": "alternative", "defects": ["d000-theano-class"],
                                       "as_published_cell": THEANO}
    assert "compile_time_warm" in cells[THEANO].metrics and "compile_time_warm" in cells[THEANO_ALT].metrics
    s003 = {c.id: c for c in suites.load_suite("stacked-lstm-2019").cells}
    for v, defect in (("graph_fine_grained", "d003-graph-fetch"), ("graph_static", "d003-graph-fetch"),
                      ("graph_cudnn", "d003-graph-fetch"), ("eager_fine_grained", "d003-no-final-sync"),
                      ("eager_static", "d003-no-final-sync"), ("eager_cudnn", "d003-no-final-sync")):
        c = s003[f"003/tensorflow/{v}_fixed/forward"]
        assert c.label["kind"] == "corrected" and defect in c.label["defects"]
        assert c.label["as_published_cell"] == f"003/tensorflow/{v}/forward"
        assert f"003/tensorflow/{v}_fixed/train" not in s003  # train has no such defect
    for v in ("eager_fine_grained", "eager_static", "eager_cudnn", "jit_fine_grained", "jit_static"):
        c = s003[f"003/pytorch/{v}_fixed/forward"]
        assert {"d003-no-final-sync", "d003-forward-autograd"} <= set(c.label["defects"])
    whileop = s003["003/tensorflow/graph_whileop_fine_grained_fixed/train"]
    assert set(whileop.label["defects"]) == {"d003-whileop-forward-only", "d003-graph-fetch"}


def test_a_label_without_the_cells_variant_is_a_user_error():
    group = {"id": "x/{variant}", "source": "000", "stack": "tf-1.2", "framework": "tensorflow",
             "workload": "s000_tensorflow", "metrics": ["m"], "matrix": {"variant": ["a_fixed", "b"]},
             "label": {"kind": "corrected", "defects": ["d000-tf-transfers"],
                       "as_published": {"a_fixed": "a"}}}
    with pytest.raises(UserError, match="no as-published variant for variant 'b'"):
        suites._expand(group)


def _metric(unit, samples, state=None):
    m = {"unit": unit, "samples": samples, "raw_seconds": [0.1] * len(samples), "items_per_sample": 1,
         "derivation": "test", "warmup": 0, "warmup_seconds": [],
         "stop_reason": "single" if len(samples) == 1 else "time_budget", "method": "test",
         "sync": "n/a: CPU execution is synchronous"}
    if state:
        m["state"] = state
    return m


def _cell(cell_id, stack, metrics):
    source, framework, variant, _ = cell_id.split("/")
    return {"schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": RUN_ID,
            "cell_id": cell_id, "source": source, "stack": stack, "workload": f"s{source}_{framework}",
            "variant": variant, "params": {"batch": 128}, "status": "ok", "reason": None, "device": "cpu",
            "protocol": "budget", "metrics": metrics,
            "implementation": {"framework": framework, "notes": [], "substitutes": []},
            "kit": {"version": "test", "git_commit": "test"}}


@pytest.fixture()
def run(tmp_path, monkeypatch):
    from reprokit.report import plots
    monkeypatch.setattr(plots, "table_svg", lambda rows, anchor: "<svg></svg>")  # speed only
    rd = results.RunDir(tmp_path / RUN_ID)
    cold, warm = "cold: fresh empty Theano compile cache", "warm: test"
    cells = [
        _cell(PUB, "tf-1.2", {"forward_time_per_example": _metric("ms", [2.0, 2.1, 1.9, 2.0, 2.0, 2.2]),
                              "train_time_per_example": _metric("ms", [4.0] * 6),
                              "compile_time": _metric("s", [1.5])}),
        _cell(FIXED, "tf-1.2", {"forward_time_per_example": _metric("ms", [1.0, 1.05, 0.95, 1.0, 1.0, 1.1]),
                                "train_time_per_example": _metric("ms", [3.0] * 6),
                                "compile_time": _metric("s", [1.8])}),
        _cell(THEANO, "theano-0.9", {"compile_time": _metric("s", [60.0], cold),
                                     "compile_time_warm": _metric("s", [8.0], warm),
                                     "forward_time_per_example": _metric("ms", [1.4] * 6),
                                     "train_time_per_example": _metric("ms", [4.4] * 6)}),
    ]
    for c in cells:
        rd.write_cell(c)
    write_run(rd, {
        "schema_version": formats.version("run"), "kind": "run", "run_id": RUN_ID, "suite": "legacy-2017",
        "argv": ["reproduce.py"], "runner": "local", "protocol": "budget", "quick": True,
        "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z", "wall_s": 1.0,
        "host_fingerprint": {"kind": "host_fingerprint", "cpu": {"model_name": "Test CPU"},
                             "nvidia": {"available": False}, "gpus": []},
        "kit": {"version": "test", "git_commit": "test", "git_dirty": False},
        "cells": [{"cell_id": c["cell_id"], "stack": c["stack"], "status": "ok", "reason": None,
                   "result_file": "cells/" + results.cell_filename(c["cell_id"])} for c in cells]})
    return rd


def test_report_puts_the_corrected_cell_beside_its_as_published_one(run):
    ctx = context.build_context(load.load(run))
    variants = {v["cell"]: v for v in ctx["variants"]}
    assert set(variants) == {FIXED}  # the alternative Theano cell is not in this run
    v = variants[FIXED]
    assert v["kind"] == "corrected" and v["defects"] == ["d000-tf-transfers"]
    assert v["as_published_cell"] == PUB and v["note"] is None
    rows = {m["metric"]: m for m in v["metrics"]}
    assert rows["forward_time_per_example"]["ratio"] == pytest.approx(0.5)
    assert rows["forward_time_per_example"]["reading"] == "2x faster"
    assert rows["train_time_per_example"]["ratio"] == pytest.approx(0.75)
    assert rows["compile_time"]["ratio"] == pytest.approx(1.2)
    report.render(run)
    md = (run.path / "report.md").read_text()
    section = md.split("## Corrected and alternative variants", 1)[1].split("\n## ", 1)[0]
    assert (f"| {FIXED} | corrected | d000-tf-transfers | {PUB} | forward_time_per_example | 2 ms | 1 ms "
            "| 0.5 (2x faster) |") in section
    html = (run.path / "report.html").read_text()
    assert 'id="variants"' in html and FIXED in html.split('id="variants"', 1)[1]


def test_compile_times_show_their_cache_state(run):
    """The published Theano compile_time row shows the cold state; the warm one, which no number maps
    to, is listed with its state among the metrics without a published counterpart."""
    report.render(run)
    md = (run.path / "report.md").read_text()
    row = [line for line in md.splitlines() if "| 000-L002 |" in line][0]
    assert "cold: fresh empty Theano compile cache" in row
    assert f"| {THEANO} | fastlstm | compile_time_warm (warm: test) |" in md
