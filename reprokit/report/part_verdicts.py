"""The report's "Verdicts" part, as inline pieces: one row per verdict with its numbers, the notes of the
efficiency policy, the claims in a sentence, and the published numbers the roofline bound finds
impossible or suspicious with the bound's conventions (reprokit/report/inline.py)."""

from __future__ import annotations

from reprokit.report.filters import fmt_published
from reprokit.report.inline import NL_HTML, NL_MD, html_only, jn, joined, per_format, ref, span, strong, t

SPELLED_OUT = 12  # a row of more numbers says how many instead


def _short(verdict: str) -> str:
    return verdict.replace("DEVIATES_", "").replace("EFFICIENCY_", "").lower()


def intro(r: dict) -> list:
    return t(
        "{} published numbers of the suite's sources, one verdict each; the first check{}that applies "
        "decides.",
        r["summary"]["published_numbers"],
        NL_MD,
    )


def verdict_rows(r: dict, nums: dict) -> list[dict]:
    """One row per verdict: its id, its HTML class and its cells (verdict, meaning, count, which)."""
    sm = r["summary"]
    rows = []
    for c in sm["counts"]:
        style = (
            c
            if c not in ("DEVIATES", "EFFICIENCY")
            else "DEVIATES_SLOWER"
            if c == "DEVIATES"
            else "EFFICIENCY_SIMILAR"
        )
        rows.append(
            {
                "id": c,
                "cls": "v v-" + str(style),
                "cells": [c, sm["meanings"][c], sm["counts"][c], _which(c, sm["numbers"][c], nums)],
            }
        )
    return rows


def _which(c: str, ids: list, nums: dict) -> object:
    """The numbers of one verdict, linked in HTML; counted where a row would list too many (in HTML any
    row, in Markdown the NOT_TESTABLE_HERE and NOT_RUN rows)."""
    if c in ("DEVIATES", "EFFICIENCY"):
        return joined(
            [
                t(
                    "{} {}",
                    ref(["#", nums[i]["anchor"]], i),
                    span("v v-" + str(nums[i]["verdict"]), _short(nums[i]["verdict"])),
                )
                for i in ids
            ]
        )
    if len(ids) <= SPELLED_OUT:
        return per_format(jn(ids), joined([ref(["#", nums[i]["anchor"]], i) for i in ids]))
    many = t("{} numbers, listed in the source tables below", len(ids))
    return many if c in ("NOT_TESTABLE_HERE", "NOT_RUN") else per_format(jn(ids), many)


def policy(nums: dict) -> list[dict]:
    """The numbers the efficiency policy kept from a verdict or flagged: [] or [the sentence and notes]."""
    notes = [
        t("{}: {}", ref(["#", n["anchor"]], i), n["policy_note"]) for i, n in nums.items() if n["policy_note"]
    ]
    if not notes:
        return []
    return [
        {
            "intro": t(
                "Efficiency policy (reprokit/data/verdict_policy.yaml): an efficiency is a verdict "
                "only when the cell ran in the{}publication's precision (fp32) and the two devices' "
                "peaks are close enough; otherwise it is context. Numbers{}this policy kept from a "
                "verdict or flagged:",
                NL_MD,
                NL_MD,
            ),
            "notes": notes,
        }
    ]


def claims_summary(r: dict) -> list:
    """The claims of the sources in one sentence: how many, by status, and their pairs."""
    sm = r["summary"]
    if not sm["claims_total"]:
        return t("The suite's sources make no claim to check.")
    by_status = joined([span("v c-" + str(s), t("{} {}", n, s)) for s, n in sm["claims"].items() if n])
    pairs = joined([t("{} {}", n, s.lower().replace("_", " ")) for s, n in sm["claim_pairs"].items() if n])
    return t(
        "{} of the sources ({}), each with the status of its pairwise comparisons:\n{}.\nOf the {} "
        "pairs, {}.",
        ref("#claims", "Claims"),
        sm["claims_total"],
        by_status,
        sum(sm["claim_pairs"].values()),
        pairs,
    )


def suspicious_percent(r: dict) -> int:
    return int(round(r["roofline"]["suspicious_fraction"] * 100, 0))


def bounds(r: dict, nums: dict) -> dict:
    """The roofline part: its sentence, the impossible and suspicious numbers, the conventions and why
    SUSPICIOUS starts where it does."""
    sm, pct = r["summary"], suspicious_percent(r)
    why = per_format(
        t("why that fraction: after the conventions"), ref("#why-suspicious", "why that fraction")
    )
    intro = t(
        "Every published number with a FLOP model is checked against the fastest rate physically "
        "possible on its\nown device (roofline: the larger of the compute time at the device's fp32 "
        "peak and the memory time at its\nbandwidth). IMPLAUSIBLE: faster than that bound; SUSPICIOUS: "
        "above {} % of it ({}).\nTiers: {}.",
        pct,
        why,
        joined([t("{} {}", n, k) for k, n in sm["tiers"].items()]),
    )
    none = (
        []
        if sm["suspicious"]
        else [t("No published number is SUSPICIOUS: {}{}", r["roofline"]["none_suspicious"], html_only("."))]
    )
    return {
        "intro": intro,
        "implausible": [_flagged("IMPLAUSIBLE", i, nums[i]) for i in sm["implausible"]],
        "suspicious": [_flagged("SUSPICIOUS", i, nums[i]) for i in sm["suspicious"]],
        "none_suspicious": none,
        "conventions": r["conventions"],
        "conventions_title": t("Conventions of the bounds"),
        "why_title": t("Why SUSPICIOUS starts at {} % of the bound", pct),
        "why": t("{}.", r["roofline"]["why"]),
    }


def _flagged(tier: str, i: str, n: dict) -> dict:
    """A published number above its bound (IMPLAUSIBLE) or near it (SUSPICIOUS): the HTML id of its
    line, its tier, its id and the rest of the line."""
    unverified = tier == "IMPLAUSIBLE" and not n["analysis"]["roofline"]["verified"]
    return {
        "html_id": tier.lower() + "-" + str(n["anchor"]),
        "tier": span("v v-" + tier, tier),
        "number": ref(["#", n["anchor"]], strong(i)),
        "text": t(
            " ({} = {} {} on {}):{}{}{}",
            n["metric_as_published"],
            fmt_published(n["published"]),
            n["unit"],
            n["published_device"],
            NL_HTML,
            n["analysis"]["roofline"]["arithmetic"],
            [" ", span("muted", "(device peak unverified)")] if unverified else [],
        ),
    }
