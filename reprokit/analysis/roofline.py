"""Roofline plausibility bound of a published number: the fastest its model could possibly run on the
device it was published on.

For one item (an example, a word, a sequence, a sample) of a metric the model costs at least
`flops_per_item` FLOPs and must move at least `bytes_per_item` bytes through device memory
(data/flops.yaml: each model's `roofline` block). On a device with fp32 peak P and memory bandwidth
B the minimum time per item is max(flops / P, bytes / B); its inverse is the maximum rate. A
published speed above that rate is impossible (IMPLAUSIBLE); above `suspicious_fraction` of it
(flops.yaml `roofline`) it is SUSPICIOUS; otherwise PLAUSIBLE.

The bound is a LOWER bound of the work, so it is lenient: it is not the FLOP convention used for
efficiency (reprokit.analysis.flops: training = 3 x forward). See CONVENTIONS. Pure functions of the
number, the device dict (reprokit.analysis.devices) and the two data files.
"""

from __future__ import annotations

import math

from reprokit.analysis import flops
from reprokit.catalog import units
from reprokit.reader.result import CellResult

PLAUSIBLE = "PLAUSIBLE"
SUSPICIOUS = "SUSPICIOUS"
IMPLAUSIBLE = "IMPLAUSIBLE"
TIERS = (PLAUSIBLE, SUSPICIOUS, IMPLAUSIBLE)

CONVENTIONS = [
    "FLOPs: matrix products only, a multiply-add = 2 FLOPs (an LSTM layer with input size I and hidden "
    "size H costs 2*4*H*(I+H) per time step, a projection to V outputs 2*H*V); nonlinearities, "
    "elementwise products, biases, embedding lookups, losses and optimizer updates are left out, so "
    "every count is a lower bound of the work.",
    "Training lower bound = forward + weight gradient + input gradient, each costing one forward "
    "product, except the input gradient of the first layer: 3 x forward - the first layer's input "
    "product. Its input is data (no gradient wanted) or an embedding, whose gradient can be formed once "
    "per distinct token (W^T times the summed deltas) rather than once per item. The usual 3 x forward "
    "(flops.yaml train_factor, still used for efficiency) over-counts by exactly that product; "
    "2 x forward would be safe too, but looser.",
    "The algorithm a bound assumes: the model's direct products, unless its FLOP model names a cheaper "
    "known one for its operations (`minimal_arithmetic`, e.g. Winograd for small convolutions, with its "
    "source), whose saving then scales every pass; the bound's arithmetic names it.",
    "Backward lower bound (a metric of the backward pass alone) = training's less its forward: 2 x "
    "forward - the first layer's input product; its bytes are the training step's (weights read, "
    "gradients written) unless the model gives its own.",
    "Products a minimal implementation need not execute are left out of every pass: the recurrent "
    "product of the first time step (zero initial state; left out even where the state is carried) and "
    "products with one-hot or bool inputs (a row gather or sum).",
    "Bytes: what one forward or training step must move through device memory at least once: fp32 "
    "weights used in full read once (4 B each) and, for training, written once more (the updated "
    "weights or their gradients); the input data at its stored width; targets where a loss is "
    "computed; a forward pass's returned result. Left out: biases, optimizer state, activations kept "
    "for the backward pass, logits a fused softmax + loss need not store, per-GPU weight replicas. "
    "Bytes per item = bytes per step / items per step.",
    "Device: dense fp32 peak at the rated boost clock and rated memory bandwidth (peaks.yaml for GPUs, "
    "N GPUs = N x one; cpus.yaml for CPUs). Minimum time per item = max(FLOPs / peak, bytes / "
    "bandwidth); without a bandwidth the bound is compute-only.",
    "IMPLAUSIBLE: the published speed exceeds the bound (fraction of bound > 1); SUSPICIOUS: above "
    "flops.yaml roofline.suspicious_fraction of it; PLAUSIBLE: below. A time's fraction is bound time / "
    "published time; the bound is given in the published unit (after transform.scale).",
]


def policy(models: dict | None = None) -> dict:
    """flops.yaml `roofline`: {"suspicious_fraction", "why"}."""
    return (models or flops.load_models())["roofline"]


def tier_of(fraction: float, suspicious_fraction: float) -> str:
    if fraction > 1.0:
        return IMPLAUSIBLE
    if fraction > suspicious_fraction:
        return SUSPICIOUS
    return PLAUSIBLE


