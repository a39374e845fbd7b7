"""The report's sections over the published numbers: each source with its tables (the numbers of each
table whose cell is in the run, the defects that touch them and the cells that correct them), the
counts per verdict category and claim status, and the roofline threshold with why nothing (or what)
is suspicious. Built from the report rows (reprokit/report/report_rows.py)."""

from __future__ import annotations

from reprokit.analysis import claims, flops, verdicts
from reprokit.catalog import suites
from reprokit.report import overview
from reprokit.report.filters import slug

CATEGORIES = overview.CATEGORIES
CATEGORY_MEANINGS = {
    verdicts.IMPLAUSIBLE: verdicts.MEANINGS[verdicts.IMPLAUSIBLE]
    + " (roofline bound below); no other verdict",
    verdicts.REPRODUCED: verdicts.MEANINGS[verdicts.REPRODUCED],
    overview.DEVIATES_CATEGORY: "same device model: the measured interval lies entirely outside "
    "published ± tolerance (faster/slower for speeds, higher/lower otherwise)",
    verdicts.INCONCLUSIVE: "same device model or class: the measured interval overlaps an edge of the "
    "band, or the metric has too few samples for an interval (one compile time per process)",
    overview.EFFICIENCY_CATEGORY: "same device class, other model: achieved FLOP/s as a fraction of "
    "each device's theoretical fp32 peak, compared within ± the policy tolerance; 'higher' = this run "
    "used a larger fraction of its device than the publication did of its device",
    **{v: verdicts.MEANINGS[v] for v in (verdicts.NOT_TESTABLE_HERE, verdicts.NOT_TESTABLE_STANDIN,
                                         verdicts.NOT_COMPARABLE, verdicts.NOT_RUN)},
}
CLAIM_ORDER = claims.PRECEDENCE


def _defects_of(source: dict, ids: list[str], corrected_by: dict[str, list[str]]
                ) -> list[dict]:
    """The defects with their summary, kind and how the kit deals with them: the suite's cells that
    correct them (`corrected_by`) or the defect's own `correction` text."""
    by_id = {d["id"]: d for d in source.get("defects", [])}
    return [{"id": i, "summary": by_id.get(i, {}).get("summary", "(no summary in sources.yaml)"),
             "reference": by_id.get(i, {}).get("reference"), "kind": by_id.get(i, {}).get("kind"),
             "correction": by_id.get(i, {}).get("correction"),
             "corrected_by": list(corrected_by.get(i, []))} for i in ids]


def _corrected_by(labelled: list[suites.Cell]) -> dict[str, list[str]]:
    """{defect id: ids of the suite's cells labelled as correcting it (or reading it otherwise)}."""
    out: dict[str, list[str]] = {}
    for c in labelled:
        for d in c.label["defects"]:
            out.setdefault(d, []).append(c.id)
    return out


def source_section(sid: str, source: dict, rows: list[dict],
                    labelled: list[suites.Cell] | None = None) -> dict:
    """A source with its tables: the numbers (ids) of each table whose cell is part of the run; each
    table's defects name the suite's cells that correct them for this table's cells."""
    tables: dict[str, list[dict]] = {}
    for r in rows:
        tables.setdefault(r["table"], []).append(r)
    rendered, uncovered = [], []
    for title, trs in tables.items():
        in_run = [r for r in trs if r["in_run"]]
        omitted = [r["id"] for r in trs if not r["in_run"]]
        if not in_run:
            uncovered.append({"title": title, "numbers": len(trs)})
            continue
        anchor = f"s{slug(sid, 10)}-t{len(rendered) + 1}"
        defect_ids: list[str] = []
        for r in in_run:
            defect_ids += [d for d in r["defects"] if d not in defect_ids]
        reasons = [r["reason"] for r in in_run]
        # the most frequent reason; of equally frequent ones the first in row order (a set's order
        # follows string hashing, which changes per process: the report must not)
        common = max(reasons, key=reasons.count) if reasons else None
        if common is not None and reasons.count(common) < 2:
            common = None
        for r in in_run:
            r["reason_shown"] = None if r["reason"] == common else r["reason"]
        rendered.append({
            "anchor": anchor, "title": title, "numbers": [r["id"] for r in in_run],
            "common_reason": common,
            "defects": _defects_of(source, defect_ids, _corrected_by(
                [c for c in labelled or [] if c.label["as_published_cell"] in {r["cell"] for r in in_run}])),
            "omitted": omitted,
            "plot": f"plots/{anchor}-{slug(title)}.svg",
            "efficiency": any(r["comparison"] == "efficiency" for r in in_run),
            "cpu_vs_gpu": any(r["published_on_gpu"] and r["device"] == "cpu" for r in in_run),
            "standins": sorted({part for r in in_run if r["standin"] for part in r["standin"].split("; ")}),
        })
    envs: dict[tuple, dict] = {}
    keys = ("gpu", "cuda", "cudnn", "framework", "framework_version")
    for r in rows:
        e = r["analysis"]["published"]["environment"]
        key = tuple(e.get(k) for k in keys)
        envs.setdefault(key, {**dict(zip(keys, key)), "numbers": 0})["numbers"] += 1
    return {
        "id": sid, "title": source.get("title"), "repository": source.get("repository"),
        "commit": source.get("commit"), "reference": source.get("reference"),
        "tolerance": source_tolerance(source, rows),
        "environment": source.get("environment", {}),
        "publication_environments": list(envs.values()),
        "published_numbers": len(rows), "tables": rendered, "tables_not_covered": uncovered,
    }


