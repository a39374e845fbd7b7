"""report.json, the report's data: versions. An output: a report is rendered again from its run, never
upgraded in place, so its steps only let a reader of an old report.json (compare, a crate check) see
the current shape."""

from __future__ import annotations

from reprokit.errors import UserError
from reprokit.formats.chain import Format

HISTORY = {
    1: "2026-11-21: report.json of the first kits, not validated",
    2: "2026-11-22 (0562910): validated against report.schema.json (verdicts, intervals, claims); "
       "fields added since were optional",
    3: "2026-11-28: a NOT_COMPARABLE verdict's `cause`, and the plan's `partial` (cells the time limit "
       "left after some of their processes)",
    4: "2026-11-29: each first-screen line's `table`: what the source's published table contradicts in "
       "itself; a roofline bound's `algorithm` where its FLOP model names a cheaper one; a source's "
       "`tolerance` says how it is made ({flat, text}), each verdict its `tolerance_terms`",
    5: "2026-11-29: a re-run interval widened by a run term says `pi_within_df`, the degrees of freedom "
       "of its within-run part (this run's processes pooled with the cell's history)",
}


def to_2(doc: dict) -> dict:
    """Version 1 was never validated, so nothing says what it holds: it is refused, and rendered again
    from its run instead."""
    raise UserError("a report.json of format version 1 (the first kits' unvalidated report) cannot be "
                    "read; render the report again from its run: `reproduce.py report RUN`")


def to_3(doc: dict) -> dict:
    """Both additions are optional: a version 2 report simply does not say them."""
    return doc


def to_4(doc: dict) -> dict:
    """A version 3 report did not check its tables: its first-screen lines say nothing of them (no
    `table`), which is not the same as a table found consistent. No FLOP model named a cheaper
    algorithm then, so its bounds have no `algorithm`, as a direct count has none now. Its sources'
    tolerance was one flat number with no source: it becomes {flat, text} saying so; its verdicts
    have no `tolerance_terms` (their `tolerance` is that flat number)."""
    for s in doc.get("sources") or []:
        if isinstance(s.get("tolerance"), (int, float)):
            s["tolerance"] = {"flat": s["tolerance"],
                              "text": f"tolerance ± {100 * s['tolerance']:.3g} % (flat, unsourced)"}
    return doc


def to_5(doc: dict) -> dict:
    """An optional field: a version 4 report's widened intervals do not say their within-run degrees of
    freedom (they were this run's K - 1: no history was pooled then)."""
    return doc


FORMAT = Format("report", HISTORY, {2: to_2, 3: to_3, 4: to_4, 5: to_5}, stamped_from=1)