# -- work per item ---------------------------------------------------------------------------------
def work_per_item(cell_id: str, metric: str, params: dict, models: dict | None = None) -> dict:
    """Lower bounds of the FLOPs and bytes one item of `metric` costs.

    Returns {"model", "item", "item_plural", "phase", "forward_flops_per_item", "flops_per_item"
    (lower bound), "optional_flops_per_item", "no_input_grad_flops_per_item", "weights",
    "bytes_per_step", "items_per_step", "bytes_per_item", "note", "bytes_notes", "_est"
    (flops.flops_per_item's estimate, for flops.items_per_second)}; raises flops.NotApplicable.
    """
    doc = models or flops.load_models()
    est = flops.flops_per_item(cell_id, metric, params, doc)
    m, names = est["_model"], est["_names"]
    rl = m.get("roofline")
    if not rl:
        raise flops.NotApplicable(f"the FLOP model {est['model']} has no roofline (bytes) block")
    if "items_per_batch" not in m:
        raise flops.NotApplicable(f"the FLOP model {est['model']} does not say how many items a step holds")
    fwd = est["forward_flops_per_item"]
    optional = float(flops.evaluate(rl["optional_flops_per_item"], names))
    no_input_grad = float(flops.evaluate(rl["no_input_grad_flops_per_item"], names))
    if est["phase"] == "train":
        lower = 3.0 * (fwd - optional) - no_input_grad
    elif est["phase"] == "backward":  # the training step less its forward: both gradients
        lower = 2.0 * (fwd - optional) - no_input_grad
    else:
        lower = fwd - optional
    if not 0 < lower <= fwd * max(est["factor"], 1.0):
        raise flops.NotApplicable(
            f"the FLOP lower bound of {est['model']} is {lower:g}, outside (0, {est['factor']:g} x forward]: "
            "check its roofline block"
        )
    algorithm = None
    minimal = m.get("minimal_arithmetic")
    if minimal:  # a cheaper algorithm than the formula's direct products: every pass saves as much
        cheapest = float(flops.evaluate(minimal["forward_flops_per_item"], names))
        if not 0 < cheapest <= fwd:
            raise flops.NotApplicable(
                f"the minimal arithmetic of {est['model']} ({minimal['algorithm']}) gives {cheapest:g} "
                f"FLOPs, outside (0, {fwd:g}] (its direct forward): check the model")
        algorithm = {"name": minimal["algorithm"], "source": minimal["source"], "saving": cheapest / fwd}
        lower *= cheapest / fwd
    weights = float(flops.evaluate(rl["weights"], names))
    per_step = rl["bytes_per_step"]
    step_bytes = float(flops.evaluate(per_step.get(est["phase"]) or per_step["train"],
                                      {**names, "weights": weights}))
    items = float(flops.evaluate(m["items_per_batch"], names))
    if items <= 0 or step_bytes < 0:
        raise flops.NotApplicable(
            f"the bytes model of {est['model']} gives {step_bytes:g} bytes for {items:g} items"
        )
    return {
        "model": est["model"],
        "item": est["item"],
        "item_plural": est["item_plural"],
        "phase": est["phase"],
        "forward_flops_per_item": fwd,
        "flops_per_item": lower,
        "optional_flops_per_item": optional,
        "no_input_grad_flops_per_item": no_input_grad,
        "weights": weights,
        "bytes_per_step": step_bytes,
        "items_per_step": items,
        "bytes_per_item": step_bytes / items,
        "note": est["note"],
        "bytes_notes": rl.get("notes"),
        "algorithm": algorithm,
        "_est": est,
    }


# -- units: items per second <-> the published value -------------------------------------------------
def value_at_rate(items_per_s: float, unit: str, metric: str, est: dict, models: dict | None = None) -> float:
    """The value of `metric` in `unit` that means `items_per_s` items per second: the reverse of
    flops.items_per_second (a rate is itself; a time is the items one value covers / the rate)."""
    if items_per_s <= 0:
        raise flops.NotApplicable(f"rate {items_per_s!r} is not positive")
    if unit.endswith("/s"):
        flops.items_per_second(1.0, unit, metric, est, models)  # validates: a per-item rate
        return float(items_per_s)
    if not units.is_time(unit):
        raise flops.NotApplicable(f"unit '{unit}' is neither a time nor a rate")
    covered = flops.items_per_second(1.0, "s", metric, est, models)  # items one value covers (per 1 s)
    return units.convert(covered / items_per_s, "s", unit)


