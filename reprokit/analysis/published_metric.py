"""The metric as its source defined it: recompute, label and bound a cell metric's `as_published` figure.

Sources did not report medians of separately timed iterations. 000 printed the mean over 1000 iterations,
001 target tokens / the summed seconds of each epoch averaged over 10 epochs, 002 the wall time of a whole
Keras fit epoch (set-up and callbacks included), 003 its Elapsed seconds of 50 batches after 10 warm-up
batches (Avg = Elapsed / 50, seq/s = 50 x 128 / Elapsed), 004 the tutorial's cumulative words/s since the
epoch start (and the PyTorch example its ms/batch over a 200-batch log window). A workload records that figure
beside its per-iteration samples as the metric's `as_published` (docs/FORMATS.md): the definition's name
and text, and `segments` (the timed loop, or one per epoch) holding the seconds of every iteration the
figure is computed from, the time its clock saw outside them and the items per iteration.

This module (pure, no I/O but loading bench/timing.py) recomputes the figure from those segments with
bench/timing.py's own `segment_totals` and `figure_of` (one copy across the host/stack boundary), says
whether it is the published definition or a partial estimate (fewer iterations or epochs than the source's
counts: the missing iterations at the mean of the measured steady ones, labelled so and never as the
published figure), and gives it an interval from the per-iteration samples: a percentile bootstrap that
resamples each segment's steady iterations (its warm-up iterations and the time outside iterations kept as
measured) and recomputes the figure. With `run --repeat K` (K >= 2) the figure is the median of the K
process figures and the interval the order-statistic (or [min, max]) interval over them, as for medians.

`summary(metric)` returns a dict shaped like `stats.summarize` (`median` holds the figure) so a verdict
compares the published number with the figure of the same definition, or None when the metric records
no such figure (a result that recorded none, a metric whose source gave no definition).
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from reprokit import files
from reprokit.analysis import stats
from reprokit.reader.frozen import mapping

FIGURES = ("time_per_item", "rate", "time")
N_BOOT = 2000
SEED = 0

# Short names of the definitions the workloads record (bench/workloads/*: record_as_published);
# {P} is the planned iterations per segment, {S} the planned segments.
SHORT = {
    "mean_over_iterations": "mean over {P} iterations",
    "tokens_over_epoch_seconds_mean":
        "tokens / summed seconds per epoch, mean over {S} epochs of {P} batches",
    "epoch_wall_time": "wall time of a whole epoch ({P} batches, set-up and callbacks included)",
    "epoch_wall_time_per_sample": "whole-epoch wall time / samples ({P} batches)",
    "cumulative_wps_at_last_print":
        "cumulative words/s since the epoch start at the last print (step {last})",
    "log_window_ms_per_batch": "wall ms / 200 over the first log window ({P} batches)",
    "items_over_elapsed": "items / elapsed seconds of {P} timed iterations",
}


class Inconsistent(ValueError):
    """An `as_published` record that cannot be recomputed (no segment, unknown figure)."""


def segment_totals(segment: dict, planned_iterations: int | None) -> tuple[float, float]:
    """(seconds, items) of one segment: bench/timing.py's segment_totals, the one copy of that arithmetic
    (loaded through files.bench_module), its errors as Inconsistent."""
    try:
        return files.bench_module("timing").segment_totals(segment, planned_iterations)
    except ValueError as e:
        raise Inconsistent(str(e)) from e


def figure_of(figure: str, total: float, items: float, scale: float = 1.0) -> float:
    """One segment's figure: bench/timing.py's figure_of, its errors as Inconsistent."""
    try:
        return files.bench_module("timing").figure_of(figure, total, items, scale)
    except ValueError as e:
        raise Inconsistent(str(e)) from e


def value_of(ap: dict) -> float:
    """The figure recomputed from the record's segments."""
    segs = ap.get("segments") or []
    if not segs:
        raise Inconsistent("no segment to compute the published figure from")
    planned = mapping(ap.get("planned")).get("iterations_per_segment")
    vals = [figure_of(ap["figure"], *segment_totals(s, planned), scale=float(ap.get("scale", 1.0)))
            for s in segs]
    return sum(vals) / len(vals)


def iterations(ap: dict) -> int:
    return sum(len(s["seconds"]) for s in ap.get("segments") or [])


def complete(ap: dict) -> bool:
    """Every planned segment ran every planned iteration (recomputed, not taken from the record)."""
    planned = mapping(ap.get("planned"))
    per = int(planned.get("iterations_per_segment") or 1)
    segs = ap.get("segments") or []
    return len(segs) >= int(planned.get("segments") or 1) and all(len(s["seconds"]) >= per for s in segs)


def short_name(ap: dict) -> str:
    planned = mapping(ap.get("planned"))
    p, s = int(planned.get("iterations_per_segment") or 0), int(planned.get("segments") or 1)
    text = SHORT.get(ap.get("definition"), ap.get("definition") or "the source's figure")
    return text.format(P=f"{p:,}", S=s, last=f"{p - 1:,}")


def label(ap: dict) -> str:
    """'as published: <definition>' or 'partial estimate, not the published figure: <what ran>'."""
    if complete(ap):
        return f"as published: {short_name(ap)}"
    planned = mapping(ap.get("planned"))
    p, s = int(planned.get("iterations_per_segment") or 0), int(planned.get("segments") or 1)
    segs = ap.get("segments") or []
    if s > 1:
        done = (f"{len(segs)} of {s} epochs ran, with "
                + ", ".join(f"{len(g['seconds']):,}" for g in segs) + f" of {p:,} batches")
    else:
        done = f"{iterations(ap):,} of {p:,} iterations ran"
    return (f"partial estimate, not the published figure: {done} ({short_name(ap)}; the rest counted "
            "at the mean of the measured steady iterations)")


