"""FLOP arithmetic: FLOP models of the workloads (data/flops.yaml), device peaks (data/peaks.yaml),
and the conversion of a measured or published time/throughput into achieved FLOP/s and efficiency.

Everything here is a pure function of its arguments plus the two data files (loaded and validated
once). Formulas in flops.yaml are evaluated by a tiny arithmetic evaluator (numbers, names,
+ - * / // ** and parentheses); nothing else is executed.
"""

from __future__ import annotations

import ast
import operator
import re

from reprokit import kitdata
from reprokit.catalog import suites, units
from reprokit.catalog.suites import GPU_COUNT


class NotApplicable(Exception):
    """No FLOP figure can be given (no model, no peak, unknown unit...); the message says why, and
    `cause` names its kind for a count of numbers (the report's first screen)."""

    cause = "with no FLOP model for the metric"

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        if cause is not None:
            self.cause = cause


class NotCovered(NotApplicable):
    """The cell's FLOP model lacks what this configuration needs (a parameter its formulas use, the
    cell's data set): a gap in flops.yaml, not a metric the models leave out by design."""


# -- data ------------------------------------------------------------------------------------------
def load_models() -> dict:
    """The whole flops.yaml document (validated, shared)."""
    return kitdata.load("flops")


def load_peaks() -> dict:
    """The whole peaks.yaml document (validated, shared)."""
    return kitdata.load("peaks")


