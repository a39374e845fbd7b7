"""Steady state, detected: each process's per-iteration samples through change-point detection.

After Barrett et al., "Virtual Machine Warmup Blows Hot and Cold" (OOPSLA 2017, warmup_stats): a fixed
warm-up count is often wrong (the kit saw `--quick` TorchScript cells 30 % slow after 2 warm-ups instead
of 10), so the kit does not trust it alone. Each process's iteration times go through PELT change-point
detection (ruptures, a change in mean and variance; its normal cost computed from prefix sums,
reprokit/analysis/normal_cost.py); segments equivalent to the last one are merged with
it; the merged last segment is the process's steady state and only it counts. The segments before it are
dropped and reported. Classes of a process:

  flat             no change point: every iteration counts
  warmup           the segment just before the steady state is slower: the iterations before it dropped
  slowdown         that segment is faster (the process got slower and stayed so): dropped as well
  no_steady_state  the steady state covers less than `steady_min_fraction` of the iterations: the cell
                   gets no verdict (reprokit/analysis/verdicts.py)
  unclassified     fewer than `min_iterations` iterations (a compile time, a --quick process): kept whole

The detector, its settings and their sources are data (reprokit/data/steady_state.yaml). Pure functions;
the detection of one series is cached, since a report asks for the same metric several times.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence

from reprokit import kitdata

FLAT = "flat"
WARMUP = "warmup"
SLOWDOWN = "slowdown"
NO_STEADY_STATE = "no_steady_state"
UNCLASSIFIED = "unclassified"
CLASSES = (FLAT, WARMUP, SLOWDOWN, NO_STEADY_STATE, UNCLASSIFIED)


def settings() -> dict:
    """reprokit/data/steady_state.yaml (validated)."""
    return kitdata.load("steady_state")


def change_points(series: Sequence[float]) -> list[int]:
    """Change points of a series (indices where a new segment starts, 0 < i < n) by ruptures' PELT with
    the data file's model and penalty (penalty_per_log_n x log n)."""
    return list(_change_points(tuple(float(x) for x in series)))


@kitdata.memoized  # per data: the detector's settings are data
def _change_points(xs: tuple[float, ...]) -> tuple[int, ...]:
    import numpy as np
    import ruptures

    from reprokit.analysis.normal_cost import NormalCost

    det = settings()["detector"]
    n = len(xs)
    jump = max(1, math.ceil(n / int(det["max_candidates"])))
    signal = np.asarray(xs, dtype=float).reshape(-1, 1)
    cost = {"custom_cost": NormalCost()} if det["model"] == "normal" else {"model": det["model"]}
    with warnings.catch_warnings():  # CostNormal's note that it adds a small bias to constant segments
        warnings.simplefilter("ignore", UserWarning)
        algo = ruptures.Pelt(**cost, min_size=int(det["min_size"]), jump=jump).fit(signal)
        ends = algo.predict(pen=float(det["penalty_per_log_n"]) * math.log(n))
    return tuple(int(e) for e in ends if 0 < e < n)


def classify(series: Sequence[float], higher_is_slower: bool = True) -> dict:
    """One process's classification. `series`: its iteration values in order (seconds, or a metric's
    samples: `higher_is_slower` False for a rate).

    Returns {"class", "n", "steady_start" (index of the first steady iteration), "steady_n",
    "dropped" (iterations before the steady state), "change_points", "segments" ([{start, end, mean}]),
    "steady_mean", "reason"}."""
    xs = [float(x) for x in series]
    cfg = settings()
    n = len(xs)
    base = {"n": n, "steady_start": 0, "steady_n": n, "dropped": 0, "change_points": [], "segments": [],
            "steady_mean": statistics.fmean(xs) if xs else None}
    if n < int(cfg["min_iterations"]):
        return {**base, "class": UNCLASSIFIED,
                "reason": f"{n} iteration{'s' if n != 1 else ''}, fewer than the {cfg['min_iterations']} "
                          "change-point detection needs: kept whole"}
    cps = change_points(xs)
    bounds = [0, *cps, n]
    segs = [{"start": a, "end": b, "mean": statistics.fmean(xs[a:b])} for a, b in zip(bounds, bounds[1:])]
    last = segs[-1]["mean"]
    delta = max(float(cfg["equivalence_abs_s"]) if higher_is_slower else 0.0,
                float(cfg["equivalence_rel"]) * abs(last))
    k = len(segs) - 1  # the first segment of the steady state (segments equivalent to the last merged)
    while k > 0 and abs(segs[k - 1]["mean"] - last) <= delta:
        k -= 1
    start = segs[k]["start"]
    steady_n = n - start
    out = {**base, "change_points": cps, "segments": segs, "steady_start": start, "steady_n": steady_n,
           "dropped": start, "steady_mean": statistics.fmean(xs[start:])}
    need = max(int(settings()["detector"]["min_size"]), math.ceil(float(cfg["steady_min_fraction"]) * n))
    if steady_n < need:
        return {**out, "class": NO_STEADY_STATE, "dropped": 0,
                "reason": f"no steady state: the last of {len(segs)} segments starts at iteration "
                          f"{start + 1} of {n} and covers {steady_n}, fewer than {need} "
                          f"({cfg['steady_min_fraction']:.0%} of the process)"}
    if k == 0:
        why = ("no change point" if not cps else
               f"{len(cps)} change point{'s' if len(cps) > 1 else ''} between equivalent segments "
               f"(means within {delta:.3g})")
        return {**out, "class": FLAT, "reason": f"flat: {why}"}
    before = segs[k - 1]["mean"]
    slower_before = (before > last) == higher_is_slower
    cls = WARMUP if slower_before else SLOWDOWN
    word = "slower" if slower_before else "faster"
    return {**out, "class": cls,
            "reason": f"{cls}: iterations 1-{start} dropped (the segment before the steady state is "
                      f"{100 * abs(before / last - 1):.3g} % {word}); {steady_n} steady iterations kept"}


