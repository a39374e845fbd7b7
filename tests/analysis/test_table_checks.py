"""A published table checked against itself (reprokit/analysis/table_checks.py)."""

from __future__ import annotations

import copy

from reprokit.analysis import table_checks
from reprokit.catalog import suites


def _number(i: int, row: str, metric: str, column: str, value: float, gpu: str = "Tesla K40") -> dict:
    return {"id": f"t-{i}", "value": value, "unit": "ms", "metric": metric, "metric_as_published": column,
            "cell": f"t/{row}", "provenance": {"table": "Table 1", "row_label": row},
            "environment": {"gpu": gpu}, "workload": {"batch": 128}}


def _table(backward_copies_forward: bool) -> list[dict]:
    """Forward, backward and total ms per minibatch of two networks on two GPUs (made up)."""
    out, i = [], 0
    for net, fwd, bwd in (("alexnet", 25.1, 52.4), ("vgg", 140.3, 310.9)):
        for gpu, f in (("Tesla K40", 1.0), ("Titan X", 0.6)):
            b = fwd * f if backward_copies_forward else bwd * f
            total = round(fwd * f + bwd * f, 1)
            for metric, column, v in (("forward_time_per_batch", "Forward", round(fwd * f, 1)),
                                      ("backward_time_per_batch", "Backward", round(b, 1)),
                                      ("total_time_per_batch", "Total", total)):
                i += 1
                out.append(_number(i, net, metric, column, v, gpu))
    return out


def test_a_consistent_table_has_no_finding():
    assert table_checks.check(_table(False)) == []


def test_a_column_copied_into_another_and_totals_that_are_not_their_sums_are_found():
    found = table_checks.check(_table(True))
    kinds = [f["kind"] for f in found]
    assert kinds.count(table_checks.IDENTICAL) == 1 and kinds.count(table_checks.SUM) == 4, found
    same = next(f for f in found if f["kind"] == table_checks.IDENTICAL)
    assert same["columns"] == ["Backward", "Forward"] and same["rows"] == 4
    assert "column 'Forward' equals column 'Backward' in all 4 rows" in same["text"]
    assert table_checks.summary(found).startswith("its published table contradicts itself: Table 1:")


def test_one_row_on_two_devices_is_two_rows():
    rows = [_number(1, "a", "forward_time_per_batch", "Forward", 1.5, "K40"),
            _number(2, "a", "backward_time_per_batch", "Backward", 1.5, "Titan X"),
            _number(3, "b", "forward_time_per_batch", "Forward", 2.5, "K40"),
            _number(4, "b", "backward_time_per_batch", "Backward", 2.5, "Titan X")]
    assert table_checks.check(rows) == []  # never in one row: nothing shared to compare


def test_the_same_quantity_said_twice_agrees_within_rounding_and_a_changed_figure_is_found():
    numbers = [dict(n) for n in suites.load_published("003")]
    pairs = [n for n in numbers if (n.get("transform") or {}).get("scale")]
    assert len(pairs) > 20  # 003 prints an average per batch and the elapsed time of 50 batches
    assert table_checks.check(numbers) == []  # 0.1889 s and 9.4431 s / 50 = 0.188862 s: within rounding
    changed = copy.deepcopy(numbers)
    hit = next(n for n in changed if n["id"] == pairs[0]["id"])
    hit["value"] = round(hit["value"] * 1.01, 4)
    (found,) = table_checks.check(changed)
    assert found["kind"] == table_checks.DISAGREE and hit["id"] in found["numbers"], found


def test_the_committed_sources_contradict_themselves_nowhere():
    for source in ("000", "001", "002", "003", "004"):
        assert table_checks.check(list(suites.load_published(source))) == [], source
