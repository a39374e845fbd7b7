"""Timed sampling loops for workloads.

Runs inside old stacks: Python 3.5 syntax (2.7-compatible), standard library only.
A sample is one iteration of a workload step (one batch), timed on its own, so every
published figure can be traced to raw per-iteration seconds.
"""
import time

clock = getattr(time, "perf_counter", time.time)


class Budget(object):
    """How many iterations to time: at least min_samples, then until time_budget_s is spent,
    never more than max_samples. `published_count` (protocol "published") replaces all of that
    with the original benchmark's fixed iteration count."""

    def __init__(self, min_samples=5, max_samples=1000, time_budget_s=20.0, warmup=0,
                 published_count=None):
        self.min_samples = int(min_samples)
        self.max_samples = int(max_samples)
        self.time_budget_s = float(time_budget_s)
        self.warmup = int(warmup)
        self.published_count = published_count

    @classmethod
    def from_dict(cls, d, published_count=None):
        d = d or {}
        return cls(d.get("min_samples", 5), d.get("max_samples", 1000),
                   d.get("time_budget_s", 20.0), d.get("warmup", 0), published_count)


def _once(step, sync, after):
    t0 = clock()
    out = step()
    if sync is not None:
        sync()
    dt = clock() - t0
    if after is not None:
        after(out)
    return dt


def sample(step, budget, sync=None, should_stop=None, after=None, before_timed=None, progress=None,
           progress_every_s=5.0):
    """Time `step()` repeatedly. `sync` (optional) runs inside the timer after each step;
    `after(step_result)` (optional) runs after the timer stops, e.g. to read a loss to the host
    outside the timed region as an original benchmark did.

    `should_stop(raw_seconds)` lets a caller stop early once enough samples are taken (for
    example when a confidence interval is narrow enough); it is only asked after min_samples.
    `before_timed()` (optional) runs once after the warm-up, before the first timed iteration; its
    value is returned as `before_timed` (the real-work check's digest of the weights). Its time is left
    out of `wall_seconds`, which sources that timed a whole loop see without it.
    Returns {"raw_seconds", "warmup_seconds", "stop_reason", "wall_seconds", "window"}: `wall_seconds`
    is the wall time from before the first warm-up iteration to after the last timed one, everything
    in between included (the `after` calls, the gaps between iterations), as a source that timed a
    whole loop or epoch with one clock saw it. `window` is the timed iterations' span on the epoch
    clock (`start_unix`, `end_unix`, `steps`, `synced`: whether `sync` ended each step), which the host
    matches with the GPU's energy counter (reprokit/probes/energy.py); `last_result` the last step's
    return value and `before_timed` the callback's value, for the harness's real-work check.
    `progress(raw_seconds, warmup_seconds)` (optional) is called, outside the timer, at most every
    `progress_every_s` seconds with the samples taken so far: the harness keeps them on disk, so a
    process stopped before its stopping rule leaves what it measured.
    """
    last = []  # the last step's return value (outside the timer), for the real-work check

    def keep(out):
        if after is not None:
            after(out)
        last[:] = [out]

    begin = clock()
    warm = [_once(step, sync, keep) for _ in range(budget.warmup)]
    if before_timed is not None:  # the check's digest is not the benchmark's: kept out of wall_seconds
        t_check = clock()
        ahead = before_timed()
        begin += clock() - t_check
    else:
        ahead = None
    raw = []
    start = clock()
    start_unix = time.time()

    def window():
        return {"start_unix": start_unix, "end_unix": time.time(), "steps": len(raw),
                "synced": sync is not None}

    if budget.published_count is not None:
        for _ in range(int(budget.published_count)):
            raw.append(_once(step, sync, keep))
        return {"raw_seconds": raw, "warmup_seconds": warm, "stop_reason": "published_count",
                "wall_seconds": clock() - begin, "window": window(),
                "last_result": last[0] if last else None, "before_timed": ahead}
    flushed = clock()
    while True:
        raw.append(_once(step, sync, keep))
        if progress is not None and clock() - flushed >= progress_every_s:
            progress(raw, warm)
            flushed = clock()
        n = len(raw)
        if n >= budget.max_samples:
            reason = "max_samples"
            break
        if n >= budget.min_samples:
            if should_stop is not None and should_stop(raw):
                reason = "precision_reached"
                break
            if clock() - start >= budget.time_budget_s:
                reason = "time_budget"
                break
    return {"raw_seconds": raw, "warmup_seconds": warm, "stop_reason": reason,
            "wall_seconds": clock() - begin, "window": window(),
            "last_result": last[0] if last else None, "before_timed": ahead}


