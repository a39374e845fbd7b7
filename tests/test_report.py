"""The report: rendered from a run directory alone, numbers joined and converted, everything escaped."""

import json
import re
from html.parser import HTMLParser

import pytest

from reprokit import compare_published as cp
from reprokit import plots, report, results
from reprokit.errors import UserError

HOSTILE = "<script>alert(1)</script>"
RUN_ID = "20260101T000000Z-legacy-2017"
OK_CELL = "000/tensorflow/basic_lstm/b128-s30-h512"      # published: 000-L005, L006, L007
EXTRA_CELL = "000/pytorch/nn_lstm/b128-s30-h512"         # no published counterpart
FAILED_CELL = "000/theano/fastlstm/b128-s30-h512"
NOT_IMPL_CELL = "001/pytorch/word_lm/b128-s128-h1024"


def _metric(unit, samples, items=1):
    return {"unit": unit, "samples": samples, "raw_seconds": [0.01] * len(samples),
            "items_per_sample": items, "derivation": "test", "warmup": 1, "warmup_seconds": [0.02],
            "stop_reason": "time_budget" if len(samples) > 1 else "single", "method": "test step",
            "sync": "n/a: CPU execution is synchronous"}


def _cell(cell_id, stack, status, reason=None, metrics=None, wall=None):
    source, framework, variant, _ = cell_id.split("/")
    return {
        "schema_version": 1, "kind": "cell_result", "run_id": RUN_ID, "cell_id": cell_id,
        "source": source, "stack": stack, "workload": f"s{source}_{framework}", "variant": variant,
        "params": {"batch": 128}, "status": status, "reason": reason,
        "started": "2026-01-01T00:00:01Z", "finished": "2026-01-01T00:00:09Z", "wall_s": wall,
        "device": "cpu", "protocol": "budget",
        "implementation": {"framework": framework, "framework_version": "9.9", "api": "test api",
                           "notes": ["a note"],
                           "substitutes": [{"original": "Old 1.0", "used": "New 2.0",
                                            "why": "old has no wheel"}]},
        "metrics": metrics or {},
        "stack_fingerprint": {"kind": "stack_fingerprint",
                              "framework": {"name": framework, "version": "9.9",
                                            "build_config": "built | with <care>"},
                              "python": {"version": "3.11.7"}},
        "kit": {"version": "0.1.0", "git_commit": "abc123"},
    }


def make_run(root):
    rd = results.RunDir(root / RUN_ID)
    cells = [
        _cell(OK_CELL, "tf-1.2", "ok", wall=8.0, metrics={
            "compile_time": _metric("s", [2.5]),
            "train_time_per_example": _metric("ms", [1.0, 1.2, 1.1, 0.9, 1.3], 128),
            "forward_time_per_example": _metric("us", [500.0, 600.0, 700.0], 128)}),
        _cell(EXTRA_CELL, "torch-0.1", "ok", wall=5.0, metrics={
            "compile_time": _metric("s", [0.75]),
            "train_time_per_example": _metric("ms", [3.0, 4.0, 5.0], 128)}),
        _cell(FAILED_CELL, "theano-0.9", "failed", reason=HOSTILE, wall=0.5),
        _cell(NOT_IMPL_CELL, "torch-0.1", "not_implemented", reason="workload not written yet"),
    ]
    process_wall = {OK_CELL: 10.0, EXTRA_CELL: 6.0, FAILED_CELL: 1.5, NOT_IMPL_CELL: None}
    run = {
        "schema_version": 1, "kind": "run", "run_id": RUN_ID, "suite": "legacy-2017",
        "argv": ["reproduce.py", "run", "--suite", "legacy-2017"], "runner": "local",
        "protocol": "budget", "quick": True, "started": "2026-01-01T00:00:00Z",
        "finished": "2026-01-01T00:00:30Z", "wall_s": 30.0,
        "host_fingerprint": {
            "kind": "host_fingerprint", "os": {"name": "Linux", "release": "6.1"},
            "cpu": {"model_name": "Test CPU", "logical_cores": 2},
            "memory": {"total_bytes": 8 * 2 ** 30},
            "nvidia": {"available": False, "reason": "no NVIDIA driver"},
            "gpus": [{"index": 0, "name": HOSTILE}], "env": {}},
        "kit": {"version": "0.1.0", "git_commit": "abc123", "git_dirty": False},
        "stacks": {"tf-1.2": {"framework": "tensorflow",
                              "original": {"framework_version": "1.2.1"}, "image": "x"}},
        "cells": [{"cell_id": c["cell_id"], "stack": c["stack"], "status": c["status"],
                   "reason": c["reason"], "process_wall_s": process_wall[c["cell_id"]],
                   "result_file": "cells/" + results.cell_filename(c["cell_id"])} for c in cells],
    }
    for c in cells:
        rd.write_cell(c)          # validated against cell_result.schema.json
    rd.write_run(run)             # validated against run.schema.json
    return rd


