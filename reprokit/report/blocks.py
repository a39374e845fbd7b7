"""The report's text, built once from the context for both templates: each sentence, count and table
row as inline pieces (reprokit/report/inline.py), grouped by the part of the report it belongs to.

`build(context)` calls the parts' builders (reprokit/report/part_*.py); report.py passes the result
to report.md.j2 and report.html.j2, which lay it out. An optional paragraph or table is a list of
zero or one, so that a template loops over it. The blocks are not part of report.json."""

from __future__ import annotations

from reprokit.report import (
    part_cells,
    part_claims,
    part_environments,
    part_head,
    part_intervals,
    part_machine,
    part_published,
    part_run,
    part_verdicts,
)


def build(r: dict) -> dict:
    nums = {n["id"]: n for n in r["numbers"]}
    return {
        "title": part_head.title(r),
        "no_source": part_head.NO_SOURCE,
        "incomplete": part_head.incomplete(r),
        "resumed": part_head.resumed(r),
        "rejudged": part_head.rejudged(r),
        "first_screen": part_head.first_screen(r),
        "plan": part_head.plan(r),
        "one_process": part_head.one_process(r),
        "run_rows": part_run.run_rows(r),
        "suite_note": part_head.suite_note(r),
        "cluster_note": part_head.cluster_note(r),
        "nodes": part_head.nodes(r),
        "load_warning": part_head.load_warning(r),
        "gpu_warning": part_head.gpu_warning(r),
        "verdicts": {
            "intro": part_verdicts.intro(r),
            "rows": part_verdicts.verdict_rows(r, nums),
            "policy": part_verdicts.policy(nums),
            "claims": part_verdicts.claims_summary(r),
        },
        "bounds": part_verdicts.bounds(r, nums),
        "intervals": part_intervals.intervals(r),
        "published": {"intro": part_published.intro(r), "sources": part_published.sources(r)},
        "claims": part_claims.claims(r),
        "energy": part_cells.energy(r),
        "real_work": part_cells.real_work(r),
        "unmatched": part_cells.unmatched(r),
        "variants": part_cells.variants(r),
        "precision_twins": part_cells.precision_twins(r),
        "not_run": part_cells.not_run(r),
        "environments": {
            "publications": part_environments.publications(r),
            "host": part_environments.host(r),
            "stacks": part_environments.stacks(r),
        },
        "load": part_machine.load(r),
        "gpu_state": part_machine.gpu_state(r),
        "overhead": part_machine.overhead(r),
    }
