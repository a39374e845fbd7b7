"""Impossible numbers explained by their defect: EXPLAINED, UNEXPLAINED or not decided.

A published number above its device's roofline bound (IMPLAUSIBLE, reprokit/analysis/roofline.py) needs
its timing inflated by at least `published / bound`. A defect of its source whose `explains` block
(sources.yaml; schema sources.schema.json) says how to reproduce it names the as-published metric (the
defect reproduced) and the metric of the same loop timed correctly; the cell measures both in one
process. Their ratio here is the inflation the defect gives on this device.

Mechanism `drops_tail` (a timer without a final synchronisation): see `_drops_tail`.

Mechanism `hides_device_time` (a timer without device synchronisation): the timer sees the host-side
launches, not the device's execution, so the inflation grows as the device's execution slows. On the
publication's device it is about the inflation here x (this device's bound / the publication device's
bound) for the same model, assuming the host-side time per batch was the same (the data's
`assumption`). EXPLAINED when that reaches the inflation the published number needs, UNEXPLAINED when it
does not (another cause must add the rest), not decided where the variant was not measured or cannot
reproduce here (a CPU has no asynchronous execution to hide). Every label carries its arithmetic.
"""

from __future__ import annotations

import statistics

from reprokit.analysis import devices
from reprokit.catalog import suites
from reprokit.reader.frozen import mapping
from reprokit.reader.result import CellResult

EXPLAINED, UNEXPLAINED, NOT_DECIDED = "EXPLAINED", "UNEXPLAINED", "NOT_DECIDED"


def _median(metric: dict) -> float | None:
    xs = [x for x in metric.get("samples") or [] if isinstance(x, int | float)]
    return statistics.median(xs) if xs else None


def _processes(metric: dict) -> str:
    """'1 process' / 'N processes': how many processes the medians come from (a merged --repeat
    result lists them; one process says less than several about the next run)."""
    n = len(set(metric.get("processes") or [])) or 1
    return f"{n} process" + ("es" if n > 1 else "")


def _max_rate(bound: dict, device: dict, precision: str) -> tuple[float | None, str]:
    """The most items per second `device` can do on the bound's model (its compute and memory bounds
    for the lower bound of the work), and what limits it or why there is none."""
    peak, why = devices.peak_for(device, precision)
    if not peak:
        return None, why
    rates = [peak * 1e12 / bound["flops_per_item"]]
    bw = device.get("bandwidth_gbs")
    if bw and bound.get("bytes_per_item"):
        rates.append(bw * 1e9 / bound["bytes_per_item"])
    return min(rates), why


def _drops_tail(head: str, need: float, defect: str, ex: dict, metric: str, correct: str, metrics: dict,
                cell: CellResult, meas: dict) -> dict:
    """Mechanism `drops_tail` (a timer that stops without waiting for the device at the end): only
    the work still queued when it stops is left out. Here: the as-published figure against the same
    loop with that one synchronisation added (its Elapsed + the measured tail). There: the tail is
    at most the launch queue's worth of batches (the cell's probe, extra.end_sync), so the inflation
    is at most planned / (planned - queued). EXPLAINED when the inflation here reaches the need (a
    slower device keeps the queue at least as full, assumed), UNEXPLAINED when even a full queue
    falls short, NOT_DECIDED between the two."""
    pub = mapping(metrics[metric].get("as_published"))
    end = _median(metrics[correct])  # one figure per process
    probe = mapping(cell.extra.get("end_sync"))
    if not pub.get("value") or not end or not probe.get("planned_batches"):
        return {"label": NOT_DECIDED, "arithmetic": f"{head}; no as-published figure, end-synced "
                f"figure or launch-queue probe for {defect} in this cell"}
    a, b, unit = float(pub["value"]), float(end), metrics[metric]["unit"]
    f_here = a / b if unit.endswith("/s") else b / a
    planned, queued = int(probe["planned_batches"]), probe.get("launch_queue_batches")
    here = (f"{defect} inflates it {f_here:.3g}x here ({metric} as published {a:,.4g} against "
            f"{b:,.4g} {unit} with one synchronisation after the timed batches, the device's tail "
            f"{probe.get('tail_s', 0):.3g} s, {_processes(metrics[correct])} on {meas['label']})")
    if queued is None or queued + 1 >= planned:
        held = "more batches than the probe launched" if queued is None else f"{queued} batches"
        f_max, room = None, (f"the launch queue held {held} here, so all {planned} timed batches could "
                             "be unfinished when the timer stopped: no upper limit")
    else:
        f_max = planned / (planned - (queued + 1))
        room = (f"at most {queued + 1} of the {planned} timed batches fit in the launch queue (the "
                f"probe's {queued}, plus the one being launched), so at most {f_max:.3g}x on any "
                "device")
    if f_here >= need:  # there at least as much, assumed: the decision's inflation is f_here
        label, verdict, there = EXPLAINED, "enough to explain it", f_here
    elif f_max is not None and f_max < need:  # there at most f_max
        label, verdict, there = (UNEXPLAINED, f"short of it by {need / f_max:.3g}x: another cause must "
                                 "add the rest", f_max)
    else:
        label, verdict, there = (NOT_DECIDED, "the publication's slower GPU may have held more of it "
                                 "queued: not decided", None)
    text = f"{head}; {here}; {room}: {verdict}"
    if ex.get("assumption"):
        text += f" (assumes {ex['assumption']})"
    return {"label": label, "arithmetic": text, "inflation_here": f_here, "inflation_there": there}


