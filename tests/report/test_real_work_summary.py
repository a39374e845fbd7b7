"""The report's gathering of the cells' real-work checks (reprokit/report/real_work.py; the checks
themselves: bench/real_work.py, tests/stacks/test_real_work.py). Pure logic on hand-made cell results."""

from reprokit.report import real_work
from tests import models


def _metric(rw=None, stop="max_samples"):
    m = {"unit": "ms", "samples": [1.0], "raw_seconds": [0.001], "stop_reason": stop}
    if rw is not None:
        m["real_work"] = rw
    return m


def _train(ok=True, still=None):
    checks = [{"what": "digest of the head weights", "part": "head", "before": 1.0, "after": 2.0, "ok": True}]
    if still:
        checks.append({"what": "digest of the rnn weights", "part": "rnn", "before": 3.0, "after": 3.0,
                       "ok": True, "expected_still": still})
    return {"phase": "train", "checks": checks, "ok": ok, "reason": None if ok else "the head did not change"}


def test_counts_failures_defects_seen_and_cells_without_a_check():
    cells = [
        {"cell_id": "a", "status": "ok",
         "metrics": {"t": _metric(_train()), "compile_time": _metric(stop="single")}},
        {"cell_id": "b", "status": "ok", "metrics": {"t": _metric(_train(still="d003-jit-broken"))}},
        {"cell_id": "c", "status": "failed", "metrics": {"t": _metric(_train(ok=False))}},
        {"cell_id": "d", "status": "ok", "metrics": {"t": _metric(), "u": _metric(_train())}},
        {"cell_id": "e", "status": "failed", "metrics": {"t": _metric()}},  # failed before any check
    ]
    s = real_work.summary([models.cell(c) for c in cells])
    assert (s["cells_checked"], s["metrics_checked"], s["metrics_passed"]) == (4, 4, 3)
    assert s["failed"] == [{"cell": "c", "metric": "t", "reason": "the head did not change"}]
    assert s["defects_seen"] == [{"cell": "b", "metric": "t", "defect": "d003-jit-broken", "parts": ["rnn"]}]
    # a compile time has no steps to check; a cell that ran with an unchecked timed metric is listed,
    # never counted as passed; a failed cell's missing check is its failure's business
    assert s["unchecked"] == [{"cell": "d", "metrics": ["t"]}]


def test_a_result_that_recorded_no_check_has_every_cell_unchecked():
    s = real_work.summary([models.cell({"cell_id": "x", "status": "ok", "metrics": {"m": _metric()}})])
    assert s["metrics_checked"] == 0 and s["unchecked"] == [{"cell": "x", "metrics": ["m"]}]
