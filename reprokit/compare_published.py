"""Published numbers joined with the metrics measured in a run (pure: dicts in, dicts out, no I/O).

A published number names its cell and its metric (`cell`, `metric`). The measured value is the
median of that cell metric's samples, converted to the published unit (s/ms/us, B/kB/MB/GB and
KiB/MiB/GiB) and multiplied by `transform.scale` when the publication reports a multiple of the
metric (e.g. elapsed time over 50 batches = 50 x time per batch). Rate units (anything per second)
are compared only when the unit strings are identical.
"""

from __future__ import annotations

import statistics
from typing import Any

TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9,
              "min": 60.0, "h": 3600.0}
MEMORY_UNITS = {"B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9,
                "KiB": 2.0 ** 10, "MiB": 2.0 ** 20, "GiB": 2.0 ** 30}

# What a ratio measured/published means, per kind of unit.
DIRECTIONS = {
    "time": {"better": "lower", "above": "slower", "below": "faster"},
    "memory": {"better": "lower", "above": "more memory", "below": "less memory"},
    "rate": {"better": "higher", "above": "faster", "below": "slower"},
}


def unit_kind(unit: str) -> str | None:
    if unit in TIME_UNITS:
        return "time"
    if unit in MEMORY_UNITS:
        return "memory"
    if unit.endswith("/s"):
        return "rate"
    return None


def unit_factor(from_unit: str, to_unit: str) -> float | None:
    """Multiply a value in `from_unit` by this to get it in `to_unit`; None if not convertible."""
    if from_unit == to_unit:
        return 1.0
    for table in (TIME_UNITS, MEMORY_UNITS):
        if from_unit in table and to_unit in table:
            return table[from_unit] / table[to_unit]
    return None


def better(unit: str) -> str | None:
    """'lower' or 'higher' is better for this unit, None when unknown."""
    kind = unit_kind(unit)
    return DIRECTIONS[kind]["better"] if kind else None


def reading(ratio: float | None, unit: str) -> str | None:
    """The ratio measured/published in words, e.g. '3.2x slower', 'about equal'."""
    kind = unit_kind(unit)
    if ratio is None or kind is None or ratio <= 0:
        return None
    if 0.995 <= ratio <= 1.005:
        return "about equal"
    words = DIRECTIONS[kind]
    if ratio > 1:
        return f"{factor_text(ratio)}x {words['above']}"
    return f"{factor_text(1 / ratio)}x {words['below']}"


def factor_text(v: float) -> str:
    """3 significant digits without exponent notation: 4.33, 51.9, 734, 1,190."""
    return f"{float(f'{v:.3g}'):,.0f}" if v >= 1000 else f"{v:.3g}"


def metric_stats(metric: dict) -> dict:
    """Median, count, min and max of one metric's samples, in the metric's own unit."""
    samples = [float(v) for v in metric.get("samples") or []]
    out: dict[str, Any] = {"unit": metric["unit"], "n": len(samples), "median": None,
                           "min": None, "max": None,
                           "stop_reason": metric.get("stop_reason"), "warmup": metric.get("warmup"),
                           "method": metric.get("method"), "sync": metric.get("sync"),
                           "derivation": metric.get("derivation")}
    if samples:
        out.update(median=statistics.median(samples), min=min(samples), max=max(samples))
    return out


def on_gpu(published_gpu: str) -> bool:
    """Whether a publication environment's `gpu` field names a GPU ('none (...)' means CPU)."""
    return not published_gpu.strip().lower().startswith("none")


def compare_number(number: dict, cell: dict | None) -> dict:
    """One published number against its cell result (None when the cell is not in the run)."""
    prov, env = number["provenance"], number["environment"]
    scale = float((number.get("transform") or {}).get("scale", 1.0))
    row: dict[str, Any] = {
        "id": number["id"], "source": prov["source"], "table": prov["table"],
        "row_label": prov["row_label"], "metric": number["metric"],
        "metric_as_published": number.get("metric_as_published", number["metric"]),
        "published": number["value"], "unit": number["unit"], "scale": scale,
        "cell": number["cell"], "cell_status": None, "cell_reason": None,
        "measured": None, "measured_min": None, "measured_max": None, "n": 0,
        "measured_unit": None, "ratio": None, "better": better(number["unit"]), "reading": None,
        "published_gpu": env["gpu"], "published_on_gpu": on_gpu(env["gpu"]),
        "published_environment": dict(env), "device": None, "defects": list(number.get("defects", [])),
        "note": None,
    }
    if number["cell"] is None:
        row["note"] = "no cell reproduces this number"
        return row
    if cell is None:
        row["cell_status"] = "not in run"
        row["note"] = "cell not in this run"
        return row
    row["cell_status"], row["cell_reason"] = cell["status"], cell.get("reason")
    row["device"] = cell.get("device")
    if cell["status"] != "ok":
        row["note"] = f"cell {cell['status']}"
        return row
    metric = (cell.get("metrics") or {}).get(number["metric"])
    if metric is None:
        row["note"] = f"metric {number['metric']} not recorded by the cell"
        return row
    st = metric_stats(metric)
    row["measured_unit"], row["n"] = st["unit"], st["n"]
    factor = unit_factor(st["unit"], number["unit"])
    if factor is None:
        row["note"] = f"unit mismatch: measured {st['unit']}, published {number['unit']}"
        return row
    if st["median"] is None:
        row["note"] = "no samples"
        return row
    k = factor * scale
    row.update(measured=st["median"] * k, measured_min=st["min"] * k, measured_max=st["max"] * k)
    if number["value"]:
        row["ratio"] = row["measured"] / number["value"]
        row["reading"] = reading(row["ratio"], number["unit"])
    if scale != 1.0:
        row["note"] = f"measured {number['metric']} x {scale:g}"
    return row


def compare(published: list[dict], cells: list[dict]) -> list[dict]:
    """Every published number with its measurement (in the order of `published`)."""
    by_id = {c["cell_id"]: c for c in cells}
    return [compare_number(n, by_id.get(n["cell"]) if n["cell"] else None) for n in published]


def unmatched(published: list[dict], cells: list[dict]) -> list[dict]:
    """Metrics of ok cells that no published number refers to."""
    wanted = {(n["cell"], n["metric"]) for n in published if n["cell"]}
    rows = []
    for c in cells:
        if c["status"] != "ok":
            continue
        for name, metric in (c.get("metrics") or {}).items():
            if (c["cell_id"], name) in wanted:
                continue
            st = metric_stats(metric)
            rows.append({"cell": c["cell_id"], "source": c.get("source"), "stack": c["stack"],
                         "metric": name, "device": c.get("device"), **st})
    return rows
