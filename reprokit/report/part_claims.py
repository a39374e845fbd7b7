"""The report's "Claims" part, as inline pieces: what a claim is and its statuses, one row per claim,
the claims that claim nothing, and the speed-ups measured here beside the published ones
(reprokit/report/inline.py)."""

from __future__ import annotations

from reprokit.report.inline import (
    BR,
    NL_HTML,
    NL_MD,
    code,
    jn,
    joined,
    md_only,
    mono,
    ref,
    span,
    t,
    when,
    wrap,
)


def claims(r: dict) -> dict:
    """The part: `intro` [] without claims, else [its sentence, the statuses, the rows]; the claims
    decided and those not checked (the HTML report's two tables), `without` and `ratios` (lists of zero
    or one) and `none`, the sentence of a suite without claims."""
    rows = [_claim(c) for c in r["claims"] if c["status"] != "NO_CLAIM"]  # those claim nothing
    intro = []
    if r["claims"]:
        meanings = r["summary"]["claim_meanings"]
        intro = [
            {
                "text": t(
                    "Relative findings of the sources (orderings in their tables, statements in their "
                    "prose), checked on this\nrun's cells. A pair is decided only when both intervals "
                    "are separated and the speed-up is at least the\nminimum effect size; a pair whose "
                    "published gap is within the source's tolerance claims nothing and is{}left "
                    "out.{}",
                    NL_MD,
                    md_only(t(" Statuses:")),
                ),
                "statuses": t("{}.", joined([t("{} = {}", s, m) for s, m in meanings.items()], "; ")),
                "meanings": [t("{}: {}", span("v c-" + str(s), s), m) for s, m in meanings.items()],
                "rows": rows,
            }
        ]
    unchecked = [x for x in rows if x["status"] == "NOT_RUN"]
    return {
        "intro": intro,
        "decided": [x for x in rows if x["status"] != "NOT_RUN"],
        "unchecked": unchecked,
        "unchecked_title": t(
            "{} claims not checked: a cell they need is not measured in this run", len(unchecked)
        ),
        "without": [
            t(
                "Claims that claim nothing (the source's own gap is within its tolerance): {}.",
                jn(r["claims_without_claim"]),
            )
        ]
        if r["claims_without_claim"]
        else [],
        "ratios": _ratios(r),
        "none": t("The suite's sources have no claims in {}.", mono("reprokit/data/claims.yaml")),
    }


def _claim(c: dict) -> dict:
    """One claim: `md` the Markdown row's cells, the rest the HTML row's."""
    pairs = joined([t("{} {}", n, s.lower().replace("_", " ")) for s, n in c["counts"].items()])
    hardware = when(c["hardware"], t("; measured by the source on {}", c["hardware"]))
    return {
        "id": c["id"],
        "status": c["status"],
        "md": [c["id"], c["text"], t("{}{}", c["reference"], hardware), c["status"], pairs, c["reason"]],
        "claim": t("{}{}{}", c["id"], BR, span("muted", t("{}, {}", c["kind"], c["origin"]))),
        "text": t(
            "{}{}{}",
            c["text"],
            BR,
            span(
                "muted",
                c["reference"],
                hardware,
                when(c["checked_on"], t("; checked here on {}", jn(c["checked_on"] or []))),
            ),
        ),
        "status_cell": span("v c-" + str(c["status"]), c["status"]),
        "pairs": pairs,
        "reason": [c["reason"], *when(c["interpretation"], BR, span("muted", c["interpretation"]))],
        "comparisons": [
            t("{} {}", span("v c-" + str(p["status"]), p["status"]), p["reason"]) for p in c["pairs"]
        ]
        if len(c["pairs"]) > 1
        else [],
        "comparisons_title": t("{} comparisons", len(c["pairs"])),
    }


def _ratios(r: dict) -> list[dict]:
    """The speed-ups of the compared pairs: [] or [the sentence and the rows' cells]."""
    if not r["claim_ratios"]:
        return []
    intro = t(
        "Each compared pair measured here: its speed-up (A over B, above 1 in the claimed direction) with "
        "its interval,\nthe source's own ratio and the hardware it was published on, the range a ratio "
        "claim allows, the pair's{}status,{}and what bounds each side here (its roofline class: the share "
        "of its device's compute and memory{}bounds it{}reached, for the lower bound of its work). "
        "Whether a ratio is expected to carry to another device{}follows from{}the classes ({} {}, the "
        "kit's rule [U]).",
        NL_MD,
        NL_HTML,
        NL_MD,
        NL_HTML,
        NL_MD,
        NL_HTML,
        mono("reprokit/data/verdict_policy.yaml"),
        code("roofline_class"),
    )
    rows = [
        [
            ref(["#claim-", x["claim"]], x["claim"]),
            t("{} over {}", x["better"], x["worse"]),
            [x["here"], wrap(" (", "<br>"), span("muted", x["interval"]), md_only(")")],
            [x["published"], wrap(" (", "<br>"), span("muted", x["published_on"]), md_only(")")],
            x["claimed"],
            span("v c-" + str(x["status"]), x["status"]),
            jn(x["classes"], "; "),
            [x["carries"], wrap(": ", "<br>"), span("muted", x["carries_why"])],
        ]
        for x in r["claim_ratios"]
    ]
    return [{"intro": intro, "rows": rows}]
