"""Cells beside the cells they vary: a corrected or alternative cell beside its as-published one, and a
framework-defaults twin beside its fp32 cell (what TF32 buys), each metric's medians and their ratio,
from this run's results only."""

from __future__ import annotations

from reprokit.analysis import stats
from reprokit.catalog import suites
from reprokit.errors import UserError
from reprokit.reader.model import Run
from reprokit.reader.result import CellResult
from reprokit.report import report_rows


def labelled_cells(suite_name: str) -> list[suites.Cell]:
    """The suite's corrected and alternative cells (none when the suite cannot be loaded now)."""
    try:
        return [c for c in suites.load_suite(suite_name).cells if c.label]
    except UserError:
        return []


def _cell_median(cell: CellResult | None, metric: str) -> dict | None:
    """The metric's median (unit, n, state) in an ok cell result, else None."""
    m = cell.metric(metric) if cell is not None and cell.measured else None
    if not m or not m.get("samples"):
        return None
    summ = stats.summarize_metric(m)
    return {"median": summ["median"], "unit": summ["unit"], "n": summ["n"], "state": m.get("state")}


def _metric_pairs(base: CellResult | None, mine: CellResult | None, metrics: list[str]) -> list[dict]:
    """Per metric: the base cell's median (`as_published`), this cell's (`variant`), and their ratio
    (variant / base) with how to read it, from this run's results only."""
    rows = []
    for metric in metrics:
        a, b = _cell_median(base, metric), _cell_median(mine, metric)
        ratio = None
        if a and b and a["median"] and a["unit"] == b["unit"]:
            ratio = b["median"] / a["median"]
        rows.append({"metric": metric, "as_published": a, "variant": b, "ratio": ratio,
                     "reading": report_rows.reading(ratio, b["unit"]) if ratio and b else None})
    return rows


def precision_twins(run: Run) -> dict:
    """Each framework-defaults twin of the run beside its fp32 cell: per metric both medians and their
    ratio (defaults / fp32) and the precision each cell recorded; the twins that did not run are
    counted with their reasons (on a CPU run: all of them)."""
    try:
        twins = [c for c in suites.load_suite(run.suite).cells if c.precision_of]
    except UserError:
        twins = []
    ran, not_run = [], {}
    for c in twins:
        mine = run.result(c.id)
        if mine is None:
            continue
        if not mine.measured:
            why = mine.reason or mine.status
            not_run[why] = not_run.get(why, 0) + 1
            continue
        base = run.result(c.precision_of)
        ran.append({"cell": c.id, "fp32_cell": c.precision_of,
                    "precision": {"fp32": _effective(base), "defaults": _effective(mine)},
                    "metrics": _metric_pairs(base, mine, c.metrics)})
    return {"ran": ran, "not_run": [{"reason": k, "cells": n} for k, n in sorted(not_run.items())]}


def _effective(cell: CellResult | None) -> str | None:
    """The precision a cell recorded it ran in (None: not recorded)."""
    return cell.precision.get("effective") if cell is not None and cell.precision is not None else None


def variants(labelled: list[suites.Cell], run: Run) -> list[dict]:
    """Each corrected or alternative cell of the run beside its as-published cell: per metric both
    medians and their ratio (corrected / as published), from this run's results only."""
    out = []
    for c in labelled:
        mine = run.result(c.id)
        if mine is None:
            continue
        base_id = c.label["as_published_cell"]
        base = run.result(base_id)
        note = None
        if base is None:
            note = "the as-published cell is not in this run"
        elif not base.measured:
            note = f"the as-published cell is {base.status}"
        elif not mine.measured:
            note = f"this cell is {mine.status}"
        out.append({"cell": c.id, "kind": c.label["kind"], "defects": list(c.label["defects"]),
                    "as_published_cell": base_id, "status": mine.status, "note": note,
                    "metrics": _metric_pairs(base, mine, c.metrics)})
    return out