def bootstrap_interval(ap: dict, confidence: float = stats.DEFAULT_CONFIDENCE, n_boot: int = N_BOOT,
                       seed: int = SEED) -> tuple[float, float] | None:
    """Percentile bootstrap of the figure: each segment's steady iterations resampled with replacement,
    its warm-up iterations and `other_seconds` kept. None when no segment has 2 steady iterations."""
    segs = ap.get("segments") or []
    planned = int(mapping(ap.get("planned")).get("iterations_per_segment") or 0)
    scale = float(ap.get("scale", 1.0))
    rng = np.random.default_rng(seed)
    per_segment = []
    varies = False
    for seg in segs:
        secs = np.asarray(seg["seconds"], dtype=float)
        n = len(secs)
        w = min(int(seg.get("warmup", 0)), n - 1)
        steady = secs[w:]
        fixed = float(secs[:w].sum()) + float(seg.get("other_seconds", 0.0))
        p = planned or n
        ns = len(steady)
        if ns >= 2:
            varies = True
            draws = steady[rng.integers(0, ns, size=(n_boot, ns))]
            ssum = draws.sum(axis=1)
        else:
            ssum = np.full(n_boot, float(steady.sum()))
        total = fixed + ssum + max(0, p - n) * ssum / ns
        items = float(seg["items_per_iteration"]) * max(p, n)
        per_segment.append(figure_of(ap["figure"], total, items, scale))  # bench's, on the draws (arrays)
    if not varies:
        return None
    values = np.mean(np.vstack(per_segment), axis=0)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def summary(metric: dict, confidence: float = stats.DEFAULT_CONFIDENCE) -> dict | None:
    """The figure of the source's definition as a `stats.summarize`-shaped dict (`median` = the figure,
    its interval from the per-iteration samples), with `statistic` "as_published", `definition`,
    `text`, `label`, `complete`, `recorded_value` and `consistent` (the recorded value equals the
    recomputed one), `iterations`, and `robust` (the per-iteration median's summary). None when the
    metric records no `as_published`."""
    per_process = [ap for ap in metric.get("as_published_processes") or [] if ap]
    ap = per_process[0] if per_process else metric.get("as_published")
    if not ap:
        return None
    robust = stats.summarize_metric(metric, confidence=confidence)
    out = {k: robust[k] for k in ("mean", "stdev", "cv", "min", "max", "noisy", "noisy_threshold",
                                   "stop_reason", "unit")}
    out.update(statistic="as_published", definition=ap["definition"], text=ap["text"],
               ci_confidence=confidence, between=None, robust=robust)
    if len(per_process) >= 2:
        values = [value_of(a) for a in per_process]
        recorded = [float(a["value"]) for a in per_process]
        ci = stats.between_process_ci([[x] for x in values], confidence)  # CI and prediction interval
        whole = all(complete(a) for a in per_process)
        out.update(
            median=statistics.median(values), value=statistics.median(values), process_values=values,
            recorded_value=statistics.median(recorded),
            consistent=all(_close(a, b) for a, b in zip(values, recorded)),
            n=len(values), processes=len(values), iterations=sum(iterations(a) for a in per_process),
            complete=whole,
            label=label(per_process[0]) if whole else
            f"partial estimate in {sum(not complete(a) for a in per_process)} of {len(values)} processes: "
            + label(next(a for a in per_process if not complete(a))),
            ci_low=ci["ci_low"], ci_high=ci["ci_high"], ci_coverage=ci["ci_coverage"],
            ci_label=ci["ci_label"], ci_method=f"process_figures_{ci['ci_method']}",
            ci_levels=["processes", "iterations"], ci_covers="median",
            pi_low=ci["pi_low"], pi_high=ci["pi_high"], pi_label=ci["pi_label"],
            ci_note=f"{len(values)} processes: the median of their figures, the confidence interval over "
                    f"them (t with {len(values) - 1} degrees of freedom on the process figures)"
                    + ("; a re-run's figure falls in the wider prediction interval "
                       f"[{ci['pi_low']:.4g}, {ci['pi_high']:.4g}]" if ci["pi_low"] is not None else ""))
        return out
    value = value_of(ap)
    n_iter = iterations(ap)
    iv = bootstrap_interval(ap, confidence)
    label_ci = f"{confidence:.0%} bootstrap interval".replace("%", " %")
    out.update(
        median=value, value=value, recorded_value=float(ap["value"]), consistent=_close(value, ap["value"]),
        n=n_iter, processes=1, iterations=n_iter, complete=complete(ap), label=label(ap),
        ci_low=iv[0] if iv else None, ci_high=iv[1] if iv else None, ci_coverage=None,
        ci_label=label_ci if iv else "no interval",
        ci_method="bootstrap_iterations" if iv else "none", ci_levels=["iterations"], ci_covers="process",
        ci_note=(f"percentile bootstrap ({N_BOOT} resamples) of the figure over the {n_iter} iterations' "
                 "seconds (warm-up iterations and time outside iterations kept as measured); approximate "
                 "coverage; " + stats.ONE_PROCESS_NOTE if iv
                 else "fewer than 2 steady iterations: no interval"))
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