@pytest.fixture
def rendered(tmp_path):
    rd = make_run(tmp_path)
    paths = report.render(rd)
    return rd, paths


class TagBalance(HTMLParser):
    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.ids = [], [], []

    def handle_starttag(self, tag, attrs):
        self.ids += [v for k, v in attrs if k == "id"]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.ids += [v for k, v in attrs if k == "id"]

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()


def _rows(ctx, source="000"):
    sec = next(s for s in ctx["sources"] if s["id"] == source)
    return {r["id"]: r for t in sec["tables"] for r in t["rows"]}


def test_render_writes_three_files_and_plots(rendered):
    rd, paths = rendered
    assert [p.name for p in paths] == ["report.md", "report.html", "report.json"]
    assert all(p.is_file() and p.stat().st_size > 1000 for p in paths)
    svgs = sorted((rd.path / "plots").glob("*.svg"))
    assert svgs and all(s.stat().st_size < 200_000 for s in svgs)
    md = paths[0].read_text()
    for s in svgs:
        assert f"](plots/{s.name})" in md


def test_html_escapes_hostile_text_and_is_self_contained(rendered):
    html = rendered[1][1].read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html       # GPU name and failure reason
    assert "<script" not in html.lower()
    assert "built | with &lt;care&gt;" in html
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html)
    assert "<link" not in html and "@import" not in html
    p = TagBalance()
    p.feed(html)
    p.close()
    assert p.errors == [] and p.stack == []
    dupes = {i for i in p.ids if p.ids.count(i) > 1}
    assert not dupes, f"duplicate ids (several inline SVGs?): {sorted(dupes)[:5]}"
    assert html.count("<svg") >= 2                                # one plot per table


def test_markdown_has_numbers_and_escapes(rendered):
    md = rendered[1][0].read_text()
    assert "<script" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    row = next(line for line in md.splitlines() if "| train_time_per_example | 0.2542 ms |" in line)
    assert "| 1.1 ms | 5 | 0.9 – 1.3 |" in row and "4.33x slower" in row
    fwd = next(line for line in md.splitlines() if "| forward_time_per_example | 0.1247 ms |" in line)
    assert "| 0.6 ms | 3 |" in fwd                                # 600 us converted to ms
    assert "built \\| with &lt;care&gt;" in md                   # pipes escaped in table cells
    assert "This run was on a CPU" in md
    assert "Old 1.0 -> New 2.0: old has no wheel" in md
    for status in ("failed", "not_implemented"):
        assert re.search(rf"\| {re.escape(status)} \|", md)
    assert "workload not written yet" in md
    assert "[d000-tf-transfers](#s000-t1-d000-tf-transfers)" in md
    assert '<a id="s000-t1-d000-tf-transfers"></a>**d000-tf-transfers**' in md


def test_json_has_the_same_numbers(rendered):
    ctx = json.loads(rendered[1][2].read_text())
    rows = _rows(ctx)
    train, fwd, comp = rows["000-L006"], rows["000-L007"], rows["000-L005"]
    assert train["published"] == 0.2542 and train["measured"] == pytest.approx(1.1)
    assert (train["n"], train["measured_min"], train["measured_max"]) == (5, 0.9, 1.3)
    assert train["ratio"] == pytest.approx(1.1 / 0.2542) and train["better"] == "lower"
    assert fwd["measured"] == pytest.approx(0.6) and fwd["measured_unit"] == "us"
    assert comp["measured"] == 2.5 and comp["n"] == 1
    assert rows["000-L002"]["cell_status"] == "failed" and rows["000-L002"]["measured"] is None
    assert "d000-tf-transfers" in train["defects"]
    assert ctx["cpu_note"] is True and ctx["verdicts"] is None
    unmatched = {(u["cell"], u["metric"]) for u in ctx["unmatched"]}
    assert unmatched == {(EXTRA_CELL, "compile_time"), (EXTRA_CELL, "train_time_per_example")}
    not_run = {c["cell_id"]: c["status"] for c in ctx["not_run"]}
    assert not_run == {FAILED_CELL: "failed", NOT_IMPL_CELL: "not_implemented"}
    ov = ctx["overhead"]
    assert ov["driver_overhead_s"] == pytest.approx(30.0 - 17.5)
    per = {c["cell_id"]: c["overhead_s"] for c in ov["cells"]}
    assert per[OK_CELL] == pytest.approx(2.0) and per[NOT_IMPL_CELL] is None
    tf = next(s for s in ctx["environments"]["stacks"] if s["stack"] == "tf-1.2")
    assert tf["substitutes"] == [{"original": "Old 1.0", "used": "New 2.0", "why": "old has no wheel"}]
    assert ctx["environments"]["host"]["gpus"][0]["name"] == HOSTILE