# -- safe arithmetic -------------------------------------------------------------------------------
_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def evaluate(expr: str, names: dict[str, float]) -> float:
    """Value of an arithmetic expression over `names`; raises NotApplicable for a missing name."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names or names[node.id] is None:
                raise NotCovered(f"parameter '{node.id}' of formula '{expr}' is unknown")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](ev(node.operand))
        raise ValueError(f"formula '{expr}': {type(node).__name__} is not allowed")

    return ev(ast.parse(expr, mode="eval"))


# -- models ----------------------------------------------------------------------------------------
def model_for(cell_id: str | None, models: dict | None = None) -> tuple[str, dict] | None:
    """(model id, model) whose `cells` patterns match the cell id, or None."""
    if not cell_id:
        return None
    doc = models or load_models()
    for mid, m in doc["models"].items():
        if any(re.search(p, cell_id) for p in m["cells"]):
            return mid, m
    return None


def _numeric(params: dict) -> dict[str, float]:
    return {
        k: v for k, v in (params or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


@kitdata.memoized
def corpus_sizes(corpus: str) -> dict[str, float]:
    """{"corpus_vocab", "corpus_tokens"} of a reading of datasets.yaml (its vocabulary and train token
    count): the sizes of the data the cells read (the stand-ins get the same figures through the job
    file). Raises NotApplicable for an unknown reading."""
    from reprokit.catalog import datasets

    for ds in datasets.catalogue().values():
        for r in ds.get("readings") or []:
            if r.get("corpus") == corpus:
                return {"corpus_vocab": float(r["vocab"]["value"]),
                        "corpus_tokens": float(r["tokens"]["train"]["value"])}
    raise NotApplicable(f"no reading '{corpus}' in datasets.yaml")


def resolve_params(model: dict, params: dict) -> dict[str, float]:
    """Numeric parameters of a model: the cell's params over the model's defaults; then the sizes of
    the data set the cells read (the model's `corpus`, or its `by_dataset` entry: numbers, formulas,
    or a `corpus` whose datasets.yaml vocabulary and train tokens become corpus_vocab and
    corpus_tokens); then the derived values, in order."""
    names = {**model.get("defaults", {}), **_numeric(params)}
    if model.get("corpus"):
        names.update(corpus_sizes(model["corpus"]))
    dataset = str(params.get("dataset") or "").lower()
    table = model.get("by_dataset") or {}
    if table:
        hit = next((v for k, v in table.items() if k in dataset), None)
        if hit is None:
            raise NotCovered(
                f"data set '{dataset or '?'}' is not in the model's table ({', '.join(table)})"
            )
        if "corpus" in hit:
            names.update(corpus_sizes(hit["corpus"]))
        for k, v in hit.items():
            if k != "corpus":
                names[k] = evaluate(v, names) if isinstance(v, str) else v
    for k, expr in (model.get("derived") or {}).items():
        names[k] = evaluate(expr, names)
    return names


def number_params(number: dict) -> dict:
    """The parameters a published number's FLOPs are counted with: those of the cell it maps to (the
    suite's params, the same the workload runs), over the number's own workload fields; the number's
    fields alone when it maps to no cell of any suite."""
    cell = suites.cell_params(number.get("cell"))
    return {**(number.get("workload") or {}), **(cell or {})}


def phase_of(model: dict, cell_id: str, metric: str) -> tuple[str, str | None]:
    """(phase 'forward'|'backward'|'train', note) of a metric; raises NotApplicable when the model does not
    apply."""
    note = None
    phase = model.get("phase_by_metric", {}).get(metric)
    if phase is None:
        for pat, ph in (model.get("phase_from_cell") or {}).items():
            if re.search(pat, cell_id):
                phase = ph
    for ov in model.get("overrides") or []:
        if re.search(ov["cell"], cell_id):
            if "invalid" in ov:
                raise NotApplicable(ov["invalid"], "whose FLOP model does not describe the work its cell did")
            if "phase" in ov:
                phase, note = ov["phase"], ov.get("why")
    if phase is None:
        raise NotApplicable(f"the FLOP model has no phase for metric '{metric}' of {cell_id}")
    return phase, note


def flops_per_item(cell_id: str, metric: str, params: dict, models: dict | None = None) -> dict:
    """FLOPs per item of one metric of one cell.

    Returns {"model", "item", "item_plural", "phase", "forward_flops_per_item", "flops_per_item",
    "factor", "formula", "params", "reference", "note"}; raises NotApplicable with the reason.
    """
    doc = models or load_models()
    found = model_for(cell_id, doc)
    if found is None:
        raise NotApplicable(f"no FLOP model covers cell {cell_id}")
    mid, m = found
    phase, note = phase_of(m, cell_id, metric)
    names = resolve_params(m, params)
    fwd = float(evaluate(m["forward_flops_per_item"], names))
    # a backward pass is a training step without its forward: weight and input gradients, one forward
    # product each by the same convention
    train = float(doc["train_factor"])
    factor = {"train": train, "backward": train - 1.0}.get(phase, 1.0)
    used = {
        k: names[k] for k in sorted(names) if re.search(rf"\b{re.escape(k)}\b", m["forward_flops_per_item"])
    }
    return {
        "model": mid,
        "item": m["item"],
        "item_plural": m.get("item_plural", m["item"] + "s"),
        "phase": phase,
        "forward_flops_per_item": fwd,
        "flops_per_item": fwd * factor,
        "factor": factor,
        "formula": m["forward_flops_per_item"],
        "params": used,
        "reference": m["reference"],
        "note": note,
        "_names": names,
        "_model": m,
    }


def items_per_second(value: float, unit: str, metric: str, est: dict, models: dict | None = None) -> float:
    """Items per second from one value of a metric (a time per item/batch/epoch, or a rate)."""
    doc = models or load_models()
    per = doc["metric_quantities"].get(metric)
    if per is None:
        raise NotApplicable(f"metric '{metric}' is not a time or throughput the FLOP models know")
    if value is None or value <= 0:
        raise NotApplicable(f"value {value!r} is not a positive time or rate")
    m, names = est["_model"], est["_names"]
    if unit.endswith("/s"):
        if per != "item":
            raise NotApplicable(f"rate unit {unit} for a per-{per} metric")
        return float(value)
    if not units.is_time(unit):
        raise NotApplicable(f"unit '{unit}' is neither a time nor a rate")
    seconds = units.seconds(value, unit)
    if per == "item":
        count = 1.0
    elif per == "batch":
        if "items_per_batch" not in m:
            raise NotApplicable("the FLOP model does not say how many items a batch holds")
        count = evaluate(m["items_per_batch"], names)
    else:
        if "items_per_epoch" not in m:
            raise NotApplicable("the FLOP model does not say how many items an epoch holds")
        count = evaluate(m["items_per_epoch"], names)
    return float(count) / seconds


def achieved(
    value: float, unit: str, metric: str, cell_id: str, params: dict, models: dict | None = None
) -> dict:
    """Achieved FLOP/s of one value of a metric.

    Returns {"flops_per_s", "tflops", "flops_per_item", "items_per_s", "item", "item_plural",
    "phase", "model", "formula", "params", "reference", "note", "arithmetic"}; raises NotApplicable.
    """
    est = flops_per_item(cell_id, metric, params, models)
    ips = items_per_second(value, unit, metric, est, models)
    rate = est["flops_per_item"] * ips
    factor = (
        ""
        if est["factor"] == 1
        else f" ({est['factor']:g} x {fmt_flops(est['forward_flops_per_item'])} forward)"
    )
    arithmetic = (
        f"{fmt_flops(est['flops_per_item'])} per {est['item']} ({est['phase']}){factor} x "
        f"{ips:,.4g} {est['item_plural']}/s = {fmt_flops(rate)}/s"
    )
    out = {k: v for k, v in est.items() if not k.startswith("_")}
    out.update(flops_per_s=rate, tflops=rate / 1e12, items_per_s=ips, arithmetic=arithmetic)
    return out


def fmt_flops(x: float) -> str:
    for scale, name in ((1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1e3, "kFLOP")):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {name}"
    return f"{x:.4g} FLOP"


# -- device peaks ----------------------------------------------------------------------------------


def find_gpu(name: str | None, peaks: dict | None = None, power_limit_w: float | None = None) -> dict | None:
    """The peaks.yaml entry a GPU name maps to, with the count from an 'Nx ' prefix.

    Returns {"entry", "name", "count", "fp32_tflops" (per GPU, CUDA cores), "peak_tflops" (count x
    fp32), "tf32_tensor_tflops" (per GPU, dense; None for a GPU without TF32), "tf32_verified",
    "tf32_sources", "verified", "sources", "notes", "memory_bandwidth_gbs" (per GPU),
    "bandwidth_verified", "bandwidth_sources"} or None when no entry matches (CPU rows, unknown GPUs).
    """
    if not name:
        return None
    doc = peaks or load_peaks()
    m = GPU_COUNT.match(name)
    count = int(m.group(1)) if m else 1

    def by_power(e: dict) -> bool:  # a variant the name does not tell apart: its power limit does
        rule = e.get("by_power_limit")
        return bool(rule and isinstance(power_limit_w, (int, float)) and power_limit_w <= rule["max_w"]
                    and any(re.search(p, name, re.I) for p in rule["also_match"]))

    ordered = sorted(doc["gpus"].items(), key=lambda kv: not by_power(kv[1]))
    for eid, e in ordered:
        if by_power(e) or any(re.search(p, name, re.I) for p in e["match"]) and not any(
            re.search(p, name, re.I) for p in e.get("exclude", [])
        ):
            return {
                "entry": eid,
                "name": e["name"],
                "count": count,
                "fp32_tflops": e["fp32_tflops"],
                "peak_tflops": count * e["fp32_tflops"],
                "tf32_tensor_tflops": e.get("tf32_tensor_tflops"),
                "tf32_verified": e.get("tf32_verified"),
                "tf32_sources": e.get("tf32_sources"),
                "verified": e["verified"],
                "sources": e["sources"],
                "notes": e.get("notes"),
                "derivation": e.get("derivation"),
                "memory_bandwidth_gbs": e.get("memory_bandwidth_gbs"),
                "bandwidth_verified": e.get("bandwidth_verified"),
                "bandwidth_sources": e.get("bandwidth_sources"),
            }
    return None


def _measured(method: str) -> str:
    """The probe's method as a peak source; the probe's text already says "measured: ..."."""
    return method if method.startswith("measured") else f"measured: {method}"
