"""The report's "Published vs measured" part, as inline pieces: what its columns mean, and per source
its tables (rows in reprokit/report/part_rows.py), their notes, plots and known defects
(reprokit/report/inline.py)."""

from __future__ import annotations

from reprokit.report import part_rows
from reprokit.report.inline import (
    NL_HTML,
    NL_MD,
    anchor,
    em,
    jn,
    joined,
    mono,
    per_format,
    ref,
    span,
    strong,
    t,
    when,
)


def intro(r: dict) -> list:
    """What the tables show, column by column: [] without sources, else [the paragraph]."""
    if not r["sources"]:
        return []
    first = t(
        "Measured = the figure computed as the source defined it ({}: its mean over the published\n"
        "iteration count, its per-epoch rate, its whole-epoch wall time, its cumulative rate) with an "
        "interval from{}the{}per-iteration samples, and the per-iteration median beside it; a run "
        "shorter than the source's counts{}gives a{}{}, labelled so; a result that records no such "
        "figure shows the median of the timed{}samples{}with its interval (method and coverage under "
        "{}). All in the published unit (and\nmultiple); n = timed samples (iterations for a figure); "
        "CV = standard deviation / mean of the per-iteration\nsamples, {} above 10 %.\nRatio = "
        "measured / published, shown only where a verdict compares them: for times and memory lower "
        "is{}better{}(above 1 = slower or more memory), for rates higher is better (below 1 = slower). ",
        per_format(t('"as published"'), em("as published")),
        NL_MD,
        NL_HTML,
        NL_MD,
        NL_HTML,
        per_format(t('"partial estimate"'), em("partial estimate")),
        NL_MD,
        NL_HTML,
        per_format(t('"Intervals"'), ref("#intervals", "Intervals")),
        span("noisy", "noisy"),
        NL_MD,
        NL_HTML,
    )
    # the Markdown tables have a column per fact, the HTML ones put the environment under each row
    md = t(
        "Stand-in = what\nthe cell ran instead of the published mechanism or release. Bound = the fastest "
        "rate physically possible\non the publication's device. After each table: the environment fields "
        "that differ for every deviating number.\nKind (ACM), beside each verdict: what kind of "
        "re-measurement it is in ACM's artifact-badge terms, a\n{} (the kit's own implementation of the "
        "workload, not the authors' code), on the original stack\nor a substitute, on the original "
        "hardware, another model of its class or another class.",
        em("replication"),
    )
    html = t(
        "Bound = the fastest rate\nphysically possible on the publication's device; stand-in = what the "
        "cell ran instead of the published\nmechanism or release. Under every deviating number: the "
        "environment fields that differ between the\npublication and this run. Under each verdict, what "
        "kind of re-measurement it is in ACM's artifact-badge\nterms: a {} (the kit's own "
        "implementation of the workload, not the authors' code), on the\noriginal stack or a "
        "substitute, on the original hardware, another model of its class or another class.",
        em("replication"),
    )
    return [first + [per_format(md, html)]]


def sources(r: dict) -> list[dict]:
    nums = {n["id"]: n for n in r["numbers"]}
    return [_source(s, nums) for s in r["sources"]]


def _source(s: dict, nums: dict) -> dict:
    covered = (
        [
            t(
                "Tables of source {} with no cell in this run:{}{}.",
                s["id"],
                NL_HTML,
                joined(
                    [t("{} ({} numbers)", x["title"], x["numbers"]) for x in s["tables_not_covered"]], "; "
                ),
            )
        ]
        if s["tables_not_covered"]
        else []
    )
    return {
        "id": s["id"],
        "title": t("Source {}: {}", s["id"], s["title"]),
        "intro": t(
            "Repository {} at commit {}{}({}); {} published numbers; {}.",
            mono(s["repository"]),
            mono(s["commit"]),
            NL_HTML,
            s["reference"],
            s["published_numbers"],
            s["tolerance"]["text"],
        ),
        "tables": [_table(s, tb, nums) for tb in s["tables"]],
        "not_covered": covered,
    }


def _table(s: dict, tb: dict, nums: dict) -> dict:
    """One table of a source: its title, notes above it, rows, notes under it, plot caption and defects."""
    rows = [nums[nid] for nid in tb["numbers"]]
    notes = [
        t("{}: {}", nid, nums[nid]["note"])
        for nid in tb["numbers"]
        if nums[nid]["note"] and nums[nid]["measured"] is not None
    ]
    deviating = [part_rows.env_line(nid, nums[nid]) for nid in tb["numbers"] if nums[nid]["deviates"]]
    return {
        "anchor": tb["anchor"],
        "plot": tb["plot"],
        "title": t("{}: {}", s["id"], tb["title"]),
        "common_reason": [
            per_format(
                t("Reason for every row without its own: {}", tb["common_reason"]),
                t("For every row without its own reason: {}", tb["common_reason"]),
            )
        ]
        if tb["common_reason"]
        else [],
        "standins": [t("Stand-ins in this table: {}.", jn(tb["standins"], "; "))] if tb["standins"] else [],
        "rows": [part_rows.number_row(row, tb["anchor"]) for row in rows],
        "omitted": [
            t(
                "{} more published numbers of this table belong to cells not in this run{}({}).",
                len(tb["omitted"]),
                NL_HTML,
                jn(tb["omitted"]),
            )
        ]
        if tb["omitted"]
        else [],
        "notes": [t("Notes: {}", joined(notes, "; "))] if notes else [],
        "deviating": [
            {
                "title": t(
                    "Environment of the deviating numbers, publication -> this run (fields that differ):"
                ),
                "lines": deviating,
            }
        ]
        if deviating
        else [],
        "caption": per_format(
            t("{} {}: published vs measured", s["id"], tb["title"]),
            t(
                "{} {}: published (grey) vs this run's median (blue) with its interval; log "
                "scale; verdict on the right.",
                s["id"],
                tb["title"],
            ),
        ),
        "defects": [
            {
                "title": t("Known defects of these published numbers:"),
                "lines": [_defect(tb["anchor"], d) for d in tb["defects"]],
            }
        ]
        if tb["defects"]
        else [],
    }


def _defect(table_anchor: str, d: dict) -> dict:
    """A known defect of the table's published numbers: the HTML id of its line and the line."""
    return {
        "html_id": str(table_anchor) + "-" + str(d["id"]),
        "text": [
            anchor([table_anchor, "-", d["id"]]),
            strong(d["id"]),
            *when(d["kind"], t(" ({})", d["kind"])),
            t(": {}", d["summary"]),
            *when(d["reference"], " ", span("muted", t("({})", d["reference"]))),
            *when(d["corrected_by"], t(" Measured without it by: {}.", mono(jn(d["corrected_by"] or [])))),
            *when(d["correction"], t(" The kit: {}", d["correction"])),
        ],
    }
