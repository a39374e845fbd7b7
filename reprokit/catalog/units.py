"""Units of every metric and published number, and the one conversion function of the code base.

Times (s, ms, us, ns, min, h), memory (B, kB/KB, MB, GB as SI; KiB, MiB, GiB binary) and FLOP/s
convert within their kind; a rate (anything ending in '/s', e.g. 'words/s') only to itself.
"""

from __future__ import annotations

_UNITS: dict[str, tuple[str, float]] = {
    # time, in seconds
    "s": ("time", 1.0),
    "ms": ("time", 1e-3),
    "us": ("time", 1e-6),
    "µs": ("time", 1e-6),  # micro sign
    "μs": ("time", 1e-6),  # Greek mu
    "ns": ("time", 1e-9),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    # memory, in bytes (MB/GB are SI as labelled; nvidia-smi's "MiB" are binary)
    "B": ("memory", 1.0),
    "kB": ("memory", 1e3),
    "KB": ("memory", 1e3),
    "MB": ("memory", 1e6),
    "GB": ("memory", 1e9),
    "KiB": ("memory", 1024.0),
    "MiB": ("memory", 1024.0**2),
    "GiB": ("memory", 1024.0**3),
    # floating-point throughput, in FLOP/s
    "FLOP/s": ("flops", 1.0),
    "GFLOP/s": ("flops", 1e9),
    "TFLOP/s": ("flops", 1e12),
}


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """`value` in `from_unit` expressed in `to_unit`.

    Times (s, ms, us, ns, min, h), memory (B, kB/KB, MB, GB as SI; KiB, MiB, GiB binary) and FLOP/s
    convert within their kind; a rate (anything ending in '/s', e.g. 'words/s', 'seq/s') only to
    itself. Raises ValueError for units of different kinds or unknown units.
    """
    if from_unit == to_unit:
        return float(value)
    a, b = _UNITS.get(from_unit), _UNITS.get(to_unit)
    if a is None or b is None:
        raise ValueError(
            f"cannot convert {from_unit!r} to {to_unit!r}: "
            f"unknown unit {from_unit if a is None else to_unit!r}"
        )
    if a[0] != b[0]:
        raise ValueError(f"cannot convert {from_unit!r} ({a[0]}) to {to_unit!r} ({b[0]})")
    return float(value) * a[1] / b[1]


def better_direction(unit: str) -> str | None:
    """'lower' for times and memory, 'higher' for rates (…/s), None when unknown."""
    kind = _UNITS.get(unit, (None,))[0]
    if kind in ("time", "memory"):
        return "lower"
    if kind == "flops" or unit.endswith("/s"):
        return "higher"
    return None


def is_speed(unit: str) -> bool:
    return _UNITS.get(unit, (None,))[0] == "time" or unit.endswith("/s")




def seconds(value: float, unit: str) -> float:
    """A time in `unit` as seconds; ValueError when `unit` is not a time."""
    if _UNITS.get(unit, (None,))[0] != "time":
        raise ValueError(f"unit '{unit}' is not a time")
    return float(value) * _UNITS[unit][1]


def is_time(unit: str) -> bool:
    return _UNITS.get(unit, (None,))[0] == "time"


def kind(unit: str) -> str | None:
    """'time', 'memory', 'flops', 'rate' (items per second: words/s, seq/s) or None (unknown)."""
    known = _UNITS.get(unit)
    if known:
        return known[0]
    return "rate" if unit.endswith("/s") and unit[:-2].isalpha() else None


def metric_kind(metric: str) -> str | None:
    """The kind of unit a metric is measured in, by the kit's metric names: a rate ends in `_per_s` or
    `wps` (seq_per_s, train_wps), a FLOP rate holds `flops`, a memory `memory`, a time `time`
    (time_per_batch, forward_time_per_example, compile_time); None for a name that says none."""
    if metric.endswith(("_per_s", "wps")):
        return "rate"
    for word, k in (("flops", "flops"), ("memory", "memory"), ("time", "time")):
        if word in metric:
            return k
    return None


def unit_problem(metric: str, unit: str) -> str | None:
    """Why `unit` cannot be the unit of a `metric` figure, or None."""
    u, m = kind(unit), metric_kind(metric)
    if u is None:
        return f"unit {unit!r} is not one the kit knows"
    if m is not None and u != m and not (m == "rate" and u == "flops"):
        return f"{metric} is a {m} but {unit!r} is a {u} unit"
    return None
