"""The report's first screen: one line per source that answers "does it hold here?".

Pure functions over the report rows (reprokit.compare_published.row, one per published number) and
the checked claims (reprokit.analysis.claims) of a source. Each line says what was tested on this
run's hardware and how it came out, what cannot be tested here and why, and what is physically
impossible (with the roofline bound), in that order.
"""

from __future__ import annotations

from collections import Counter

from reprokit.analysis import claims, verdicts

# Verdicts that compare a measurement with a published number (everything else is not a test).
SAME_MODEL = (verdicts.REPRODUCED, verdicts.DEVIATES_FASTER, verdicts.DEVIATES_SLOWER,
              verdicts.DEVIATES_HIGHER, verdicts.DEVIATES_LOWER)
EFFICIENCY = (verdicts.EFFICIENCY_SIMILAR, verdicts.EFFICIENCY_HIGHER, verdicts.EFFICIENCY_LOWER)
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


def category(row: dict) -> str:
    """The summary category of a report row (every number is in exactly one)."""
    v = row["verdict"]
    if v.startswith("DEVIATES_"):
        return "DEVIATES"
    if v in EFFICIENCY or (v == verdicts.INCONCLUSIVE and row["comparison"] == "efficiency"):
        return "EFFICIENCY"
    return v


def tested(row: dict) -> bool:
    return row["verdict"] in SAME_MODEL + EFFICIENCY or row["verdict"] == verdicts.INCONCLUSIVE


def _count_words(counter: Counter) -> str:
    return ", ".join(f"{n} {WORDS.get(v, v.lower())}" for v, n in counter.most_common())


def _pct_range(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{100 * lo:,.0f} %" if round(100 * lo) == round(100 * hi) else f"{100 * lo:,.0f}-{100 * hi:,.0f} %"


def _claims_text(results: list[dict]) -> str | None:
    if not results:
        return None
    counts = Counter(c["status"] for c in results)
    order = [s for s in claims.PRECEDENCE if counts.get(s)]
    return f"claims ({len(results)}): " + ", ".join(f"{counts[s]} {s.replace('_', ' ').lower()}" for s in order)


def source_line(sid: str, title: str | None, rows: list[dict], claim_results: list[dict],
                run_device: str) -> dict:
    """{"source", "title", "answer" (one sentence), "tested", "untestable", "impossible", "claims",
    "counts"} for one source; every part is plain text (the templates escape it)."""
    in_run = [r for r in rows if r["in_run"] or r["verdict"] in (verdicts.IMPLAUSIBLE, verdicts.NOT_TESTABLE_HERE)]
    t = [r for r in in_run if tested(r)]
    impossible = [r for r in rows if r["verdict"] == verdicts.IMPLAUSIBLE]
    here = [r for r in in_run if r["verdict"] == verdicts.NOT_TESTABLE_HERE]
    standin = [r for r in in_run if r["verdict"] == verdicts.NOT_TESTABLE_STANDIN]
    not_comp = [r for r in in_run if r["verdict"] == verdicts.NOT_COMPARABLE]
    not_run = [r for r in in_run if r["verdict"] == verdicts.NOT_RUN]
    suspicious = [r for r in rows if r.get("tier") == verdicts.SUSPICIOUS]

    if t:
        tested_txt = (f"{len(t)} of {len(rows)} numbers tested on this {run_device}: "
                      f"{_count_words(Counter(r['verdict'] for r in t))}")
    else:
        tested_txt = f"none of its {len(rows)} numbers can be tested on this {run_device}"
    untestable = []
    if here:
        devs = sorted({r.get("published_device") or r["published_gpu"] for r in here})
        shown = "; ".join(devs[:3]) + (f" and {len(devs) - 3} more" if len(devs) > 3 else "")
        untestable.append(f"{len(here)} published on another device class ({shown})")
    if standin:
        what = sorted({r["standin"] or "a stand-in" for r in standin})
        untestable.append(f"{len(standin)} measured through a stand-in ({'; '.join(what)})")
    if not_comp:
        untestable.append(f"{len(not_comp)} with no FLOP model or peak to compare by")
    if not_run:
        untestable.append(f"{len(not_run)} not run")
    if impossible:
        fr = [r["analysis"]["roofline"]["fraction_of_bound"] for r in impossible]
        ex = impossible[0]
        impossible_txt = (f"{len(impossible)} physically impossible ({_pct_range(fr)} of the fastest "
                          f"possible rate; e.g. {ex['id']}: {ex['bound']} on {ex['published_device']})")
    else:
        impossible_txt = "none physically impossible"
        if suspicious:
            impossible_txt += f"; {len(suspicious)} suspicious (near the physical bound)"
    parts = [tested_txt]
    if untestable:
        parts.append("not testable here: " + ", ".join(untestable))
    parts.append(impossible_txt)
    claims_txt = _claims_text(claim_results)
    if claims_txt:
        parts.append(claims_txt)
    return {
        "source": sid, "title": title, "answer": "; ".join(parts) + ".",
        "tested": tested_txt, "untestable": untestable, "impossible": impossible_txt, "claims": claims_txt,
        "counts": dict(Counter(category(r) for r in rows)),
    }
