"""What a run can decide here, before anything runs: each published number's and claim's decidability
on this host and device, and from them each cell's role.

The verdict rules (reprokit/analysis/verdicts.py, claims.py) are applied in their own order to what the
plan knows before a measurement exists: the publication device, the device each cell will run on (its
kind, model and count, from the host fingerprint), the device peaks, the FLOP models and the policy. A
published number is

  impossible    IMPLAUSIBLE from the data alone (faster than its own device's roofline bound)
  other_class   published on another device class (GPU vs CPU, another GPU count): NOT_TESTABLE_HERE
  not_planned   its cell is not part of this run (not selected, not implemented, skipped)
  context       same class, but no verdict is possible whatever the measurement: another precision,
                no FLOP model or peak, or peaks further apart than the policy's max_peak_ratio
  decides       same model (the band rule on raw values) or an efficiency the policy allows

and a claim pair is other_class, not_planned, no_claim (the source's own numbers differ by no more than
its tolerance) or decides. A stand-in for the mechanism is known only once the cell ran, so a number or
claim that a stand-in would make untestable still counts here as one that decides.

A cell *decides* when some number or claim pair that it feeds decides (its interval is what a verdict
depends on); otherwise it is measured for *context* only. Pure functions: the suite, the planned cells,
the host fingerprint in; a plain dict out (run.json `decidability`). `sequential_status` is the
sequential design's stopping rule, which the run loop (reprokit/run/serial.py) applies after each round.
"""

from __future__ import annotations

from reprokit.analysis import claims as claims_mod
from reprokit.analysis import devices, flops, roofline, verdicts
from reprokit.catalog import suites
from reprokit.reader.model import Machine, Run
from reprokit.reader.result import CellResult

DECIDES, CONTEXT = "decides", "context"
IMPOSSIBLE, OTHER_CLASS, NOT_PLANNED, NO_CLAIM = "impossible", "other_class", "not_planned", "no_claim"


def prospective_cell(cell, device: str) -> CellResult:
    """A cell result as far as the plan knows it before the cell runs (status `pending`): its id,
    params, the device it will run on (a cell published on a CPU runs there whatever the run's device)
    and the precision it will run in (fp32, or the framework's default for a twin on a GPU: perhaps
    TF32, so unknown)."""
    dev = cell.device or device
    precision = "fp32" if cell.precision == suites.FP32 or dev != "gpu" else "unknown"
    return CellResult.from_doc({
        "run_id": "", "cell_id": cell.id, "source": cell.source, "stack": cell.stack,
        "workload": cell.workload, "variant": cell.variant, "params": dict(cell.params), "device": dev,
        "status": "pending", "reason": "planned", "metrics": {},
        "precision": {"effective": precision, "why": "planned: " + (
            "fp32 (TF32 off, or a CPU)" if precision == "fp32" else
            "the framework's default precision, TF32 where it has one")}})


def number_decidability(number: dict, cell: CellResult | None, machine: Machine) -> tuple[str, str]:
    """(what the number can be here, why) for a published number whose cell will run as `cell`
    (prospective_cell; None when its cell is not in the run), on `machine`."""
    pub = devices.publication_device(number)
    bound = roofline.bound(number, pub)
    if bound is not None and bound["tier"] == verdicts.IMPLAUSIBLE:
        return IMPOSSIBLE, "IMPLAUSIBLE from the data alone: " + bound["arithmetic"]
    if cell is None:
        mismatch = devices.host_mismatch(pub, machine)
        if mismatch:
            return OTHER_CLASS, mismatch
        why = "no cell of the kit reproduces it" if number["cell"] is None else \
            f"its cell {number['cell']} is not part of this run"
        return NOT_PLANNED, why
    meas = devices.measured_device(cell, machine)
    mismatch = devices.class_mismatch(pub, meas)
    if mismatch:
        return OTHER_CLASS, mismatch
    if devices.same_model(pub, meas):
        return DECIDES, f"same device model ({meas['label']}): the band rule on raw values"
    return _efficiency_decidability(number, cell, pub, meas)


