"""Every documented defect of the published numbers is in the kit's data, attached to
the numbers it affects, handled (a corrected or alternative cell, or a stated correction) and shown in
the report of any run of its suite.

The walk-through of seed_workloads.md is kept below as data (WALKTHROUGH): each defect the reference
describes for a source, with the defect id the kit gives it. Items of the reference that are not
defects of the published numbers are listed apart with the reason (NOT_DEFECTS).
"""

from __future__ import annotations

import re

import pytest

from reprokit import formats, results
from reprokit.analysis import claims
from reprokit.catalog import suites
from reprokit.report import report
from reprokit.run.record import write_run

# seed_workloads.md, source by source: (where the reference describes it, defect id)
WALKTHROUGH = {
    "000": [
        ("1.4 item 1", "d000-command-incomplete"), ("1.4 item 2", "d000-layout-readme"),
        ("1.4 item 3", "d000-loss-scale"), ("1.4 item 4", "d000-compile-boundary"),
        ("1.4 item 5", "d000-tf-transfers"), ("1.4 item 6", "d000-cudnn-ones"),
        ("1.4 items 1 and 7", "d000-theano-class"), ("1.2", "d000-theano-cache"),
    ],
    "001": [
        ("2.4 item 1", "d001-clip-listed"), ("2.4 item 2", "d001-lr"), ("2.4 item 3", "d001-tied"),
        ("2.4 item 4", "d001-dropout-noop"), ("2.4 item 5", "d001-epochs"),
        ("2.4 item 6", "d001-eval-is-validation"), ("2.1, 7", "d001-tokens"),
        ("2.4 item 8", "d001-cuda-column"), ("2.1, 2.2", "d001-no-sync"), ("2.1", "d001-eval-autograd"),
        ("0, 2.1", "d001-numbers-predate-code"),
    ],
    "002": [
        ("3.4 item 1", "d002-wikitext-samples"), ("3.4 item 2", "d002-summary-vs-detailed"),
        ("3.4 item 3", "d002-summary-typo-8gpu"), ("3.4 item 3", "d002-summary-wikitext-unit"),
        ("3.4 item 4", "d002-8gpu-summary-only"), ("3.4 item 5", "d002-unroll-false-modified"),
        ("3.4 item 6", "d002-mxnet-memory-identical"), ("3.4 item 7", "d002-synthetic-multihot"),
        ("3.4 item 8", "d002-which-epoch"), ("3.2", "d002-tf-memory-grab"), ("3.1", "d002-batch32-edit"),
        ("3.1", "d002-wikitext-fused-lines"), ("3.3", "d002-cpu-platform"), ("3.3", "d002-cudnn-version"),
    ],
    "003": [
        ("4.3 item 1", "d003-whileop-forward-only"), ("4.3 item 2", "d003-jit-broken"),
        ("4.3 item 3", "d003-vocab"), ("4.3 item 4", "d003-graph-fetch"),
        ("4.3 item 5", "d003-no-final-sync"), ("4.3 item 6", "d003-fine-grained-differs"),
        ("4.3 item 7", "d003-cudnn-calls"), ("4.2", "d003-forward-autograd"), ("4.2", "d003-log-sync"),
        ("4.2", "d003-collation-in-timer"), ("4.5", "d003-title-julia"),
    ],
    "004": [
        ("5.3 item 1", "d004-ms-contradicts-wps"), ("5.3 item 2", "d004-patch-unpublished"),
        ("5.3 item 3", "d004-average-unknown"), ("5.3 item 4", "d004-versions-unstated"),
        ("5.3 item 5", "d004-code-elsewhere"), ("5.1", "d004-cumulative-wps"),
        ("5.1", "d004-embedding-on-cpu"),
    ],
}
# Items of the reference's inconsistency lists that are not defects of the published numbers.
NOT_DEFECTS = {
    "1.4 item 8": "a plausibility check of 000's cuDNN figure, not a defect",
    "4.5 warm-up counts": "older README versions; the seed's version matches the code",
    "4.5 column naming": "cosmetic: the same metric under two column names",
    "5.3 item 6": "a reference point from another source, not a defect",
}
KINDS = {"timer", "data", "vocabulary", "model", "reporting"}


def _defects() -> dict[str, dict[str, dict]]:
    return {sid: {d["id"]: d for d in s["defects"]} for sid, s in suites.load_sources().items()}


def _labelled() -> list[suites.Cell]:
    return [c for name in suites.suite_names() for c in suites.load_suite(name).cells if c.label]


def test_the_walkthrough_is_the_data():
    """Every defect the reference describes is in sources.yaml under the id the walk-through gives it,
    citing that place of the reference; and sources.yaml holds no defect the walk-through lacks."""
    defects = _defects()
    for sid, items in WALKTHROUGH.items():
        for where, did in items:
            assert did in defects[sid], f"{sid}: seed_workloads.md {where} has no defect {did}"
            ref = defects[sid][did]["reference"]
            section = where.split()[0].rstrip(",")
            assert section in ref, f"{did} cites {ref!r}, not seed_workloads.md {where}"
        assert set(defects[sid]) == {d for _, d in items}, f"{sid}: defects outside the walk-through"


