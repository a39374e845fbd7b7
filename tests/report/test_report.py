"""The report: rendered from a run directory alone, verdicts and claims wired in, everything escaped."""

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reprokit import formats, results, validate
from reprokit.analysis import verdicts
from reprokit.catalog import suites
from reprokit.errors import UserError
from reprokit.reader.load import load
from reprokit.report import context, plots, report, run_health
from reprokit.report import report_rows as cp
from reprokit.run.record import write_run
from tests import models

STORED = Path(__file__).resolve().parents[1] / "data" / "runs"
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


def _cell(cell_id, stack, status, reason=None, metrics=None, wall=None, load=None):
    source, framework, variant, _ = cell_id.split("/")
    c = {
        "schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": RUN_ID,
        "cell_id": cell_id,
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
    if load:
        c["load_avg"] = {"before": load[0], "after": load[1]}
    return c


def make_run(root):
    rd = results.RunDir(root / RUN_ID)
    cells = [
        _cell(OK_CELL, "tf-1.2", "ok", wall=8.0, load=([0.5, 0.4, 0.3], [1.5, 0.9, 0.5]), metrics={
            "compile_time": _metric("s", [2.5]),
            "train_time_per_example": _metric("ms", [1.0, 1.2, 1.1, 0.9, 1.3], 128),
            "forward_time_per_example": _metric("us", [500.0, 600.0, 700.0], 128)}),
        # 1-minute load 5.5 after the cell on a 2-core host: the report must warn
        _cell(EXTRA_CELL, "torch-0.1", "ok", wall=5.0, load=([1.0, 0.8, 0.5], [5.5, 2.0, 1.0]),
              metrics={"compile_time": _metric("s", [0.75]),
                       "train_time_per_example": _metric("ms", [3.0, 4.0, 5.0], 128)}),
        _cell(FAILED_CELL, "theano-0.9", "failed", reason=HOSTILE, wall=0.5),
        _cell(NOT_IMPL_CELL, "torch-0.1", "not_implemented", reason="workload not written yet"),
    ]
    process_wall = {OK_CELL: 10.0, EXTRA_CELL: 6.0, FAILED_CELL: 1.5, NOT_IMPL_CELL: None}
    run = {
        "schema_version": formats.version("run"), "kind": "run", "run_id": RUN_ID, "suite": "legacy-2017",
        "argv": ["reproduce.py", "run", "--suite", "legacy-2017"], "runner": "local",
        "protocol": "budget", "quick": True, "started": "2026-01-01T00:00:00Z",
        "finished": "2026-01-01T00:00:30Z", "wall_s": 30.0,
        "host_fingerprint": {
            "kind": "host_fingerprint", "os": {"name": "Linux", "release": "6.1"},
            "cpu": {"model_name": "Test CPU", "logical_cores": 2},
            "memory": {"total_bytes": 8 * 2 ** 30},
            "nvidia": {"available": False, "reason": "no NVIDIA driver"},
            "gpus": [{"index": 0, "name": HOSTILE}], "env": {}, "load_avg": [0.2, 0.1, 0.1]},
        "kit": {"version": "0.1.0", "git_commit": "abc123", "git_dirty": False},
        "stacks": {"tf-1.2": {"framework": "tensorflow",
                              "original": {"framework_version": "1.2.1"}, "image": "x"}},
        "cells": [{"cell_id": c["cell_id"], "stack": c["stack"], "status": c["status"],
                   "reason": c["reason"], "process_wall_s": process_wall[c["cell_id"]],
                   "result_file": "cells/" + results.cell_filename(c["cell_id"])} for c in cells],
    }
    for c in cells:
        rd.write_cell(c)          # validated against cell_result.schema.json
    write_run(rd, run)             # validated against run.schema.json
    return rd


def stored(tmp_path, name):
    """A copy of a stored run (tests/data/runs/<name>): rendering writes into the run directory."""
    dst = tmp_path / name
    shutil.copytree(STORED / name, dst)
    return results.RunDir(dst)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Rendered once for the tests that only read it (rendering draws plots: seconds)."""
    rd = make_run(tmp_path_factory.mktemp("rendered"))
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


class RowText(HTMLParser):
    """Text of every <tr id=...> (the rows of the published-vs-measured tables), and of the rows
    that follow them (the environment-diff rows) under '<id>+'."""

    def __init__(self):
        super().__init__()
        self.rows, self.cur, self.last = {}, None, None

    def handle_starttag(self, tag, attrs):
        if self.cur:
            self.rows[self.cur] += " "
        if tag == "tr":
            rid = dict(attrs).get("id")
            self.cur = rid if rid else (self.last + "+" if self.last else None)
            if rid:
                self.last = rid
            if self.cur:
                self.rows[self.cur] = ""

    def handle_endtag(self, tag):
        if tag == "tr":
            self.cur = None
        if tag == "table":
            self.last = None

    def handle_data(self, data):
        if self.cur:
            self.rows[self.cur] += data


def html_rows(html):
    p = RowText()
    p.feed(html)
    return {k: " ".join(v.split()) for k, v in p.rows.items()}


def _nums(ctx):
    return {r["id"]: r for r in ctx["numbers"]}


def _published(*sources):
    return [n for s in sources for n in suites.load_published(s)]


# -- the run made here ------------------------------------------------------------------------
def test_render_writes_three_files_and_plots(rendered):
    rd, paths = rendered
    assert [p.name for p in paths] == ["report.md", "report.html", "report.json"]
    assert all(p.is_file() and p.stat().st_size > 1000 for p in paths)
    svgs = sorted((rd.path / "plots").glob("*.svg"))
    assert svgs and all(s.stat().st_size < 100_000 for s in svgs)
    md = paths[0].read_text()
    for s in svgs:
        assert f"](plots/{s.name})" in md
    ctx = report.load_report(paths[2])                   # validates against report.schema.json
    assert ctx["schema_version"] == context.REPORT_VERSION == 5


def test_html_escapes_hostile_text_and_is_self_contained(rendered):
    html = rendered[1][1].read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html       # GPU name and failure reason
    assert "<script" not in html.lower()
    assert "built | with &lt;care&gt;" in html
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html)
    assert re.findall(r"<link[^>]*>", html) == ['<link rel="icon" href="data:,">']   # no favicon fetch
    assert "@import" not in html
    p = TagBalance()
    p.feed(html)
    p.close()
    assert p.errors == [] and p.stack == []
    dupes = {i for i in p.ids if p.ids.count(i) > 1}
    assert not dupes, f"duplicate ids (several inline SVGs?): {sorted(dupes)[:5]}"
    assert html.count("<svg") >= 2                                # one plot per table


def test_markdown_has_numbers_verdicts_and_escapes(rendered):
    md = rendered[1][0].read_text()
    assert "<script" not in md and "&lt;script>alert(1)&lt;/script>" in md
    row = next(line for line in md.splitlines() if "| 000-L006 | 0.2542 ms |" in line)
    assert "| 1.1 ms [0.9, 1.3] (93.8 % interval, this process only), median |" in row and "| 5 |" in row
    assert "| NOT_TESTABLE_HERE |" in row
    assert "slower" not in row and "faster" not in row             # no ratio across device classes
    fwd = next(line for line in md.splitlines() if "| 000-L007 | 0.1247 ms |" in line)
    # 600 us -> ms
    assert "| 0.6 ms [0.5, 0.7] (75 % interval, this process only), median |" in fwd and "| 3 |" in fwd
    assert "built \\| with &lt;care>" in md                   # pipes escaped in table cells
    assert "published on a GPU (Tesla M40 24GB), measured on a CPU" in md
    assert "Old 1.0 -> New 2.0: old has no wheel" in md
    for status in ("failed", "not_implemented"):
        assert re.search(rf"\| {re.escape(status)} \|", md)
    assert "workload not written yet" in md
    assert "[d000-tf-transfers](#s000-t1-d000-tf-transfers)" in md
    assert '<a id="s000-t1-d000-tf-transfers"></a>**d000-tf-transfers**' in md


def test_json_has_the_same_numbers(rendered):
    ctx = json.loads(rendered[1][2].read_text())
    rows = _nums(ctx)
    assert len(rows) == len(_published("000", "001"))             # every published number
    train, fwd, comp = rows["000-L006"], rows["000-L007"], rows["000-L005"]
    assert train["published"] == 0.2542 and train["measured"] == pytest.approx(1.1)
    assert (train["n"], train["measured_min"], train["measured_max"]) == (5, 0.9, 1.3)
    assert (train["ci_low"], train["ci_high"], train["ci_method"]) == (0.9, 1.3, "min_max")
    assert train["ci_coverage"] == pytest.approx(0.9375) and train["ci_label"] == "93.8 % interval"
    assert train["cv"] == pytest.approx(0.1437, rel=1e-3) and train["noisy"] is True
    assert train["ratio"] is None and train["reading"] is None and train["better"] == "lower"
    assert train["verdict"] == "NOT_TESTABLE_HERE" and train["comparison"] == "other_class"
    assert fwd["measured"] == pytest.approx(0.6) and fwd["measured_unit"] == "us"
    assert comp["measured"] == 2.5 and comp["n"] == 1 and comp["ci_low"] is None
    failed = rows["000-L002"]
    assert failed["cell_status"] == "failed" and failed["measured"] is None
    assert failed["verdict"] == "NOT_RUN" and HOSTILE in failed["reason"]
    assert "d000-tf-transfers" in train["defects"]
    fields = {d["field"]: d for d in train["environment_diff"]}
    assert fields["framework_version"] == {"field": "framework_version", "published": "1.2.1",
                                           "measured": "9.9", "differs": True}
    assert all(r["environment_diff"] for r in rows.values())      # for every number
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


def test_load_above_core_count_plus_one_is_warned(rendered):
    rd, (md, html, js) = rendered
    ctx = json.loads(js.read_text())
    assert ctx["load"]["cores"] == 2 and ctx["load"]["high_cells"] == [EXTRA_CELL]
    assert ctx["load"]["max_1min"] == 5.5 and ctx["load"]["warning"] is True
    page = html.read_text()
    assert 'id="load-warning"' in page and "timings may be inflated" in page
    assert "timings may be inflated" in md.read_text()
    assert not _nums(ctx)["000-L006"]["load_high"]                 # OK_CELL's load stayed below 2
    assert ctx["load"]["limit_1min"] == 3


def test_a_cell_keeping_all_cores_busy_itself_is_not_called_loaded():
    # 2 usable cores: a cell's own 2 threads put the 1-minute average just above 2 after it
    own = {"cell_id": "a", "load_avg": {"before": [0.3], "after": [2.1]}}
    other = {"cell_id": "b", "load_avg": {"before": [2.0], "after": [3.2]}}
    load = run_health.machine_load(models.run(host={"cpu": {"usable_cores": 2}}, cells=[own, other]))
    assert load["high_cells"] == ["b"] and load["limit_1min"] == 3 and load["warning"] is True


def test_rerender_from_stored_results_is_identical(tmp_path):
    rd = make_run(tmp_path)
    paths = report.render(rd)
    before = {p.name: p.read_bytes() for p in paths}
    svg_before = {p.name: p.read_bytes() for p in (rd.path / "plots").glob("*.svg")}
    for p in paths:
        p.unlink()
    stale = rd.path / "plots" / "stale.svg"
    stale.write_text("<svg/>")
    again = report.render(results.RunDir(rd.path))
    assert {p.name: p.read_bytes() for p in again} == before
    assert {p.name: p.read_bytes() for p in (rd.path / "plots").glob("*.svg")} == svg_before


def test_report_schema_rejects_a_broken_report(rendered, tmp_path):
    doc = json.loads(rendered[1][2].read_text())
    assert validate.errors("report", doc) == []
    bad = dict(doc, summary={**doc["summary"], "counts": {"REPRODUCED": -1}})
    assert validate.errors("report", bad)
    wrong = dict(doc, numbers=[{**doc["numbers"][0], "verdict": "PROBABLY_FINE"}])
    assert any("PROBABLY_FINE" in e for e in validate.errors("report", wrong))
    path = tmp_path / "report.json"
    path.write_text(json.dumps(dict(doc, schema_version=1)))
    with pytest.raises(UserError, match="render the report again"):
        report.load_report(path)
    path.write_text(json.dumps(dict(doc, verdict_counts="broken", summary="broken")))
    with pytest.raises(UserError, match="report schema"):
        report.load_report(path)
    path.write_text(json.dumps(dict(doc, schema_version=formats.version("report") + 1)))
    with pytest.raises(UserError, match="newer kit"):
        report.load_report(path)


def test_missing_templates_is_a_clear_error(tmp_path, monkeypatch):
    rd = make_run(tmp_path)
    monkeypatch.setattr(report, "TEMPLATES", tmp_path / "nowhere")
    with pytest.raises(UserError, match="report templates missing"):
        report.render(rd)


# -- stored runs (tests/data/runs, made by tests/data/make_runs.py) ----------------------------
def test_summary_counts_of_a_same_gpu_stored_run(tmp_path):
    rd = stored(tmp_path, "m40-same")
    ctx = context.build_context(load(rd))
    sm = ctx["summary"]
    total = len(_published("000", "001"))
    assert sm["published_numbers"] == total == len(ctx["numbers"])
    expected = {"IMPLAUSIBLE": 6, "REPRODUCED": 3, "DEVIATES": 5, "INCONCLUSIVE": 1, "EFFICIENCY": 0,
                "NOT_TESTABLE_HERE": 0, "NOT_TESTABLE_STANDIN": 3, "NOT_COMPARABLE": 0}
    assert {k: sm["counts"][k] for k in expected} == expected
    assert sm["counts"]["NOT_RUN"] == total - 18 == sm["not_run_in_run"] + sm["not_run_not_in_run"]
    assert sm["not_run_in_run"] == 6                              # the failed cell's 3, the skipped one's 3
    # 000-L010 lies beyond published +- (rounding + 8 % between units); the flat 10 % had it on the edge
    assert set(sm["numbers"]["DEVIATES"]) == {"000-L008", "000-L009", "000-L010", "000-L011", "000-L013"}
    assert sm["numbers"]["INCONCLUSIVE"] == ["000-L005"]  # one compile sample
    assert sm["numbers"]["NOT_TESTABLE_STANDIN"] == ["000-L002", "000-L003", "000-L004"]
    assert sm["implausible"] == [f"001-L05{i}" for i in range(6)]
    assert sm["claims"]["REVERSED"] == 1 and sm["claims"]["INCONCLUSIVE"] == 1
    assert sm["claims"]["NOT_TESTABLE_STANDIN"] == 1 and sm["claims"]["NOT_RUN"] == 12
    assert [c["status"] for c in ctx["claims"][:3]] == ["REVERSED", "INCONCLUSIVE", "NOT_TESTABLE_STANDIN"]
    pairs = [p["status"] for c in ctx["claims"] for p in c["pairs"]]
    assert sm["claim_pairs"] == {s: pairs.count(s) for s in sm["claims"]}
    assert sm["claim_pairs"]["HOLDS"] >= 1 and sm["claim_pairs"]["REVERSED"] >= 1
    assert ctx["load"]["warning"] is False                       # stored runs carry no load_avg


def test_summary_counts_agree_with_the_verdicts_module(tmp_path):
    for name in ("m40-same", "cpu-a"):
        rd = stored(tmp_path, name)
        run = load(rd)
        vs = verdicts.verdicts_for_run(_published("000", "001"), run, suites.load_sources())
        sm = context.build_context(run)["summary"]
        by = {}
        for v in vs:
            by[v["verdict"]] = by.get(v["verdict"], 0) + 1
        assert sm["by_verdict"] == dict(sorted(by.items()))
        assert sum(sm["counts"].values()) == len(vs)
        assert len(sm["implausible"]) == sum("IMPLAUSIBLE" in v["labels"] for v in vs)


def test_same_gpu_stored_run_shows_reproduced_and_deviates(tmp_path):
    rd = stored(tmp_path, "m40-same")
    md, html, js = report.render(rd)
    rows = html_rows(html.read_text())
    l006, l009 = rows["n-000-l006"], rows["n-000-l009"]
    assert "REPRODUCED" in l006 and "lies inside published 0.2542 ms" in l006
    assert "95 % CI over 3 processes" in l006 and "CV 0.45 %" in l006
    assert "prediction for a re-run of 3 processes: [" in l006
    assert "DEVIATES_SLOWER" in l009 and "lies entirely above published 0.2052 ms" in l009
    assert "0.3003 ms [0.2996, 0.3009]" in l009 and "1.46x slower" in l009
    assert "prediction for a re-run of 3 processes: [0.2994, 0.3011]" in l009
    # the environment diff under the deviating number only
    assert "n-000-l009+" in rows and "n-000-l006+" not in rows
    assert "000-L009: environment, publication → this run" in rows["n-000-l009+"]
    theano = rows["n-000-l003"]                                   # Theano's Python scan loop: no verdict
    assert "NOT_TESTABLE_STANDIN" in theano
    assert "Theano Python scan loop for the compiled (Cython) one" in theano
    assert "x slower" not in theano and "x faster" not in theano
    assert "DEVIATES_SLOWER" in rows["n-000-l010"]
    assert "± 8.05 % (rounding 0.0479 % + between units 8 %)" in rows["n-000-l010"]
    claims = {k: v for k, v in rows.items() if k.startswith("claim-")}
    assert "REVERSED" in claims["claim-c000-train-s30-h512"]
    assert "1 reversed, 1 not testable standin, 1 holds" in claims["claim-c000-train-s30-h512"]
    page = html.read_text()
    assert 'id="load-warning"' not in page
    text = md.read_text()
    assert re.search(r"^\| REPRODUCED \| same device model: .* \| 3 \| 000-L006, 000-L007, 000-L012 \|$",
                     text, re.M)
    assert "- 000-L009 (DEVIATES_SLOWER): " in text


def test_cpu_stored_run_gives_gpu_numbers_no_verdict_and_001_is_implausible(tmp_path):
    rd = stored(tmp_path, "cpu-a")
    md, html, js = report.render(rd)
    rows = html_rows(html.read_text())
    l050 = rows["n-001-l050"]                                     # 001's train words/s on a P100
    assert "IMPLAUSIBLE" in l050 and "EFFICIENCY" not in l050
    assert "can do at most 43,100 words/s (train) on this model" in l050 and "1,271 % of the bound" in l050
    assert "99.74 words/s [97.71, 101.8]" in l050                  # the measurement stays, as context
    assert "prediction for a re-run of 3 processes: [96.88, 102.7]" in l050
    page = html.read_text()
    assert 'id="implausible-n-001-l050"' in page
    text = md.read_text()
    assert re.search(r"\*\*001-L050\*\* IMPLAUSIBLE .*can do at most 43,100 words/s", text)
    ctx = report.load_report(js)
    sm = ctx["summary"]
    assert sm["counts"]["NOT_TESTABLE_HERE"] == 48 and sm["counts"]["IMPLAUSIBLE"] == 6
    assert sum(v for k, v in sm["counts"].items() if k not in ("NOT_TESTABLE_HERE", "IMPLAUSIBLE")) == 0
    assert _nums(ctx)["001-L050"]["analysis"]["roofline"]["tier"] == "IMPLAUSIBLE"
    assert _nums(ctx)["000-L012"]["ratio"] is None                # no raw ratio across device classes
    first = {f["source"]: f["answer"] for f in ctx["first_screen"]}
    assert first["000"].startswith("none of its 48 numbers can be tested on this CPU")
    assert "not decided here: 48 published on a GPU (Tesla M40 24GB)" in first["000"]
    assert "6 physically impossible" in first["001"] and "at most 43,100 words/s" in first["001"]


# -- pieces --------------------------------------------------------------------------------------
def test_svg_escapes_labels_and_prefixes_ids():
    row = {"row_label": HOSTILE, "metric_as_published": "m & <n>", "unit": "ms", "published": 2.0,
           "measured": 3.0, "ci_low": 2.5, "ci_high": 4.0, "published_gpu": "g", "note": None,
           "verdict": "DEVIATES_SLOWER", "implausible": True}
    svg = plots.table_svg([row, {**row, "row_label": "b", "measured": None, "note": HOSTILE}], "t9")
    assert "<script" not in svg.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert "m &amp; &lt;n&gt;" in svg and "DEVIATES_SLOWER / IMPLAUSIBLE" in svg
    ids = re.findall(r'\bid="([^"]+)"', svg)
    assert ids and all(i.startswith("t9-") for i in ids)
    assert not svg.startswith("<?xml") and "DOCTYPE" not in svg
    assert plots.table_svg([row], "t9") == plots.table_svg([row], "t9")   # deterministic


def test_one_unit_conversion_function():
    # report_rows has no unit table of its own: it converts through verdicts.convert
    assert not any(hasattr(cp, n) for n in ("TIME_UNITS", "MEMORY_UNITS", "unit_factor"))
    assert cp.better("words/s") == "higher" and cp.better("ms") == "lower" and cp.better("MiB") == "lower"
    assert cp.reading(0.5, "words/s") == "2x slower" and cp.reading(0.5, "s") == "2x faster"
    assert cp.reading(2.0, "MiB") == "2x more memory"
    number = {"id": "x", "value": 30.0, "unit": "s", "metric": "time_per_batch", "transform": {"scale": 50}}
    assert cp.to_published_unit(600.0, "ms", number) == pytest.approx(30.0)
    unscaled = {k: v for k, v in number.items() if k != "transform"}
    assert cp.to_published_unit(1.0, "MiB", {**unscaled, "unit": "MB"}) == \
        pytest.approx(1.048576)
    with pytest.raises(ValueError):
        cp.to_published_unit(1.0, "ms", {**number, "unit": "words/s"})


def test_row_in_the_published_unit_with_scale():
    number = {"id": "x", "value": 30.0, "unit": "s", "metric": "time_per_batch",
              "metric_as_published": "elapsed_50_batches", "cell": "c", "transform": {"scale": 50},
              "provenance": {"source": "003", "table": "T", "row_label": "r"},
              "environment": {"gpu": "none (CPU)", "framework": "f", "framework_version": "1"},
              "workload": {}}
    cell = models.cell({"cell_id": "c", "status": "ok", "device": "cpu", "metrics": {
        "time_per_batch": _metric("ms", [500.0, 700.0, 600.0, 610.0, 590.0, 605.0, 595.0])}})
    v = verdicts.verdict(number, cell)
    row = cp.row(number, v, cell)
    assert row["measured"] == pytest.approx(30.0)
    assert row["ci_low"] == pytest.approx(25.0) and row["ci_high"] == pytest.approx(35.0)
    assert row["published_on_gpu"] is False and row["reading"] is None  # no run: no device, no ratio
    assert row["verdict"] == v["verdict"] and row["analysis"] is v
    bad = cp.row({**number, "unit": "words/s"}, verdicts.verdict({**number, "unit": "words/s"}, cell), cell)
    assert bad["measured"] is None and bad["verdict"] == "NOT_COMPARABLE"
    assert "measured in ms, published in words/s" in bad["note"]


def test_a_suite_without_claims_says_so_instead_of_empty_sentences(tmp_path):
    """The summary's claims sentence rendered as 'Claims of the sources (0) ...:\\n.\\nOf the 0 pairs, .'
    for a suite whose sources make no claim (smoke, modern). The same real run's report counts its
    cells' real-work checks: every timed metric of the stdlib workload is checked."""
    from conftest import smoke_run

    run = smoke_run(tmp_path / "results", "--cells", "smoke/python/*")
    md = (run / "report.md").read_text()
    assert "The suite's sources make no claim to check." in md and "Of the 0 pairs" not in md
    assert "make no claim to check" in (run / "report.html").read_text()
    rw = json.loads((run / "report.json").read_text())["real_work"]
    timed = sum(1 for f in (run / "cells").glob("*.json")
                for m in json.loads(f.read_text())["metrics"].values() if m.get("stop_reason") != "single")
    assert rw["metrics_checked"] == rw["metrics_passed"] == timed > 0, rw
    assert not rw["unchecked"] and not rw["failed"]
    assert f"of {timed} timed metric(s) passed" in " ".join(md.split())


def test_a_designed_run_states_its_design_and_its_time_against_one_process(tmp_path):
    rd = stored(tmp_path, "cpu-a")  # 3 processes per cell, no design recorded: nothing said
    report.render(rd)
    assert "The run's design" not in (rd.path / "report.md").read_text()
    run = json.loads((rd.path / "run.json").read_text())
    text = ("3 processes per cell (...); planned 3.1x the recorded one-process time of the 2 cells that "
            "have one (budget 1.3x); 2 of them above their budget <b>")
    run["design"] = {"processes": 3, "cells": {}, "source": "test", "text": text,
                     "budget": {"planned_s": 31.0, "one_process_s": 10.0, "ratio": 3.1, "over": ["a", "b"],
                                "no_budget": [], "text": text}}
    (rd.path / "run.json").write_text(json.dumps(run))
    report.render(results.RunDir(rd.path))
    md = (rd.path / "report.md").read_text()
    html = (rd.path / "report.html").read_text()
    assert "The run's design: 3 processes per cell" in md and "planned 3.1x the recorded" in md
    assert "The run's design: 3 processes per cell" in html and "above their budget &lt;b&gt;" in html
    assert "above their budget <b>" not in html
    doc = json.loads((rd.path / "report.json").read_text())
    assert doc["intervals"]["design"] == text