def _efficiency_decidability(number: dict, cell: CellResult, pub: dict, meas: dict) -> tuple[str, str]:
    """Another model of the same class: an efficiency verdict only where the policy allows one."""
    pol = verdicts.load_policy()["efficiency"]
    precision, _ = devices.cell_precision(cell)
    if precision != devices.PUBLISHED_PRECISION:
        return CONTEXT, (f"it will run in {precision} precision, the publication in "
                         f"{devices.PUBLISHED_PRECISION}: efficiency is context")
    peak_m, why_m = devices.peak_for(meas, precision)
    peak_p, why_p = devices.peak_for(pub, devices.PUBLISHED_PRECISION)
    if not peak_m or not peak_p:
        dev, why = (meas, why_m) if not peak_m else (pub, why_p)
        return CONTEXT, f"no {why} for {dev['label']}: " + (dev.get("reason") or "not known to the kit")
    try:
        roofline.work_per_item(cell.cell_id, number["metric"], cell.params)
    except flops.NotApplicable as e:
        return CONTEXT, f"no FLOP model: {e}"
    ratio = max(peak_m, peak_p) / min(peak_m, peak_p)
    if ratio > float(pol["max_peak_ratio"]):
        return CONTEXT, (f"{pub['label']} and {meas['label']} peaks are {ratio:.3g}x apart, more than "
                         f"the policy's {float(pol['max_peak_ratio']):g}x: efficiency is context")
    return DECIDES, f"efficiency against {pub['label']} (peaks {ratio:.3g}x apart)"


def _observations(cells: list, device: str, machine: Machine) -> list[dict]:
    """One prospective observation per planned cell and metric (what claims.py reads of a side
    before deciding it: the device class, model and count)."""
    out = []
    for c in cells:
        prospect = prospective_cell(c, device)
        dev = devices.measured_device(prospect, machine)
        for metric in c.metrics:
            out.append({"cell_id": c.id, "metric": metric, "device": dev["kind"], "hw": dev["entry"],
                        "label": dev["label"], "count": dev["count"], "standins": [], "exact": False})
    return out


def claim_decidability(claim: dict, observations: list[dict], published: list[dict], machine: Machine,
                       tolerance: float) -> list[dict]:
    """Per pair of the claim: {"better", "worse", "can", "why", "cells"} (claims.pair_untestable)."""
    out = []
    for better, worse, status, why in claims_mod.pair_untestable(claim, observations, published, machine,
                                                                 tolerance):
        can = {None: DECIDES, claims_mod.NO_CLAIM: NO_CLAIM, claims_mod.NOT_TESTABLE_HERE: OTHER_CLASS,
               claims_mod.NOT_RUN: NOT_PLANNED}[status]
        out.append({"better": better["cell"], "worse": worse["cell"], "can": can,
                    "why": why or "both sides run on this device class"})
    return out


def judge(suite, cells: list, device: str, host: dict | None) -> dict:
    """Decidability of every published number and claim of `suite` for the planned `cells`
    (suites.Cell, runnable) on `device` ("cpu"/"gpu") of the host `host` (its fingerprint), and each
    cell's role."""
    machine = Machine.of(host)
    by_id = {c.id: c for c in cells}
    numbers = []
    for n in suites.published_for_suite(suite):
        cell = by_id.get(n["cell"])
        can, why = number_decidability(n, prospective_cell(cell, device) if cell else None, machine)
        numbers.append({"number_id": n["id"], "cell": n["cell"], "can": can, "why": why})
    obs = _observations(cells, device, machine)
    doc = claims_mod.load_claims()
    tol = doc.get("default_tolerance", 0.10)
    sources = suites.load_sources()
    claim_rows = []
    for claim in doc["claims"]:
        if claim["source"] not in suite.sources:
            continue
        pub = [n for n in suites.load_published(claim["source"])]
        src_tol = sources.get(claim["source"], {}).get("tolerance", tol)
        pairs = claim_decidability(claim, obs, pub, machine, src_tol)
        claim_rows.append({"claim_id": claim["id"], "source": claim["source"], "pairs": pairs,
                           "can": _claim_can(pairs)})
    roles = _roles(cells, numbers, claim_rows)
    return {"device": device, "numbers": numbers, "claims": claim_rows, "cells": roles,
            "text": summary_text(numbers, claim_rows, roles, device, machine)}


