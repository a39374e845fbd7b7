"""The HTML report in a real headless Chromium: it loads without errors, shows its summary, tables
and plots, and hostile text from the results is shown as text and never runs.

Needs Debian's chromium (/usr/bin/chromium; `apt-get install chromium`) and the playwright Python
package (pip extra `test`); no browser is downloaded. Skipped only when one of them is missing.
"""

import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest

from reprokit import formats, results
from reprokit.report import report
from reprokit.run.record import write_run

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    pytest.skip("the playwright Python package is missing (pip install -e '.[test]')",
                allow_module_level=True)

pytestmark = pytest.mark.browser

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STORED = Path(__file__).resolve().parents[1] / "data" / "runs"
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
RUN_ID = "20260101T000000Z-hostile"
OK_CELL = "000/tensorflow/basic_lstm/b128-s30-h512"          # has published numbers (000-L005..7)
HOSTILE_CELL = f"000/pytorch/{SCRIPT}/{IMG}"                  # no published counterpart
FAILED_CELL = "000/theano/fastlstm/b128-s30-h512"


def _metric(unit, samples):
    return {"unit": unit, "samples": samples, "raw_seconds": [0.1] * len(samples), "items_per_sample": 128,
            "derivation": "test", "warmup": 1, "warmup_seconds": [0.2], "stop_reason": "time_budget",
            "method": "test step", "sync": "n/a: CPU execution is synchronous"}


def _cell(cell_id, variant, status, reason=None, metrics=None):
    return {
        "schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": RUN_ID,
        "cell_id": cell_id, "source": "000",
        "stack": "tf-1.2", "workload": "s000_tensorflow", "variant": variant, "params": {"batch": 128},
        "status": status, "reason": reason, "started": "2026-01-01T00:00:01Z",
        "finished": "2026-01-01T00:00:09Z", "wall_s": 8.0, "device": "gpu", "protocol": "budget",
        "implementation": {"framework": "tensorflow", "framework_version": "1.2.1", "api": "test",
                           "substitutes": [], "notes": []},
        "metrics": metrics or {}, "load_avg": {"before": [0.1, 0.1, 0.1], "after": [0.5, 0.2, 0.1]},
        "stack_fingerprint": {"kind": "stack_fingerprint", "framework": {"name": "tensorflow",
                                                                         "version": "1.2.1"}},
        "kit": {"version": "0.1.0", "git_commit": None},
    }


def make_hostile_run(root: Path) -> results.RunDir:
    """A run whose GPU name, failure reason, cell id and variant carry script and onerror payloads."""
    rd = results.RunDir(root / RUN_ID)
    train = [0.25, 0.26, 0.255, 0.252, 0.258, 0.251, 0.254]
    cells = [
        _cell(OK_CELL, "basic_lstm", "ok", metrics={"train_time_per_example": _metric("ms", train),
                                                    "forward_time_per_example": _metric("ms", train)}),
        _cell(HOSTILE_CELL, IMG + SCRIPT, "ok", metrics={"train_time_per_example": _metric("ms", train)}),
        _cell(FAILED_CELL, "fastlstm", "failed", reason=f"RuntimeError: {SCRIPT} {IMG}"),
    ]
    run = {
        "schema_version": formats.version("run"), "kind": "run", "run_id": RUN_ID, "suite": "legacy-2017",
        "argv": ["reproduce.py", "run", "--suite", "legacy-2017"], "runner": "local", "protocol": "budget",
        "quick": True, "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:00:30Z",
        "wall_s": 30.0,
        "host_fingerprint": {"kind": "host_fingerprint",
                             "cpu": {"model_name": "Test CPU", "logical_cores": 2},
                             "nvidia": {"available": True, "driver_version": "375.20"},
                             "gpus": [{"index": 0, "name": f"Tesla {SCRIPT}{IMG}"}], "env": {}},
        "kit": {"version": "0.1.0", "git_commit": None},
        "cells": [{"cell_id": c["cell_id"], "stack": c["stack"], "status": c["status"], "reason": c["reason"],
                   "process_wall_s": 9.0, "result_file": "cells/" + results.cell_filename(c["cell_id"])}
                  for c in cells],
    }
    for c in cells:
        rd.write_cell(c)
    write_run(rd, run)
    return rd


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM),
            headless=True, args=ARGS, viewport={"width": 1280, "height": 900})
        try:
            yield ctx
        finally:
            ctx.close()


