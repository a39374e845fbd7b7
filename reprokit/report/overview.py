"""The report's first screen: one line per source that answers "does it hold here?".

Pure functions over the report rows (reprokit.report.report_rows.row, one per published number) and
the checked claims (reprokit.analysis.claims) of a source. Each line says what was tested on this
run's hardware and how it came out, what cannot be tested here and why, and what is physically
impossible (with the roofline bound), in that order.
"""

from __future__ import annotations

from collections import Counter

from reprokit.analysis import claims, defects, table_checks, verdicts

# Verdicts that compare a measurement with a published number (everything else is not a test).
SAME_MODEL = (verdicts.REPRODUCED, verdicts.DEVIATES_FASTER, verdicts.DEVIATES_SLOWER,
              verdicts.DEVIATES_HIGHER, verdicts.DEVIATES_LOWER)
EFFICIENCY = (verdicts.EFFICIENCY_SIMILAR, verdicts.EFFICIENCY_HIGHER, verdicts.EFFICIENCY_LOWER)
DEVIATES = tuple(v for v in SAME_MODEL if v != verdicts.REPRODUCED)
# Summary categories of the published numbers (every number is in exactly one: `category`), in report
# order: the verdicts of reprokit/analysis/verdicts.py, with the deviations and the efficiencies grouped.
DEVIATES_CATEGORY, EFFICIENCY_CATEGORY = "DEVIATES", "EFFICIENCY"
CATEGORIES = (verdicts.IMPLAUSIBLE, verdicts.REPRODUCED, DEVIATES_CATEGORY, verdicts.INCONCLUSIVE,
              EFFICIENCY_CATEGORY, verdicts.NOT_TESTABLE_HERE, verdicts.NOT_TESTABLE_STANDIN,
              verdicts.NOT_COMPARABLE, verdicts.NOT_RUN)
WORDS = {
    verdicts.REPRODUCED: "reproduced",
    verdicts.DEVIATES_FASTER: "faster than published",
    verdicts.DEVIATES_SLOWER: "slower than published",
    verdicts.DEVIATES_HIGHER: "higher than published",
    verdicts.DEVIATES_LOWER: "lower than published",
    verdicts.EFFICIENCY_SIMILAR: "the same efficiency",
    verdicts.EFFICIENCY_HIGHER: "a higher efficiency",
    verdicts.EFFICIENCY_LOWER: "a lower efficiency",
    verdicts.INCONCLUSIVE: "inconclusive",
}


def _not_comparable_cause(row: dict) -> str:
    """Why a NOT_COMPARABLE number is context, in words: the cause its verdict recorded with its reason
    (reprokit/analysis/verdicts.py), so every number is counted under the rule that kept it."""
    return row["analysis"]["cause"]


def category(row: dict) -> str:
    """The summary category of a report row (every number is in exactly one)."""
    v = row["verdict"]
    if v in DEVIATES:
        return DEVIATES_CATEGORY
    if v in EFFICIENCY or (v == verdicts.INCONCLUSIVE and row["comparison"] == "efficiency"):
        return EFFICIENCY_CATEGORY
    return v


def tested(row: dict) -> bool:
    return row["verdict"] in SAME_MODEL + EFFICIENCY or row["verdict"] == verdicts.INCONCLUSIVE


def claim_words(status: str) -> str:
    """A claim or pair status in words: 'NOT_TESTABLE_STANDIN' -> 'not testable (stand-in)'."""
    return CLAIM_WORDS.get(status, status.replace("_", " ").lower())


CLAIM_WORDS = {
    claims.NOT_TESTABLE_HERE: "not testable here",
    claims.NOT_TESTABLE_STANDIN: "not testable (stand-in)",
    claims.NOT_TESTABLE_SAMPLES: "not testable (too few samples)",
    claims.NO_CLAIM: "claim nothing (gap within tolerance)",
}