def _claim_can(pairs: list[dict]) -> str:
    """A claim decides when some pair of it decides; else the first reason its pairs give."""
    cans = [p["can"] for p in pairs]
    for c in (DECIDES, OTHER_CLASS, NOT_PLANNED, NO_CLAIM):
        if c in cans:
            return c
    return NOT_PLANNED


def _roles(cells: list, numbers: list[dict], claim_rows: list[dict]) -> dict[str, dict]:
    out = {c.id: {"role": CONTEXT, "numbers": [], "claims": [], "published": 0} for c in cells}
    for n in numbers:
        if n["cell"] in out:
            out[n["cell"]]["published"] += 1
            if n["can"] == DECIDES:
                out[n["cell"]]["numbers"].append(n["number_id"])
    for c in claim_rows:
        for p in c["pairs"]:
            if p["can"] != DECIDES:
                continue
            for side in (p["better"], p["worse"]):
                if side in out and c["claim_id"] not in out[side]["claims"]:
                    out[side]["claims"].append(c["claim_id"])
    for r in out.values():
        r["role"] = DECIDES if r["numbers"] or r["claims"] else CONTEXT
    return out


def _device_words(device: str, machine: Machine) -> str:
    gpus = [g.get("name") for g in machine.gpus]
    if device == "gpu" and gpus:
        return f"on this GPU ({gpus[0]})"
    return "on this CPU"


def summary_text(numbers: list[dict], claim_rows: list[dict], roles: dict[str, dict], device: str,
                 machine: Machine) -> str:
    """The run's first line: what it can decide here and why not the rest, and the cells' roles."""
    def count(rows: list[dict], can: str) -> int:
        return sum(1 for r in rows if r["can"] == can)

    why = []
    for can, words in ((OTHER_CLASS, "published on another device class"),
                       (IMPOSSIBLE, "impossible from the data"), (CONTEXT, "context only here"),
                       (NOT_PLANNED, "whose cell is not in this run")):
        if count(numbers, can):
            why.append(f"{count(numbers, can)} {words}")
    deciding = sum(1 for r in roles.values() if r["role"] == DECIDES)
    text = (f"{_device_words(device, machine)} {count(numbers, DECIDES)} of {len(numbers)} numbers and "
            f"{count(claim_rows, DECIDES)} of {len(claim_rows)} claims can be decided"
            + (f" ({', '.join(why)})" if why else "") + "; ")
    if deciding == 0:
        return text + f"the {len(roles)} cells are measured for context"
    return text + (f"{deciding} of the {len(roles)} cells decide, the other {len(roles) - deciding} are "
                   "measured for context")


# -- the sequential design's stopping rule ----------------------------------------------------------------
DECIDED_VERDICTS = (verdicts.REPRODUCED, verdicts.DEVIATES_FASTER, verdicts.DEVIATES_SLOWER,
                    verdicts.DEVIATES_HIGHER, verdicts.DEVIATES_LOWER, verdicts.EFFICIENCY_SIMILAR,
                    verdicts.EFFICIENCY_HIGHER, verdicts.EFFICIENCY_LOWER)