def _series(metric: dict, k: int) -> tuple[list[list[float]], list[int], bool]:
    """What a metric's detection runs on, per process: each process's warm-up seconds followed by its
    timed iterations' seconds (the fixed warm-up count is a guess the detection checks: a steady state
    that starts after it drops timed samples too), when the raw seconds pair with the samples one to one
    and the warm-up seconds with `warmup` per process; else the timed samples alone (a rate: higher is
    faster). Returns (series per process, warm-up iterations leading each, higher_is_slower)."""
    from reprokit.catalog import units

    samples = [float(x) for x in metric.get("samples") or []]
    counts = metric.get("processes")
    raw = [float(x) for x in metric.get("raw_seconds") or []]
    if len(raw) != len(samples) or not samples:
        higher_is_slower = units.better_direction(metric.get("unit") or "") != "higher"
        groups = split_processes(samples, counts)
        return groups, [0] * len(groups), higher_is_slower
    groups = split_processes(raw, counts) if k > 1 else [raw]
    warm = [float(x) for x in metric.get("warmup_seconds") or []]
    w = int(metric.get("warmup") or 0)
    if w > 0 and len(warm) == w * len(groups):
        return [warm[i * w:(i + 1) * w] + g for i, g in enumerate(groups)], [w] * len(groups), True
    return groups, [0] * len(groups), True


def split_processes(samples: Sequence[float], processes: Sequence[int] | None) -> list[list[float]]:
    """The samples of each process (a metric's `processes` = sample count per process, in order);
    one list when `processes` is missing or does not add up to the samples."""
    xs = [float(x) for x in samples]
    counts = [int(k) for k in processes or []]
    if len(counts) < 2 or any(k < 1 for k in counts) or sum(counts) != len(xs):
        return [xs]
    out, i = [], 0
    for k in counts:
        out.append(xs[i:i + k])
        i += k
    return out


def of_metric(metric: dict) -> dict:
    """The steady state of every process of a cell metric.

    Returns {"samples" (the steady samples, process by process), "processes" (steady sample count per
    process, or None for one process), "classes" (per process), "dropped" (timed samples dropped, per
    process), "no_steady_state" (how many processes have none), "unclassified", "per_process"
    (classify()'s dicts without segments, plus `warmup`: the warm-up iterations that led the series),
    "summary" (one line), "method"}. A process with no steady state keeps its samples (the verdict is
    refused on it, the numbers stay visible)."""
    samples = [float(x) for x in metric.get("samples") or []]
    groups = split_processes(samples, metric.get("processes"))
    series, lead, higher_is_slower = _series(metric, len(groups))
    kept: list[list[float]] = []
    per: list[dict] = []
    for g, s, w in zip(groups, series, lead):
        c = classify(s, higher_is_slower)
        cut = max(0, c["dropped"] - w)
        kept.append(g[cut:])
        per.append({**{k: v for k, v in c.items() if k != "segments"}, "warmup": w, "dropped": cut,
                    "dropped_warmup": min(w, c["dropped"])})
    classes = [p["class"] for p in per]
    dropped = [p["dropped"] for p in per]
    none = classes.count(NO_STEADY_STATE)
    parts = [f"{classes.count(c)} {c.replace('_', ' ')}" for c in CLASSES if classes.count(c)]
    total = sum(dropped)
    summary = (f"steady state per process ({len(per)}): " + ", ".join(parts)
               + (f"; {total} timed iteration{'s' if total != 1 else ''} before a steady state dropped"
                  if total else ""))
    return {"samples": [x for g in kept for x in g],
            "processes": [len(g) for g in kept] if len(kept) > 1 else None,
            "classes": classes, "dropped": dropped, "no_steady_state": none,
            "unclassified": classes.count(UNCLASSIFIED), "per_process": per, "summary": summary,
            "method": method_text()}


def method_text() -> str:
    det = settings()["detector"]
    return (f"change points by {det['library']} {det['algorithm']} ({det['model']} model, penalty "
            f"{det['penalty_per_log_n']:g} log n) per process; segments before the steady state dropped "
            "(Barrett et al., OOPSLA 2017; reprokit/data/steady_state.yaml)")