def _pct_range(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    if round(100 * lo) == round(100 * hi):
        return f"{100 * lo:,.0f} %"
    return f"{100 * lo:,.0f}-{100 * hi:,.0f} %"


def _claims_text(results: list[dict]) -> str | None:
    """'claims (12): 1 reversed, ...; their 36 pairs: 3 hold, ...' (pairs that claim nothing left out)."""
    if not results:
        return None
    counts = Counter(c["status"] for c in results)
    order = [s for s in claims.PRECEDENCE if counts.get(s)]
    text = f"claims ({len(results)}): " + ", ".join(f"{counts[s]} {claim_words(s)}" for s in order)
    pairs = Counter(p["status"] for c in results for p in c.get("pairs") or []
                    if p["status"] != claims.NO_CLAIM)
    if pairs and set(pairs) != set(counts):
        text += (f"; of their {sum(pairs.values())} pairs that claim something: "
                 + ", ".join(f"{pairs[s]} {claim_words(s)}" for s in claims.PRECEDENCE if pairs.get(s)))
    decided = [_decided_text(c) for c in results if c["status"] in claims.DECIDED]
    if decided:
        text += "; decided here: " + "; ".join(decided)
    return text


def _decided_text(c: dict) -> str:
    """'c003-x HOLDS (1.14x [1.07, 1.24] here, published 1.58x)': a decided claim with the ratio of its
    first pair of that status (the first screen names the claims decided here)."""
    p = next((p for p in c["pairs"] if p["status"] == c["status"] and "speedup" in p), None)
    if p is None:
        return f"{c['id']} {c['status']}"
    pub = (f", published {p['published_speedup']:.3g}x" if p.get("published_speedup") is not None else "")
    more = f", the first of {len(c['pairs'])} pairs" if len(c["pairs"]) > 1 else ""
    return f"{c['id']} {c['status']} ({claims.ratio_text(p)} here{pub}{more})"


def _inconclusive_cause(r: dict) -> str:
    reason = r.get("reason") or ""
    if "known only as a lower bound" in reason:
        return "because this CPU's peak is only a lower bound (its clock is unknown)"
    if "a verdict needs" in reason:
        return "with too few samples"
    return "whose interval overlaps an edge of the band"


def _device_of(r: dict) -> str:
    pub = r["analysis"]["hardware"]["published"]
    count = pub.get("count") or 1
    label = r.get("published_device") or r.get("published_gpu")
    if pub.get("kind") == "gpu":
        return f"{count} GPUs ({label})" if count > 1 else f"a GPU ({label})"
    return f"a CPU ({label})"


def _listing(items: list[str], limit: int = 3, sep: str = "; ") -> str:
    return sep.join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _explained(rows: list[dict]) -> str:
    """'; 6 EXPLAINED by d001-no-sync' / '; 2 UNEXPLAINED' / '; 3 d003-no-final-sync may explain (not
    decided in this run)': what the defect catalogue says of impossible or suspicious numbers
    (reprokit/analysis/defects.py), one label per number (EXPLAINED when any of its source's defects
    explains it); '' for numbers it was not asked about."""
    said: Counter = Counter()
    for r in rows:
        ex = r["analysis"].get("explanations") or []
        by = sorted({e["defect"] for e in ex if e["label"] == defects.EXPLAINED})
        if by:
            said[f"EXPLAINED by {', '.join(by)}"] += 1
        elif any(e["label"] == defects.UNEXPLAINED for e in ex):
            said[defects.UNEXPLAINED] += 1
        elif any(e["defect"] for e in ex):  # a defect that may explain it, not measured so here
            may = sorted({e["defect"] for e in ex if e["defect"]})
            said[f"{', '.join(may)} may explain (not decided in this run)"] += 1
        elif ex:  # data without a defect catalogue
            said["not looked up (the run's data has no defect catalogue)"] += 1
    return "".join(f"; {n} {label}" for label, n in said.most_common())


def source_line(sid: str, title: str | None, rows: list[dict], claim_results: list[dict],
                run_device: str, table: list[dict] | None = None) -> dict:
    """{"source", "title", "answer" (one sentence), "tested", "untestable", "impossible", "claims",
    "table", "counts"} for one source; every part is plain text (the templates escape it).
    `run_device` is the short name of this run's device class ("CPU", "GPU"); `table` what the
    source's published table contradicts in itself (reprokit/analysis/table_checks.py), decided
    without the run, as IMPLAUSIBLE is."""
    decided_without_run = (verdicts.IMPLAUSIBLE, verdicts.NOT_TESTABLE_HERE)
    in_run = [r for r in rows if r["in_run"] or r["verdict"] in decided_without_run]
    t = [r for r in in_run if tested(r)]
    impossible = [r for r in rows if r["verdict"] == verdicts.IMPLAUSIBLE]
    here = [r for r in in_run if r["verdict"] == verdicts.NOT_TESTABLE_HERE]
    standin = [r for r in in_run if r["verdict"] == verdicts.NOT_TESTABLE_STANDIN]
    not_comp = [r for r in in_run if r["verdict"] == verdicts.NOT_COMPARABLE]
    not_run = [r for r in in_run if r["verdict"] == verdicts.NOT_RUN]
    suspicious = [r for r in rows if r.get("tier") == verdicts.SUSPICIOUS]

    if t:
        words = []
        for v, n in Counter(r["verdict"] for r in t).most_common():
            if v != verdicts.INCONCLUSIVE:
                words.append(f"{n} {WORDS.get(v, v.lower())}")
                continue
            why = Counter(_inconclusive_cause(r) for r in t if r["verdict"] == v)
            words += [f"{k} inconclusive {cause}" for cause, k in why.most_common()]
        tested_txt = f"{len(t)} of {len(rows)} numbers tested on this {run_device}: {', '.join(words)}"
    else:
        tested_txt = f"none of its {len(rows)} numbers can be tested on this {run_device}"
    untestable = []
    if here:
        by_device = Counter(_device_of(r) for r in here)
        untestable.append(_listing([f"{n} published on {d}" for d, n in by_device.most_common()]))
    if standin:
        mech = sorted({s["short"] for r in standin for s in r["analysis"].get("standins") or []
                       if s["mechanism"]})
        untestable.append(f"{len(standin)} measured through a stand-in for their mechanism "
                          f"({'; '.join(mech) or 'unclassified'})")
    if not_comp:  # say why each is context, not one reason for all
        untestable.append(_listing([f"{n} {why}" for why, n in Counter(_not_comparable_cause(r)
                                                                      for r in not_comp).most_common()]))
    if not_run:
        untestable.append(f"{len(not_run)} whose cell did not produce the metric (failed or skipped)")
    if impossible:
        fr = [r["analysis"]["roofline"]["fraction_of_bound"] for r in impossible]
        ex = impossible[0]
        impossible_txt = (f"{len(impossible)} physically impossible ({_pct_range(fr)} of the fastest "
                          f"possible rate; e.g. {ex['id']}: published {ex['published']:,g} {ex['unit']}, "
                          f"{ex['bound']} on {ex['published_device']}{_explained(impossible)})")
    else:
        impossible_txt = "none physically impossible"
    if suspicious:
        fr = [r["analysis"]["roofline"]["fraction_of_bound"] for r in suspicious]
        ids = _listing([r["id"] for r in suspicious], 4, ", ")
        impossible_txt += (f"; {len(suspicious)} suspicious ({ids}: "
                           f"{_pct_range(fr)} of their bound{_explained(suspicious)})")
    parts = [tested_txt]
    if untestable:
        parts.append("not decided here: " + ", ".join(untestable))
    parts.append(impossible_txt)
    if table:
        parts.append(table_checks.summary(table))
    claims_txt = _claims_text(claim_results)
    if claims_txt:
        parts.append(claims_txt)
    return {
        "source": sid, "title": title, "answer": "; ".join(parts) + ".",
        "tested": tested_txt, "untestable": untestable, "impossible": impossible_txt, "claims": claims_txt,
        "table": table or [], "counts": dict(Counter(category(r) for r in rows)),
    }