# -- formatting ----------------------------------------------------------------------------------------
def _sig(x: float, digits: int = 3) -> str:
    """`x` to `digits` significant digits, with thousands separators and no exponent."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    mag = math.floor(math.log10(abs(x)))
    if mag >= digits - 1:
        return f"{round(x, digits - 1 - mag):,.0f}"
    return f"{x:,.{digits - 1 - mag}f}"


def _value(x: float) -> str:
    """A published value as written (whole numbers from a million up), with thousands separators."""
    return f"{x:,.0f}" if abs(x) >= 1e6 else f"{x:,g}"


def _bytes(x: float) -> str:
    for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {name}"
    return f"{x:.3g} B"


def _pct(frac: float) -> str:
    return f"{100 * frac:,.0f} %" if frac >= 0.1 else f"{100 * frac:.2g} %"


# -- the bound -------------------------------------------------------------------------------------------
def bound(number: dict, device: dict, models: dict | None = None) -> dict | None:
    """The roofline bound of a published number on its publication device, or None when no FLOP model
    covers the number (cell, metric, unit) or the device has no fp32 peak.

    `number` is a published number (reprokit.catalog.suites.load_published), `device` a device dict
    (reprokit.analysis.devices: "label", "count", "peak_tflops", "bandwidth_gbs", "verified"), `models`
    the flops.yaml document (default: the packaged one). Returns {"tier", "fraction_of_bound"
    (published speed / maximum speed; > 1 is impossible), "bound_value" (the maximum rate or minimum
    time in the published unit, after transform.scale), "bound_unit", "binding" ("compute"|"memory"),
    "flops_per_item" (lower bound), "bytes_per_item", "peak_tflops", "bandwidth_gbs", "device",
    "verified", "suspicious_fraction", "arithmetic" (one sentence), ...}; the conventions behind every
    bound are CONVENTIONS (the report prints them once).
    """
    peak = device.get("peak_tflops") if device else None
    cell = number.get("cell")
    if not peak or peak <= 0 or not cell:
        return None
    doc = models or flops.load_models()
    metric, unit = number["metric"], number["unit"]
    scale = float(number.get("transform", {}).get("scale", 1))
    value = float(number["value"]) / scale
    try:
        w = work_per_item(cell, metric, flops.number_params(number), doc)
        published_ips = flops.items_per_second(value, unit, metric, w["_est"], doc)
        compute_ips = peak * 1e12 / w["flops_per_item"]
        bw = device.get("bandwidth_gbs")
        memory_ips = bw * 1e9 / w["bytes_per_item"] if bw and w["bytes_per_item"] > 0 else None
        max_ips = compute_ips if memory_ips is None else min(compute_ips, memory_ips)
        bound_metric_value = value_at_rate(max_ips, unit, metric, w["_est"], doc)
    except (flops.NotApplicable, ValueError):
        return None
    binding = "memory" if memory_ips is not None and memory_ips < compute_ips else "compute"
    fraction = published_ips / max_ips
    susp = float(policy(doc)["suspicious_fraction"])
    tier = tier_of(fraction, susp)
    bound_value = bound_metric_value * scale
    return {
        "tier": tier,
        "fraction_of_bound": fraction,
        "bound_value": bound_value,
        "bound_unit": unit,
        "binding": binding,
        "flops_per_item": w["flops_per_item"],
        "forward_flops_per_item": w["forward_flops_per_item"],
        "bytes_per_item": w["bytes_per_item"],
        "peak_tflops": peak,
        "bandwidth_gbs": bw or None,
        "device": device.get("label"),
        "count": device.get("count"),
        "verified": device.get("verified"),
        "suspicious_fraction": susp,
        "model": w["model"],
        "phase": w["phase"],
        "item": w["item"],
        "published_items_per_s": published_ips,
        "max_items_per_s": max_ips,
        "compute_items_per_s": compute_ips,
        "memory_items_per_s": memory_ips,
        "note": w["note"],
        "bytes_notes": w["bytes_notes"],
        **({"algorithm": w["algorithm"]} if w["algorithm"] else {}),
        "arithmetic": _arithmetic(number, device, w, scale, bound_value, binding, fraction,
                                  compute_ips, memory_ips),
    }


def _arithmetic(number: dict, device: dict, w: dict, scale: float, bound_value: float, binding: str,
                fraction: float, compute_ips: float, memory_ips: float | None) -> str:
    unit, item, items = number["unit"], w["item"], w["item_plural"]
    label = device.get("label") or "the device"
    count = device.get("count") or 1
    gpus = f" ({count} GPUs)" if count > 1 else ""
    unverified = " (peak unverified)" if device.get("verified") is False else ""
    what = f"{scale:g} x {number['metric']}" if scale != 1 else number["metric"]
    published = f"published {_value(float(number['value']))} {unit} ({what})"
    if unit.endswith("/s"):
        claim = f"{label} can do at most {_sig(bound_value)} {unit} ({w['phase']}) on this model"
    else:
        claim = f"{label} needs at least {_sig(bound_value)} {unit} ({w['phase']}) on this model"
    peak = f"{_sig(device['peak_tflops'])} TFLOP/s fp32{gpus}{unverified}"
    algo = w.get("algorithm")
    cheapest = (f" with {algo['name']}, {_pct(algo['saving'])} of the direct products ({algo['source']})"
                if algo else "")
    compute = (f"{flops.fmt_flops(w['flops_per_item'])} per {item} lower bound{cheapest} / {peak} = "
               f"{_sig(compute_ips)} {items}/s")
    if memory_ips is None:
        memory = f"memory bound unknown (no bandwidth for {label})"
    else:
        memory = (f"{_bytes(w['bytes_per_item'])} per {item} / {_sig(device['bandwidth_gbs'])} GB/s = "
                  f"{_sig(memory_ips)} {items}/s")
    parts = (compute, memory) if binding == "compute" else (memory, compute)
    return f"{published}; {claim} ({binding}-bound: {parts[0]}; {parts[1]}): {_pct(fraction)} of the bound"


# -- what bounds a measured cell ---------------------------------------------------------------------
NO_RULE = "no roofline_class rule in the run's data (verdict_policy.yaml)"
COMPUTE, MEMORY, LAUNCH, OVERHEAD, MIXED, UNKNOWN = ("compute-bound", "memory-bound", "launch-bound",
                                                     "overhead-bound", "mixed", "unknown")


def cell_class(cell: CellResult, metric: str, unit: str, value: float, device: dict,
               rule: dict | None) -> dict:
    """The roofline class of a measured cell: {"class", "compute_fraction", "memory_fraction", "why"}.

    The fractions are the measured rate's share of the device's compute bound (the peak of the precision
    that ran) and memory bound (its bandwidth), for the roofline's lower bound of the work, so both are
    lower bounds. `rule` is verdict_policy.yaml `roofline_class`: at least `bound_fraction` of a bound
    makes the cell bound by it (the larger share); under `launch_fraction` of both, host-side work
    bounds it (launch-bound on a GPU, overhead-bound on a CPU); otherwise mixed. Unknown where the
    FLOP model, the peak or (for a cell under half its compute bound) the bandwidth is missing."""
    from reprokit.analysis import devices

    if not rule:
        return {"class": UNKNOWN, "compute_fraction": None, "memory_fraction": None, "why": NO_RULE}
    precision, _ = devices.cell_precision(cell)
    peak, why_no_peak = devices.peak_for(device, precision)
    out = {"class": UNKNOWN, "compute_fraction": None, "memory_fraction": None}
    if not peak:
        return {**out, "why": f"no compute bound: {why_no_peak}"}
    try:
        w = work_per_item(cell.cell_id, metric, cell.params)
        ips = flops.items_per_second(value, unit, metric, w["_est"])
    except flops.NotApplicable as e:
        return {**out, "why": f"no roofline for this metric: {e}"}
    cf = w["flops_per_item"] * ips / (peak * 1e12)
    bw = device.get("bandwidth_gbs")
    mf = w["bytes_per_item"] * ips / (bw * 1e9) if bw else None
    out.update(compute_fraction=cf, memory_fraction=mf)
    shares = f"{_pct(cf)} of the compute bound" + (f", {_pct(mf)} of the memory bound" if mf is not None
                                                   else " (memory bandwidth unknown)")
    bound, low = float(rule["bound_fraction"]), float(rule["launch_fraction"])
    if max(cf, mf or 0.0) >= bound:
        cls = COMPUTE if cf >= (mf or 0.0) else MEMORY
    elif mf is None:
        cls = UNKNOWN
    elif max(cf, mf) < low:
        cls = LAUNCH if device.get("kind") == "gpu" else OVERHEAD
    else:
        cls = MIXED
    return {**out, "class": cls, "why": shares}


def ratio_carries(a: str, b: str, rule: dict | None) -> tuple[str, str]:
    """Whether a ratio of two cells of these classes is expected to carry to another device:
    ("expected" | "not expected" | "no expectation", why), from verdict_policy.yaml `roofline_class`."""
    if not rule:
        return "no expectation", NO_RULE
    if LAUNCH in (a, b) or OVERHEAD in (a, b):
        return "not expected", rule["carries"]["launch"]
    if a == b and a in (COMPUTE, MEMORY):
        return "expected", rule["carries"]["same_bound"]
    return "no expectation", rule["carries"]["other"]