def explain(number: dict, bound: dict, cell: CellResult | None, meas: dict | None) -> list[dict]:
    """One label per defect of the number's source that could explain it: {"defect", "label",
    "arithmetic", "inflation_needed", "inflation_here", "inflation_there", "assumption", "source"}."""
    source = number["provenance"]["source"]
    src = suites.load_sources().get(source) or {}
    out = []
    # what the number needs to be ordinary: under the bound (IMPLAUSIBLE) or under the suspicious share
    suspicious = bound.get("tier") == "SUSPICIOUS"
    threshold = float(bound.get("suspicious_fraction") or 0.5) if suspicious else 1.0
    need = float(bound["fraction_of_bound"]) / threshold
    head = (f"it needs its timing inflated at least {need:.3g}x to fall under "
            + (f"{threshold:.0%} of the {bound['device']} bound (published / that share)" if suspicious
               else f"the {bound['device']} bound (published / the bound)"))
    for d in src.get("defects") or []:
        ex = d.get("explains")
        if not ex or number["metric"] not in ex["variant"]:
            continue
        if "defects" in number and d["id"] not in number["defects"]:  # its applies_to misses it
            continue
        row = {"defect": d["id"], "inflation_needed": need, "inflation_here": None, "inflation_there": None,
               "assumption": ex.get("assumption"), "source": ex["source"]}
        out.append(row)
        correct = ex["variant"][number["metric"]]
        metrics = cell.metrics if cell is not None else {}
        if cell is None or not cell.measured or number["metric"] not in metrics or correct not in metrics:
            row.update(label=NOT_DECIDED,
                       arithmetic=f"{head}; {number['metric']} and {correct} were not both measured "
                                  "in this run")
            continue
        if meas is None or meas.get("kind") not in ex["devices"]:
            row.update(label=NOT_DECIDED, arithmetic=f"{head}; {d['id']} reproduces on "
                       f"{' or '.join(ex['devices']).upper()} only, and this cell ran on "
                       f"{meas.get('label', 'another device') if meas else 'another device'}, where both "
                       "timings are the same")
            continue
        if ex["mechanism"] == "drops_tail":
            row.update(_drops_tail(head, need, d["id"], ex, number["metric"], correct, metrics, cell, meas))
            continue
        a, b = _median(metrics[number["metric"]]), _median(metrics[correct])
        precision, _ = devices.cell_precision(cell)
        here, why = _max_rate(bound, meas, precision)
        there = bound.get("max_items_per_s")
        if not a or not b or not here or not there:
            row.update(label=NOT_DECIDED,
                       arithmetic=f"{head}; no bound for {meas.get('label')} ({why}) or no median of "
                                  "the two timings")
            continue
        unit = metrics[number["metric"]]["unit"]
        f_here = a / b if unit.endswith("/s") else b / a
        scale = here / there
        f_there = f_here * scale
        row.update(inflation_here=f_here, inflation_there=f_there,
                   label=EXPLAINED if f_there >= need else UNEXPLAINED)
        verdict = ("enough to explain it" if f_there >= need
                   else f"short of it by {need / f_there:.3g}x: another cause must add the rest")
        row["arithmetic"] = (
            f"{head}; {d['id']} inflates it {f_here:.3g}x here ({number['metric']} {a:,.4g} / {correct} "
            f"{b:,.4g} {unit}, per-batch medians of {_processes(metrics[number['metric']])} on "
            f"{meas['label']}); it hides the device's execution, "
            f"which takes about {scale:.3g}x longer on {bound['device']} for this model (the ratio of the "
            f"two bounds, {here:,.4g} / {there:,.4g} {bound.get('item', 'item')}s/s at most, at the same "
            f"share of each), so there about {f_there:.3g}x: {verdict}"
            + (f" (assumes {ex['assumption']})" if ex.get("assumption") else ""))
    if not out:  # no defect of the source says how to reproduce an inflation of this metric
        catalogue = any(d.get("explains") for s in suites.load_sources().values()
                        for d in s.get("defects") or [])
        row = {"defect": None, "inflation_needed": need, "inflation_here": None, "inflation_there": None,
               "assumption": None, "source": "reprokit/data/sources.yaml"}
        if catalogue:
            row.update(label=UNEXPLAINED, arithmetic=f"{head}; no known defect of source {source} explains "
                       f"it (none in sources.yaml says how to reproduce an inflation of {number['metric']}: "
                       "an `explains` block)")
        else:  # a source data without a catalogue: not looked up, so not "unexplained"
            row.update(label=NOT_DECIDED, arithmetic=f"{head}; the run's data has no defect catalogue "
                       "(no sources.yaml defect has an `explains` block): `report RUN --rejudge OUT` "
                       "judges it with the kit's data of today")
        out.append(row)
    return out
