"""Check the published sources' relative claims (data/claims.yaml) against observations.

An observation is one (cell, metric, device) with a summary (reprokit.analysis.stats). They come
from a run's cell results (`observations_from_cells`) or from the published numbers themselves
(`observations_from_published`, exact points: checking a prose claim against its own source's
tables). `check_claims` gives each claim one status:

  HOLDS         every pair is decided in the claimed direction (non-overlapping intervals), and for
                ratio claims the speed-up interval lies inside the claimed range
  REVERSED      some pair is decided in the opposite direction
  DIFFERS       (ratio claims) the direction is not reversed but the speed-up interval lies entirely
                outside the claimed range
  INCONCLUSIVE  some pair's intervals overlap (or overlap the range edge)
  NOT_RUN       some cell of the claim has no observation (the reason names it)

Precedence when pairs disagree: REVERSED, DIFFERS, NOT_RUN, INCONCLUSIVE, HOLDS.
Intervals: the CI of the median; a single measured sample x becomes x * (1 +- point_margin);
published values are exact points. The speed-up interval of A over B is the outer bound
[A_lo / B_hi, A_hi / B_lo] for rates (times and memory: B over A), so its coverage is at least
that of the two CIs together.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from reprokit import validate
from reprokit.analysis import flops, stats, verdicts
from reprokit.errors import UserError

HOLDS, REVERSED, DIFFERS, INCONCLUSIVE, NOT_RUN = "HOLDS", "REVERSED", "DIFFERS", "INCONCLUSIVE", "NOT_RUN"
PRECEDENCE = (REVERSED, DIFFERS, NOT_RUN, INCONCLUSIVE, HOLDS)


@cache
def load_claims() -> dict:
    """The whole claims.yaml document (validated)."""
    path = resources.files("reprokit.data").joinpath("claims.yaml")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise UserError(f"reprokit/data/claims.yaml is not valid YAML ({e}); fix the file") from e
    validate.check("claims", doc, "reprokit/data/claims.yaml")
    return doc


# -- observations ----------------------------------------------------------------------------------
def observations_from_cells(cells: list[dict], run: dict | None = None) -> list[dict]:
    """One observation per metric of every finished ('ok') cell result of a run."""
    out = []
    for c in cells:
        if c.get("status") != "ok":
            continue
        dev = flops.measured_device(c, run)
        for name, m in (c.get("metrics") or {}).items():
            if not m.get("samples"):
                continue
            out.append(
                {
                    "cell_id": c["cell_id"],
                    "metric": name,
                    "unit": m["unit"],
                    "device": dev["kind"],
                    "hw": dev["entry"],
                    "label": dev["label"],
                    "exact": False,
                    "summary": stats.summarize_metric(m),
                    "origin": "measured",
                }
            )
    return out


def observations_from_published(numbers: list[dict]) -> list[dict]:
    """The published numbers as exact observations (transform.scale applied)."""
    out = []
    for n in numbers:
        value, unit, _ = verdicts.published_value(n)
        dev = verdicts.publication_device(n)
        summary = stats.summarize([value])
        out.append(
            {
                "cell_id": n["cell"],
                "metric": n["metric"],
                "unit": unit,
                "device": dev["kind"],
                "hw": dev["entry"],
                "label": dev["label"],
                "exact": True,
                "summary": summary,
                "origin": f"published {n['id']}",
            }
        )
    return out


# -- sides -----------------------------------------------------------------------------------------
def _side(spec, claim: dict) -> dict:
    s = {"cell": spec} if isinstance(spec, str) else dict(spec)
    s.setdefault("metric", claim.get("metric"))
    if "device" not in s and "gpu" not in s and claim.get("device"):
        s["device"] = claim["device"]
    return s


def _side_label(s: dict) -> str:
    where = s.get("gpu") or s.get("device")
    return s.get("label") or (f"{s['cell']} [{where}]" if where else s["cell"])


def _find(s: dict, observations: list[dict]) -> tuple[dict | None, str | None]:
    cands = [o for o in observations if o["cell_id"] == s["cell"] and o["metric"] == s["metric"]]
    if s.get("device"):
        cands = [o for o in cands if o["device"] == s["device"]]
    if s.get("gpu"):
        hit = flops.find_gpu(s["gpu"])
        if hit is None:
            return None, f"GPU '{s['gpu']}' is not in peaks.yaml"
        cands = [o for o in cands if o["hw"] == hit["entry"]]
    if not cands:
        on = f" on {s.get('gpu') or s.get('device')}" if (s.get("gpu") or s.get("device")) else ""
        return None, f"no observation of {s['cell']} '{s['metric']}'{on}"
    return cands[0], None


def _interval(o: dict, point_margin: float) -> tuple[float, float]:
    summ = o["summary"]
    if o["exact"]:
        return summ["median"], summ["median"]
    if summ.get("ci_low") is None:
        x = summ["median"]
        return x * (1 - point_margin), x * (1 + point_margin)
    return summ["ci_low"], summ["ci_high"]


def _values(o: dict, unit: str, point_margin: float) -> tuple[float, float]:
    lo, hi = _interval(o, point_margin)
    return verdicts.convert(lo, o["unit"], unit), verdicts.convert(hi, o["unit"], unit)


def _describe(o: dict, lo: float, hi: float, unit: str) -> dict:
    return {
        "median": verdicts.convert(o["summary"]["median"], o["unit"], unit),
        "low": lo,
        "high": hi,
        "unit": unit,
        "n": o["summary"]["n"],
        "on": o["label"],
        "origin": o["origin"],
    }


# -- pairs -----------------------------------------------------------------------------------------
def _pair(
    claim: dict,
    better: dict,
    worse: dict,
    observations: list[dict],
    point_margin: float,
    claimed: tuple[float, float] | None,
) -> dict:
    res = {"better": _side_label(better), "worse": _side_label(worse)}
    ob, why_b = _find(better, observations)
    ow, why_w = _find(worse, observations)
    if ob is None or ow is None:
        res.update(status=NOT_RUN, reason="; ".join(w for w in (why_b, why_w) if w))
        return res
    unit = ob["unit"]
    direction = verdicts.better_direction(unit)
    try:
        b_lo, b_hi = _values(ob, unit, point_margin)
        w_lo, w_hi = _values(ow, unit, point_margin)
    except ValueError as e:
        res.update(status=INCONCLUSIVE, reason=f"the two sides cannot be compared: {e}")
        return res
    res.update(better_value=_describe(ob, b_lo, b_hi, unit), worse_value=_describe(ow, w_lo, w_hi, unit))
    if direction is None:
        res.update(status=INCONCLUSIVE, reason=f"unit '{unit}' has no known better direction")
        return res
    if min(b_lo, w_lo) <= 0:
        res.update(status=INCONCLUSIVE, reason="a non-positive value cannot be compared")
        return res
    # speed-up of `better` over `worse`: >1 means the claim's direction
    if direction == "higher":
        s_lo, s_hi = b_lo / w_hi, b_hi / w_lo
    else:
        s_lo, s_hi = w_lo / b_hi, w_hi / b_lo
    res["speedup"] = [s_lo, s_hi]
    txt = f"speed-up of {res['better']} over {res['worse']} in [{s_lo:.3g}, {s_hi:.3g}]"
    if claimed is None:
        if s_lo > 1:
            res.update(status=HOLDS, reason=txt + " (> 1: intervals do not overlap)")
        elif s_hi < 1:
            res.update(status=REVERSED, reason=txt + " (< 1: the opposite order)")
        else:
            res.update(status=INCONCLUSIVE, reason=txt + " (contains 1: intervals overlap)")
        return res
    r_lo, r_hi = claimed
    rng = f"claimed [{r_lo:.3g}, {r_hi:.3g}]"
    if s_lo >= r_lo and s_hi <= r_hi:
        res.update(status=HOLDS, reason=f"{txt}, inside the {rng}")
    elif r_lo >= 1 and s_hi < 1:
        res.update(status=REVERSED, reason=f"{txt}: the opposite direction ({rng})")
    elif s_hi < r_lo or s_lo > r_hi:
        res.update(status=DIFFERS, reason=f"{txt}, entirely outside the {rng}")
    else:
        res.update(status=INCONCLUSIVE, reason=f"{txt} overlaps an edge of the {rng}")
    return res


def _pairs_of(claim: dict) -> list[tuple[dict, dict]]:
    kind = claim["kind"]
    if kind == "order":
        sides = [_side(s, claim) for s in claim["order"]]
        return list(zip(sides, sides[1:]))
    if kind == "fastest":
        target = _side(claim["target"], claim)
        return [(target, _side(o, claim)) for o in claim["others"]]
    if "pairs" in claim:
        return [(_side(p["better"], claim), _side(p["worse"], claim)) for p in claim["pairs"]]
    return [(_side(claim["better"], claim), _side(claim["worse"], claim))]


def _claimed_range(claim: dict, default_tol: float) -> tuple[float, float] | None:
    if claim["kind"] != "ratio":
        return None
    if "range" in claim:
        lo, hi = claim["range"]
        return float(lo), float(hi)
    tol = float(claim.get("tolerance", default_tol))
    return claim["ratio"] * (1 - tol), claim["ratio"] * (1 + tol)


def check_claim(
    claim: dict, observations: list[dict], default_tolerance: float = 0.10, point_margin: float = 0.10
) -> dict:
    """Status of one claim against the observations (see the module docstring).

    Returns {"id", "source", "kind", "origin", "text", "reference", "hardware", "interpretation",
    "defects", "metric", "claimed_range", "status", "reason", "pairs": [{"better", "worse",
    "status", "reason", "speedup", "better_value", "worse_value"}], "checked_on"}.
    """
    claimed = _claimed_range(claim, default_tolerance)
    pairs = [_pair(claim, b, w, observations, point_margin, claimed) for b, w in _pairs_of(claim)]
    statuses = [p["status"] for p in pairs]
    status = next(s for s in PRECEDENCE if s in statuses)
    counts = {s: statuses.count(s) for s in PRECEDENCE if s in statuses}
    if len(pairs) == 1:
        reason = pairs[0]["reason"]
    else:
        first = next(p for p in pairs if p["status"] == status)
        summary = ", ".join(f"{n} {s.lower().replace('_', ' ')}" for s, n in counts.items())
        reason = f"{len(pairs)} comparisons: {summary}; e.g. {first['reason']}"
    checked_on = sorted({v["on"] for p in pairs for v in (p.get("better_value"), p.get("worse_value")) if v})
    return {
        "id": claim["id"],
        "source": claim["source"],
        "kind": claim["kind"],
        "origin": claim["origin"],
        "text": claim["text"],
        "reference": claim["reference"],
        "hardware": claim.get("hardware"),
        "interpretation": claim.get("interpretation"),
        "defects": claim.get("defects", []),
        "metric": claim.get("metric"),
        "claimed_range": list(claimed) if claimed else None,
        "status": status,
        "reason": reason,
        "pairs": pairs,
        "checked_on": checked_on,
    }


def check_claims(
    observations: list[dict], sources: list[str] | None = None, claims: dict | None = None
) -> list[dict]:
    """check_claim for every claim (of the given sources only, when given)."""
    doc = claims or load_claims()
    tol, margin = doc.get("default_tolerance", 0.10), doc.get("point_margin", 0.10)
    return [
        check_claim(c, observations, tol, margin)
        for c in doc["claims"]
        if sources is None or c["source"] in sources
    ]