@pytest.fixture
def served(tmp_path):
    """A localhost HTTP server for tmp_path; yields its base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def open_report(ctx, url):
    """Load a page; returns (page, console errors, page errors, requested URLs)."""
    page = ctx.new_page()
    errors, page_errors, requests = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url, wait_until="load")
    page.wait_for_timeout(200)            # let any (unwanted) onerror handler fire
    return page, errors, page_errors, requests


def visible_box(page, selector):
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["width"] > 0 and box["height"] > 0


def test_hostile_text_is_shown_and_never_runs(tmp_path, served, browser_context):
    rd = make_hostile_run(tmp_path)
    report.render(rd)
    base = f"{served}/{RUN_ID}/"
    page, errors, page_errors, requests = open_report(browser_context, base + "report.html")
    try:
        assert errors == [] and page_errors == []
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("document.querySelectorAll('script, img, iframe, object, embed').length") == 0
        assert page.evaluate("document.querySelectorAll('[onerror], [onload], [onclick]').length") == 0
        assert all(u.startswith(base) for u in requests), requests    # self-contained: nothing else
        text = page.inner_text("body")
        assert SCRIPT in text and IMG in text
        gpu = page.inner_text("xpath=//th[normalize-space()='GPU 0']/following-sibling::td")
        assert gpu.startswith(f"Tesla {SCRIPT}{IMG}")                                   # GPU name
        not_run = page.inner_text("#not-run + table")
        assert f"RuntimeError: {SCRIPT} {IMG}" in not_run                               # failure reason
        unmatched = page.inner_text("#unmatched + table")
        assert HOSTILE_CELL in unmatched and IMG + SCRIPT in unmatched                  # cell id, variant
        assert visible_box(page, "#summary") and visible_box(page, "table.summary")
        assert visible_box(page, "table.results") and visible_box(page, "figure.plot svg")
    finally:
        page.close()


def test_stored_run_report_shows_summary_tables_and_plots(tmp_path, browser_context):
    dst = tmp_path / "cpu-a"
    shutil.copytree(STORED / "cpu-a", dst)
    report.render(results.RunDir(dst))
    page, errors, page_errors, requests = open_report(browser_context, (dst / "report.html").as_uri())
    try:
        assert errors == [] and page_errors == []
        assert all(u.startswith(dst.as_uri()) for u in requests), requests
        assert visible_box(page, "#summary") and visible_box(page, "table.summary")
        summary = page.inner_text("table.summary")
        assert "NOT_TESTABLE_HERE" in summary and "IMPLAUSIBLE" in summary
        # the first screen: one visible line per source that answers the question
        assert visible_box(page, "#answer-000") and visible_box(page, "#answer-001")
        first = page.inner_text("#answer-000")
        assert "none of its 48 numbers can be tested on this CPU" in first
        assert "48 published on a GPU (Tesla M40 24GB)" in first
        assert "6 physically impossible" in page.inner_text("#answer-001")
        assert page.locator("table.results").count() == 3
        assert all(visible_box(page, f"table.results >> nth={i}") for i in range(3))
        svgs = page.locator("figure.plot svg")
        assert svgs.count() == 3
        for i in range(3):
            box = svgs.nth(i).bounding_box()
            assert box and 200 < box["width"] <= 1000 and box["height"] > 50
        # the stored run has 3 processes per cell (tests/data/make_runs.py): re-run intervals
        assert "Every cell ran in 3 fresh processes" in page.inner_text("#interval-rerun")
        row = page.inner_text("#n-001-l050")
        assert "IMPLAUSIBLE" in row and "at most 43,100 words/s" in row and "EFFICIENCY" not in row
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        assert (tmp_path / "report.png").stat().st_size > 10_000
    finally:
        page.close()