def source_tolerance(source: dict, rows: list[dict]) -> dict:
    """How the source's same-model tolerance is made, for its section's first line: {"flat": the
    source's flat tolerance or None, "text": in words}. Derived, it is per number (each figure's own
    rounding): the words name the terms its numbers' tolerances share (reprokit/analysis/tolerance.py)."""
    if source.get("tolerance") is not None:
        return {"flat": float(source["tolerance"]),
                "text": f"tolerance ± {100 * float(source['tolerance']):.3g} % (flat, unsourced)"}
    seen: dict[tuple, dict] = {}
    for r in rows:
        for term in r["analysis"].get("tolerance_terms") or []:
            if term["term"] != "rounding":
                seen.setdefault((term["term"], term.get("kind"), term["value"], term["verified"]), term)

    def words(t: dict) -> str:
        kind = f" {t['kind'].upper()}" if t.get("kind") else ""
        what = f"between units of one{kind} model" if t["term"] == "between_unit" else "stated by the source"
        return f"{what} {100 * t['value']:.3g} %{'' if t['verified'] else ' (unverified)'}"
    parts = ["each figure's rounding"] + [words(t) for t in sorted(seen.values(), key=lambda t: (
        t["term"], str(t.get("kind"))), reverse=True)]
    return {"flat": None, "text": "tolerance per number: " + " + ".join(parts)}


def summary(rows: list[dict], claim_results: list[dict]) -> dict:
    """Counts of the published numbers per verdict category and of the claims per status."""
    cats: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    by_verdict: dict[str, int] = {}
    for r in rows:
        cats[overview.category(r)].append(r["id"])
        by_verdict[r["verdict"]] = by_verdict.get(r["verdict"], 0) + 1
    not_run = [r for r in rows if r["verdict"] == verdicts.NOT_RUN]
    claim_counts = {s: 0 for s in claims.PRECEDENCE}
    pair_counts = {s: 0 for s in claims.PRECEDENCE}
    for c in claim_results:
        claim_counts[c["status"]] += 1
        for pair in c.get("pairs") or []:
            pair_counts[pair["status"]] += 1
    return {
        "published_numbers": len(rows),
        "counts": {c: len(ids) for c, ids in cats.items()},
        "numbers": cats,
        "meanings": CATEGORY_MEANINGS,
        "by_verdict": dict(sorted(by_verdict.items())),
        "efficiency": {v: by_verdict.get(v, 0) for v in overview.EFFICIENCY}
        | {verdicts.INCONCLUSIVE: sum(1 for r in rows if overview.category(r) == overview.EFFICIENCY_CATEGORY
                               and r["verdict"] == verdicts.INCONCLUSIVE)},
        "deviates": {v: by_verdict.get(v, 0) for v in overview.SAME_MODEL if v != verdicts.REPRODUCED},
        "not_run_in_run": sum(1 for r in not_run if r["in_run"]),
        "not_run_not_in_run": sum(1 for r in not_run if not r["in_run"]),
        "implausible": [r["id"] for r in rows if r["implausible"]],
        "suspicious": [r["id"] for r in rows if r.get("tier") == verdicts.SUSPICIOUS],
        "tiers": {t: sum(1 for r in rows if r.get("tier") == t)
                  for t in ("PLAUSIBLE", verdicts.SUSPICIOUS, verdicts.IMPLAUSIBLE)}
        | {"no FLOP model": sum(1 for r in rows if r.get("tier") is None)},
        "claims": claim_counts,
        "claim_meanings": claims.MEANINGS,
        "claim_pairs": pair_counts,
        "claims_total": len(claim_results),
    }


def roofline_summary(rows: list[dict]) -> dict:
    """The SUSPICIOUS threshold with its reason, and, when no number is suspicious, why none is."""
    policy = flops.load_models()["roofline"]
    frac = float(policy["suspicious_fraction"])
    below = [r for r in rows if r.get("tier") == "PLAUSIBLE"]
    top = max(below, key=lambda r: r["analysis"]["roofline"]["fraction_of_bound"], default=None)
    if top is None:
        none_txt = "no published number of these sources has a FLOP model and a device peak to bound it"
    else:
        f = top["analysis"]["roofline"]["fraction_of_bound"]
        none_txt = (f"every bounded number below the impossible ones stays under {frac:.0%} of its bound; "
                    f"the highest is {top['id']} at {f:.1%} of {top['bound']} on {top['published_device']}")
    return {"suspicious_fraction": frac, "why": policy["why"], "none_suspicious": none_txt}