def test_rerender_from_stored_results_is_identical(rendered):
    rd, paths = rendered
    before = {p.name: p.read_bytes() for p in paths}
    svg_before = {p.name: p.read_bytes() for p in (rd.path / "plots").glob("*.svg")}
    for p in paths:
        p.unlink()
    stale = rd.path / "plots" / "stale.svg"
    stale.write_text("<svg/>")
    again = report.render(results.RunDir(rd.path))
    assert {p.name: p.read_bytes() for p in again} == before
    assert {p.name: p.read_bytes() for p in (rd.path / "plots").glob("*.svg")} == svg_before


def test_verdicts_are_rendered_when_present(tmp_path, monkeypatch):
    rd = make_run(tmp_path)
    monkeypatch.setattr(report, "_verdicts",
                        lambda ctx: [{"id": "000-L006", "verdict": "<b>not reproduced</b>"}])
    md, html, js = report.render(rd)
    html = html.read_text()
    assert "&lt;b&gt;not reproduced&lt;/b&gt;" in html and "<b>not" not in html
    assert "| 000-L006 | &lt;b&gt;not reproduced&lt;/b&gt; |" in md.read_text()
    assert json.loads(js.read_text())["verdicts"][0]["id"] == "000-L006"


def test_missing_templates_is_a_clear_error(tmp_path, monkeypatch):
    rd = make_run(tmp_path)
    monkeypatch.setattr(report, "TEMPLATES", tmp_path / "nowhere")
    with pytest.raises(UserError, match="report templates missing"):
        report.render(rd)


def test_svg_escapes_labels_and_prefixes_ids():
    row = {"row_label": HOSTILE, "metric_as_published": "m & <n>", "unit": "ms", "published": 2.0,
           "measured": 3.0, "measured_min": 2.5, "measured_max": 4.0, "published_gpu": "g",
           "note": None}
    svg = plots.table_svg([row, {**row, "row_label": "b", "measured": None, "note": HOSTILE}], "t9")
    assert "<script" not in svg.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert "m &amp; &lt;n&gt;" in svg
    ids = re.findall(r'\bid="([^"]+)"', svg)
    assert ids and all(i.startswith("t9-") for i in ids)
    assert not svg.startswith("<?xml") and "DOCTYPE" not in svg
    assert plots.table_svg([row], "t9") == plots.table_svg([row], "t9")   # deterministic


def test_units_scale_and_direction():
    assert cp.unit_factor("us", "ms") == pytest.approx(1e-3)
    assert cp.unit_factor("s", "ms") == pytest.approx(1e3)
    assert cp.unit_factor("MiB", "MB") == pytest.approx(1.048576)
    assert cp.unit_factor("ms", "words/s") is None
    assert cp.better("words/s") == "higher" and cp.better("ms") == "lower"
    assert cp.reading(0.5, "words/s") == "2x slower" and cp.reading(0.5, "s") == "2x faster"
    assert cp.reading(2.0, "MiB") == "2x more memory"
    number = {"id": "x", "value": 30.0, "unit": "s", "metric": "time_per_batch",
              "metric_as_published": "elapsed_50_batches", "cell": "c", "transform": {"scale": 50},
              "provenance": {"source": "003", "table": "T", "row_label": "r"},
              "environment": {"gpu": "none (CPU)", "framework": "f", "framework_version": "1"}}
    cell = {"cell_id": "c", "status": "ok", "device": "cpu",
            "metrics": {"time_per_batch": _metric("ms", [500.0, 700.0, 600.0])}}
    row = cp.compare_number(number, cell)
    assert row["measured"] == pytest.approx(30.0) and row["ratio"] == pytest.approx(1.0)
    assert row["published_on_gpu"] is False and row["reading"] == "about equal"
    bad = cp.compare_number({**number, "unit": "words/s"}, cell)
    assert bad["measured"] is None and "unit mismatch" in bad["note"]