def _processes_needed(k: int, half: float, margin: float) -> str:
    """A rough count of processes that would decide: the interval's half-width shrinks as
    1/sqrt(processes), so it clears a margin `margin` from its centre at about k (half/margin)^2."""
    if margin <= 0:
        return "its estimate sits on the edge: no count of processes is sure to decide it"
    import math

    return f"about {max(k + 1, math.ceil(k * (half / margin) ** 2))} processes (rough: 1/sqrt(processes))"


def _number_open(v: dict, k: int) -> str | None:
    """What is left open of a number's verdict (None when more processes cannot change it)."""
    if v["verdict"] in DECIDED_VERDICTS or v["verdict"] != verdicts.INCONCLUSIVE:
        return None
    summ, band = v.get("measured") or {}, v.get("band")
    lo, hi = summ.get("ci_low"), summ.get("ci_high")
    if v.get("efficiency"):
        lo, hi = v["efficiency"]["measured"]["ci_low"], v["efficiency"]["measured"]["ci_high"]
    if lo is None or hi is None or not band:
        return f"{v['number_id']}: {v['reason']}"
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    margin = min(abs(mid - band[0]), abs(mid - band[1]))
    return f"{v['number_id']} overlaps its band's edge; would need {_processes_needed(k, half, margin)}"


def _pair_open(claim_id: str, p: dict, k: int) -> str | None:
    if p["status"] != claims_mod.INCONCLUSIVE or not p.get("speedup"):
        return None
    lo, hi = p["speedup"]
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    return (f"{claim_id} ({p['better']} vs {p['worse']}): speed-up [{lo:.3g}, {hi:.3g}] is not separated; "
            f"would need {_processes_needed(k, half, abs(mid - 1))}")


def sequential_status(run: Run, cell_ids: list[str]) -> dict[str, list[str]]:
    """{cell id: what is still open} for the sequentially designed cells `cell_ids` of a run by role:
    the verdicts and claim pairs each feeds (run.json design.decidability) recomputed on the run's
    results as merged so far at the design's per-look confidence (stats.cell_confidence). An empty list:
    everything it feeds is decided, or cannot be changed by more processes (a stand-in, no claim); the
    run loop then stops adding processes to it."""
    design = run.design
    dec = design.decidability if design is not None and design.decidability is not None else {}
    sources = suites.load_sources()
    published = {}
    for n in dec.get("numbers") or []:
        if n["can"] == DECIDES and n["cell"] in cell_ids:
            src = n["number_id"].split("-")[0]
            if src not in published:
                published[src] = {x["id"]: x for x in suites.load_published(src)}
    out: dict[str, list[str]] = {cid: [] for cid in cell_ids}
    for n in dec.get("numbers") or []:
        if n["can"] != DECIDES or n["cell"] not in out:
            continue
        number = published[n["number_id"].split("-")[0]][n["number_id"]]
        k = processes(run, n["cell"])
        v = verdicts.verdict(number, run.result(n["cell"]), run, sources.get(number["provenance"]["source"]),
                             run.entry(n["cell"]))
        why = _number_open(v, k)
        if why:
            out[n["cell"]].append(why)
    claim_ids = {c["claim_id"] for c in dec.get("claims") or [] if c["can"] == DECIDES}
    wanted = [c for c in claims_mod.load_claims()["claims"] if c["id"] in claim_ids]
    if wanted:
        obs = claims_mod.observations_from_cells(run)
        checked = claims_mod.check_claims(obs, claims={**claims_mod.load_claims(), "claims": wanted},
                                          machine=run.machine)
        for c in checked:
            for p in c["pairs"]:
                sides = [s for s in (p["better_cell"], p["worse_cell"]) if s in out]
                if not sides:
                    continue
                k = min(processes(run, s) for s in sides)
                why = _pair_open(c["id"], p, k)
                for s in sides:
                    if why:
                        out[s].append(why)
    return out


def processes(run: Run, cell_id: str) -> int:
    """The processes a cell's design gives it (1 where the design does not list it)."""
    own = run.design.cell(cell_id) if run.design is not None else None
    return own.processes if own is not None else 1
