"""A published table checked against itself: what its own numbers contradict, decided from them alone.

A table is a source's numbers of one `provenance.table`; a row is its numbers of one `row_label`; a
column is a number's metric as published (`metric_as_published`). Three checks, each of which needs no
measurement (like IMPLAUSIBLE, which needs only a bound):

- identical columns: two columns with the same value and unit in every row they share, 2 rows or more
  (a column copied into another: a table's Backward equal to its Forward in every row);
- one quantity said twice: two numbers of one row that the kit reads as the same metric of the same
  cell (an average per batch and an elapsed time of 50 batches, with its `transform.scale`) must agree
  within the rounding of both printed figures;
- parts and their total: in one row, `forward_<X>` + `backward_<X>` must equal `total_<X>` within the
  rounding of the three figures (a `train_<X>` is not checked: a training step adds the update).

The rounding of a printed figure is half a unit of its last digit as the data holds it (a trailing
zero the YAML number dropped makes it wider, never narrower).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

from reprokit.analysis.tolerance import rounding

IDENTICAL = "identical_columns"
DISAGREE = "same_quantity_disagrees"
SUM = "total_not_sum"


def _converted(n: dict, unit: str) -> tuple[float, float] | None:
    """(value, rounding) of a number in `unit`, its transform.scale applied; None when the units do not
    convert."""
    from reprokit.analysis.verdicts import convert

    scale = float((n.get("transform") or {}).get("scale", 1))
    try:
        factor = convert(1.0, n["unit"], unit)
    except ValueError:
        return None
    return float(n["value"]) / scale * factor, rounding(n["value"]) / scale * factor


def _column(n: dict) -> str:
    return str(n.get("metric_as_published") or n["metric"])


def _rows(numbers: list[dict]) -> dict[str, dict[tuple, list[dict]]]:
    """table -> row -> the row's numbers. A row (its label first in the key) is a row label on one
    device with one workload: the same label on two GPUs, or for two datasets, is two rows."""
    out: dict[str, dict[tuple, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for n in numbers:
        prov = n.get("provenance") or {}
        if prov.get("row_label") is None:
            continue
        work = tuple(sorted((str(k), str(v)) for k, v in (n.get("workload") or {}).items()))
        key = (str(prov["row_label"]), str((n.get("environment") or {}).get("gpu")), work)
        out[str(prov.get("table") or "")][key].append(n)
    return out


def _identical(table: str, rows: dict[tuple, list[dict]]) -> list[dict]:
    cells: dict[str, dict[tuple, dict]] = defaultdict(dict)  # column -> row -> number
    for row, ns in rows.items():
        for n in ns:
            cells[_column(n)].setdefault(row, n)
    out = []
    for a, b in itertools.combinations(sorted(cells), 2):
        shared = sorted(set(cells[a]) & set(cells[b]))
        if len(shared) < 2:
            continue
        if all(cells[a][r]["value"] == cells[b][r]["value"] and cells[a][r]["unit"] == cells[b][r]["unit"]
               for r in shared):
            ids = [cells[x][r]["id"] for r in shared for x in (a, b)]
            out.append({"kind": IDENTICAL, "table": table, "columns": [a, b], "rows": len(shared),
                        "numbers": ids,
                        "text": f"{table}: column {b!r} equals column {a!r} in all {len(shared)} rows they "
                                "share (a column copied into another?)"})
    return out


def _agree(table: str, label: str, ns: list[dict]) -> list[dict]:
    out = []
    by: dict[tuple, list[dict]] = defaultdict(list)
    for n in ns:
        by[(n["metric"], n.get("cell"))].append(n)
    for (metric, _), same in sorted(by.items(), key=lambda kv: str(kv[0])):
        for a, b in itertools.combinations(same, 2):
            if _column(a) == _column(b):  # one column twice in a row: another epoch, run or split
                continue
            ca, cb = _converted(a, a["unit"]), _converted(b, a["unit"])
            if ca is None or cb is None or abs(ca[0] - cb[0]) <= ca[1] + cb[1]:
                continue
            out.append({"kind": DISAGREE, "table": table, "row": label, "columns": [_column(a), _column(b)],
                        "numbers": [a["id"], b["id"]],
                        "text": f"{table}, row {label!r}: {_column(a)!r} ({ca[0]:.6g} {a['unit']}) and "
                                f"{_column(b)!r} ({cb[0]:.6g} {a['unit']} after its conversion) are the same "
                                f"{metric} but differ by {abs(ca[0] - cb[0]):.3g} {a['unit']}, more than "
                                "their rounding"})
    return out


def _sums(table: str, label: str, ns: list[dict]) -> list[dict]:
    out = []
    by = {n["metric"]: n for n in ns}
    for metric, total in sorted(by.items()):
        if not metric.startswith("total_"):
            continue
        rest = metric[len("total_"):]
        parts = [by.get(f"forward_{rest}"), by.get(f"backward_{rest}")]
        if None in parts:
            continue
        t = _converted(total, total["unit"])
        got = [_converted(p, total["unit"]) for p in parts]
        if t is None or None in got:
            continue
        whole = math.fsum(v for v, _ in got)
        if abs(whole - t[0]) <= t[1] + math.fsum(r for _, r in got):
            continue
        out.append({"kind": SUM, "table": table, "row": label, "columns": [_column(p) for p in parts]
                    + [_column(total)], "numbers": [p["id"] for p in parts] + [total["id"]],
                    "text": f"{table}, row {label!r}: {_column(total)!r} is {t[0]:.6g} {total['unit']}, not "
                            f"{_column(parts[0])!r} + {_column(parts[1])!r} = {whole:.6g} {total['unit']}"})
    return out


def check(numbers: list[dict]) -> list[dict]:
    """Every contradiction of one source's published numbers with themselves (module doc), each
    {"kind", "table", "columns", "numbers" (ids), "text"} (and "row" or "rows"), in a stable order."""
    out: list[dict] = []
    for table, rows in sorted(_rows(numbers).items()):
        out += _identical(table, rows)
        for row, ns in sorted(rows.items()):
            out += _agree(table, row[0], ns) + _sums(table, row[0], ns)
    return out


def summary(found: list[dict]) -> str:
    """One clause for the first screen: what the table contradicts, by kind."""
    if not found:
        return ""
    first = found[0]["text"]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"its published table contradicts itself: {first}{more}"
