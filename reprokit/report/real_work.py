"""What the real-work checks of a run's cells say (the checks: bench/real_work.py).

Each timed metric of a cell may carry `real_work` (phase, checks, ok, reason): over timed training
steps the weights must move (per part, where the workload digests parts), and the last timed
forward step's output must match the same step run untimed. A failed check failed its cell, so
it shows among the failed cells too; here the report gathers, per run:

* how many cells and timed metrics were checked, and how many passed;
* the failed checks with their reasons;
* the published defects the checks saw by running (a part of the model a defect keeps from
  training stayed still: `expected_still`);
* the cells that ran ok without a check on some timed metric (a result that recorded none, or a
  workload without one), so a missing check is never read as a passed one.
"""

from __future__ import annotations

from reprokit.reader.result import CellResult


def _timed(metric: dict) -> bool:
    """A metric of timed steps (bench/harness.py record_timed), not one measured once by nature
    (compile time, first step: `stop_reason` "single"), which has no steps to check."""
    return isinstance(metric, dict) and "raw_seconds" in metric and metric.get("stop_reason") != "single"


def summary(cell_list: list[CellResult]) -> dict:
    """{"cells_checked", "metrics_checked", "metrics_passed", "failed": [{cell, metric, reason}],
    "defects_seen": [{cell, metric, defect, parts}], "unchecked": [{cell, metrics}]}."""
    cells_checked = metrics_checked = passed = 0
    failed, seen, unchecked = [], [], []
    for c in cell_list:
        timed = {name: m for name, m in sorted(c.metrics.items()) if _timed(m)}
        missing = [name for name, m in timed.items() if not isinstance(m.get("real_work"), dict)]
        checked = {name: m["real_work"] for name, m in timed.items() if name not in missing}
        if checked:
            cells_checked += 1
        if missing and c.measured:
            unchecked.append({"cell": c.cell_id, "metrics": missing})
        for name, rw in checked.items():
            metrics_checked += 1
            if rw.get("ok"):
                passed += 1
            else:
                failed.append({"cell": c.cell_id, "metric": name, "reason": rw.get("reason") or ""})
            still: dict[str, list[str]] = {}
            for check in rw.get("checks") or []:
                if isinstance(check, dict) and check.get("expected_still") and check.get("ok"):
                    still.setdefault(check["expected_still"], []).append(str(check.get("part")))
            for defect, parts in sorted(still.items()):
                seen.append({"cell": c.cell_id, "metric": name, "defect": defect, "parts": parts})
    return {"cells_checked": cells_checked, "metrics_checked": metrics_checked, "metrics_passed": passed,
            "failed": failed, "defects_seen": seen, "unchecked": unchecked}