def test_every_defect_is_attached_to_numbers_and_has_a_kind():
    for sid, defects in _defects().items():
        numbers = suites.load_published(sid)
        for did, d in defects.items():
            assert d["kind"] in KINDS
            hit = [n["id"] for n in numbers if did in n["defects"]]
            assert hit, f"{did} ({d['applies_to']}) matches none of source {sid}'s published numbers"


def test_every_defect_id_named_in_the_data_exists():
    """Claims and corrected/alternative cells name defects of their own source only."""
    defects = _defects()
    for claim in claims.load_claims()["claims"]:
        for did in claim.get("defects", []):
            assert did in defects[claim["source"]], f"claim {claim['id']} names unknown defect {did}"
    for c in _labelled():
        for did in c.label["defects"]:
            assert did in defects[c.source], f"cell {c.id} names unknown defect {did}"


def test_every_defect_that_can_change_a_timing_is_handled():
    """A defect of the timer, the data, the vocabulary or the model has a corrected or alternative
    cell in some suite, or a `correction` saying how the kit deals with it; a defect with such a cell
    has that cell's as-published cell in the same suite."""
    covered = {d for c in _labelled() for d in c.label["defects"]}
    for defects in _defects().values():
        for did, d in defects.items():
            if d["kind"] != "reporting":
                assert did in covered or d.get("correction"), f"{did}: no corrected cell, no correction"
    for name in suites.suite_names():
        suite = suites.load_suite(name)
        ids = {c.id for c in suite.cells}
        for c in suite.cells:
            if c.label:
                assert c.label["as_published_cell"] in ids, f"{c.id}: as-published cell not in {name}"


def _all_cells_run(tmp_path, suite_name):
    """A run of every cell of the suite, each failed (no measurement): every table is in the run."""
    suite = suites.load_suite(suite_name)
    run_id = f"20260101T000000Z-{suite_name}"
    rd = results.RunDir(tmp_path / run_id)
    entries = []
    for c in suite.cells:
        rd.write_cell({
            "schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": run_id,
            "cell_id": c.id, "source": c.source, "stack": c.stack, "workload": c.workload,
            "variant": c.variant, "params": {}, "status": "failed", "reason": "synthetic: not run",
            "device": "cpu", "protocol": "budget", "metrics": {},
            "implementation": {"notes": [], "substitutes": []},
            "kit": {"version": "test", "git_commit": "test"}})
        entries.append({"cell_id": c.id, "stack": c.stack, "status": "failed",
                        "reason": "synthetic: not run",
                        "result_file": "cells/" + results.cell_filename(c.id)})
    write_run(rd, {
        "schema_version": formats.version("run"), "kind": "run", "run_id": run_id, "suite": suite_name,
        "argv": ["reproduce.py"], "runner": "local", "protocol": "budget", "quick": True,
        "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:01Z", "wall_s": 1.0,
        "host_fingerprint": {"kind": "host_fingerprint", "cpu": {"model_name": "Test CPU"},
                             "nvidia": {"available": False}, "gpus": []},
        "kit": {"version": "test", "git_commit": "test", "git_dirty": False}, "cells": entries})
    return suite, rd


@pytest.mark.parametrize("suite_name", [n for n in suites.suite_names() if suites.load_suite(n).sources])
def test_every_defect_is_shown_in_the_report_of_its_suite(tmp_path, monkeypatch, suite_name):
    """Rendered Markdown and HTML name every defect of the suite's sources beside its numbers (a link
    per row and the defect's entry under its table), with its kind and how the kit handles it."""
    from reprokit.report import plots
    monkeypatch.setattr(plots, "table_svg", lambda rows, anchor: "<svg></svg>")  # speed only
    suite, rd = _all_cells_run(tmp_path, suite_name)
    report.render(rd)
    md = (rd.path / "report.md").read_text()
    html = (rd.path / "report.html").read_text()
    defects = _defects()
    for sid in suite.sources:
        for did, d in defects[sid].items():
            entries = re.findall(r"\*\*%s\*\* \((\w+)\): ([^\n]*)" % re.escape(did), md)
            assert entries, f"{did} is not listed under any table of the {suite_name} report"
            assert all(kind == d["kind"] for kind, _ in entries)
            if d.get("correction"):
                assert all(d["correction"] in text for _, text in entries)
            assert f"](#s{sid}-t" in md and f"-{did})" in md, f"no row of {suite_name} links {did}"
            assert f'-{did}"><strong>{did}</strong>' in html
    for c in suite.cells:
        if c.label and c.label["as_published_cell"] in {x.id for x in suite.cells}:
            assert "Measured without it by: " in md
            break


def test_a_selector_field_the_kit_does_not_know_is_a_schema_error():
    """A misspelt `applies_to` field (it ended check-benchmark with a KeyError) is named by the schema."""
    import copy

    from reprokit import kitdata, validate

    doc = copy.deepcopy(kitdata.load("sources"))
    defect = next(d for s in doc["sources"].values() for d in s.get("defects") or [] if d["applies_to"])
    defect["applies_to"] = {"framwork": ["TensorFlow"]}
    (line,) = validate.errors("sources", doc)
    assert "'framwork' is not one of" in line, line