def derive(raw_seconds, kind, items):
    """Turn raw seconds into metric values.

    kind: "ms_per_item" (ms per example), "items_per_s" (words/s, seq/s), "s" or "ms".
    Returns (values, derivation text).
    """
    if kind == "ms_per_item":
        return [1000.0 * s / items for s in raw_seconds], "1000 * seconds / %s" % items
    if kind == "items_per_s":
        return [items / s for s in raw_seconds], "%s / seconds" % items
    if kind == "s":
        return list(raw_seconds), "seconds"
    if kind == "ms":
        return [1000.0 * s for s in raw_seconds], "1000 * seconds"
    raise ValueError("unknown metric kind %r" % kind)


# -- the metric as the source defined it ----------------------------------------------------------
# A source computed its figure from whole loops or epochs, not from separately timed iterations. The
# kit records it beside the per-iteration samples as `as_published` (docs/FORMATS.md): one or more
# segments (the timed loop, or one segment per epoch), each with the seconds of its iterations in
# order, how many of them were warm-up, the time its clock saw outside them (`other_seconds`) and
# the items one iteration holds. reprokit/analysis/published_metric.py recomputes the value from
# the same segments with these very functions (segment_totals, figure_of: loaded by the host, one copy).
FIGURES = ("time_per_item", "rate", "time")


def segment_totals(segment, planned_iterations):
    """(seconds, items) of one segment as its source counted them: the sum of its iterations'
    seconds plus `other_seconds`; when fewer than `planned_iterations` ran, the missing ones are
    counted at the mean of the segment's steady iterations (those after its `warmup` first ones),
    so a partial loop or epoch gives an estimate, which the result labels as partial."""
    secs = [float(s) for s in segment["seconds"]]
    n = len(secs)
    if n == 0:
        raise ValueError("a segment holds no iteration")
    w = min(int(segment.get("warmup", 0)), n - 1)
    steady = secs[w:]
    total = sum(secs) + float(segment.get("other_seconds", 0.0))
    planned = int(planned_iterations or n)
    if planned > n:
        total += (planned - n) * sum(steady) / len(steady)
    return total, float(segment["items_per_iteration"]) * max(planned, n)


def figure_of(figure, total, items, scale=1.0):
    """One segment's figure: 'time_per_item' scale * seconds / items, 'rate' items / seconds,
    'time' scale * seconds."""
    if figure == "time_per_item":
        return scale * total / items
    if figure == "rate":
        return items / total
    if figure == "time":
        return scale * total
    raise ValueError("unknown figure %r (known: %s)" % (figure, ", ".join(FIGURES)))


def as_published_value(figure, segments, planned_iterations, scale=1.0):
    """The source's figure: the mean over the segments (epochs) of each segment's figure."""
    if not segments:
        raise ValueError("no segment to compute the published figure from")
    values = [figure_of(figure, *segment_totals(s, planned_iterations), scale=scale)
              for s in segments]
    return sum(values) / len(values)


def split_segments(seconds, per_segment, warmup, items_per_iteration, other_seconds=0.0):
    """Consecutive iterations cut into segments of `per_segment` (epochs); the first `warmup`
    iterations are the first segment's warm-up; `other_seconds` goes to the first segment."""
    segs = []
    per = max(1, int(per_segment))
    for i in range(0, len(seconds), per):
        segs.append({"seconds": list(seconds[i:i + per]), "warmup": max(0, min(warmup - i, per)),
                     "other_seconds": other_seconds if i == 0 else 0.0,
                     "items_per_iteration": items_per_iteration})
    return segs
