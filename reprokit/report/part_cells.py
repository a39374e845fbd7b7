"""The report's parts about cells beyond the published numbers, as inline pieces: energy per step, the
checks that the timed steps did the work, metrics without a published counterpart, corrected and
alternative variants, precision twins and the cells not run (reprokit/report/inline.py).

A part with a table has `rows` (lists of cells) and, where the report says so, `empty`: the sentence
shown instead of an empty table."""

from __future__ import annotations

from reprokit.report.filters import fmt_num, fmt_ratio
from reprokit.report.inline import (
    NL_HTML,
    NL_MD,
    code,
    em,
    jn,
    joined,
    md_only,
    mono,
    per_format,
    span,
    t,
    when,
    wrap,
)


def energy(r: dict) -> list[dict]:
    """Joules per step of the GPU cells: [] or [the sentence and the rows]."""
    if not r["energy"]:
        return []
    intro = t(
        "Joules of the cell's GPUs over each timed window, from NVML's total-energy counter (Volta and "
        "newer),{}per{}step and per item, cross-checked against the integrated power samples ({};\nwindows "
        "under 5 s, unsynchronised steps and GPUs without the counter are not measured). The sources' "
        "GPUs{}had no{}such counter: these are new figures, not reproductions. This path had never run on "
        "a GPU when{}this kit{}version was made (tested against a fake NVML binding only): read the "
        "counter-vs-power column{}before{}using a figure.",
        NL_MD,
        NL_HTML,
        mono("reprokit/probes/energy.py"),
        NL_MD,
        NL_HTML,
        NL_MD,
        NL_HTML,
        NL_MD,
        NL_HTML,
    )
    rows = []
    for e in r["energy"]:
        window = t("{} s", fmt_num(e["window_s"])) if e["window_s"] is not None else t("—")
        flagged = [wrap(" (", " "), span("v c-INCONCLUSIVE", "FLAGGED"), md_only(")")] if e["flagged"] else []
        apart = (
            t("{} % apart{}", fmt_num(100 * e["disagreement"]), flagged)
            if e["disagreement"] is not None
            else t("—")
        )
        rows.append(
            [
                e["cell"],
                e["metric"],
                fmt_num(e["joules_per_step"]),
                fmt_num(e["joules_per_item"]),
                window,
                apart,
                e["reason"],
            ]
        )
    return [{"intro": intro, "rows": rows}]


def real_work(r: dict) -> list[dict]:
    """The checks that the timed steps did the work: [] or [the sentence, failed checks, defects seen and
    the cells not checked]."""
    rw = r["real_work"]
    if not rw:
        return []
    if rw["metrics_checked"]:
        checked = t(
            "{} cell(s) checked: {}{}of{}{} timed metric(s) passed.",
            rw["cells_checked"],
            rw["metrics_passed"],
            NL_MD,
            NL_HTML,
            rw["metrics_checked"],
        )
    else:
        checked = t("No cell of this run recorded a check.")
    unchecked = (
        t(
            " {} cell(s) that ran{}have a timed metric without a check (a result that recorded none, "
            "or a workload without one): not checked, which is{}not passed.",
            len(rw["unchecked"]),
            NL_HTML,
            NL_HTML,
        )
        if rw["unchecked"]
        else []
    )
    intro = t(
        "Each workload checks its timed steps ({}, MLPerf TEST01's idea): over timed{}training{}steps the "
        "weights must move, part by part; the last timed forward step's output must match the same "
        "step{}run{}untimed. A failed check fails its cell. {}{}",
        mono("bench/real_work.py"),
        NL_HTML,
        NL_MD,
        NL_MD,
        NL_HTML,
        checked,
        unchecked,
    )
    return [
        {
            "intro": intro,
            "failed": [[f["cell"], f["metric"], f["reason"]] for f in rw["failed"]],
            "defects_seen": [
                {
                    "title": t(
                        "Published defects the checks saw by running (the parts the defect "
                        "keeps from training stayed still):"
                    ),
                    "lines": [
                        t("{} {}: {}, still: {}", mono(d["cell"]), d["metric"], d["defect"], jn(d["parts"]))
                        for d in rw["defects_seen"]
                    ],
                }
            ]
            if rw["defects_seen"]
            else [],
            "unchecked": [
                t(
                    "Not checked: {}.",
                    joined([t("{} ({})", mono(u["cell"]), jn(u["metrics"])) for u in rw["unchecked"]], "; "),
                )
            ]
            if rw["unchecked"]
            else [],
        }
    ]


def unmatched(r: dict) -> dict:
    """Metrics measured without a published counterpart."""
    rows = []
    for u in r["unmatched"]:
        interval = (
            t(" [{}, {}]", fmt_num(u["ci_low"]), fmt_num(u["ci_high"])) if u["ci_low"] is not None else []
        )
        cv = (
            t("{} %{}", fmt_num(u["cv"] * 100, 2), when(u["noisy"], " ", span("noisy", "noisy")))
            if u["cv"] is not None
            else []
        )
        rows.append(
            [
                u["cell"],
                u["variant"],
                [u["metric"], *when(u["state"], " ", span("muted", t("({})", u["state"])))],
                t("{} {}{}", fmt_num(u["median"]), u["unit"], interval),
                u["n"],
                cv,
                u["stack"],
                u["device"],
            ]
        )
    return {"rows": rows, "empty": t("None.")}


def _medians(m: dict, note: object, states: bool) -> list:
    """The as-published and variant medians of one metric (with their states), and their ratio."""
    out = []
    for side in (m["as_published"], m["variant"]):
        if side:
            state = when(side["state"], " ", span("muted", t("({})", side["state"]))) if states else []
            out.append(t("{} {}{}", fmt_num(side["median"]), side["unit"], state))
        else:
            out.append(note)
    ratio = (
        t("{}{}", fmt_ratio(m["ratio"]), when(m["reading"], t(" ({})", m["reading"])))
        if m["ratio"] is not None
        else []
    )
    return out + [ratio]


def variants(r: dict) -> dict:
    """Corrected and alternative variants beside their as-published cells, one row per metric."""
    intro = t(
        "Cells that are not the published configuration, each beside the as-published cell it corrects\n"
        "({}: the named defects removed) or reads otherwise ({}: another{}reading of what{}the source left "
        "unstated), with both medians from this run and their ratio{}(variant / as published).",
        per_format(code("corrected"), em("corrected")),
        per_format(code("alternative"), em("alternative")),
        NL_HTML,
        NL_MD,
        NL_HTML,
    )
    rows = [
        [
            v["cell"],
            v["kind"],
            jn(v["defects"]),
            v["as_published_cell"],
            m["metric"],
            *_medians(m, v["note"] or "not measured", True),
        ]
        for v in r["variants"]
        for m in v["metrics"]
    ]
    return {"intro": intro, "rows": rows, "empty": t("None in this run.")}


def precision_twins(r: dict) -> list[dict]:
    """The cells run in the framework's default precision beside their fp32 cells: [] for a run that has
    none to say, else [the sentence, the rows, the twins not run]."""
    if "precision_twins" not in r:
        return []
    pt = r["precision_twins"]
    rows = [
        [
            tw["cell"],
            tw["fp32_cell"],
            t("{} / {}", tw["precision"]["fp32"] or "unknown", tw["precision"]["defaults"] or "unknown"),
            m["metric"],
            *_medians(m, "not measured", False),
        ]
        for tw in pt["ran"]
        for m in tw["metrics"]
    ]
    return [
        {
            "intro": t(
                "Each cell runs in fp32 (TF32 off), as the 2017-2019 sources did; on a GPU where the "
                "framework's own\ndefault differs (TF32 on Ampere and later), a twin cell runs that default, "
                "beside its fp32 cell, so the\nreport shows what the default buys. The twin is never "
                "compared with a published number."
            ),
            "rows": rows,
            "not_run": [t("{} twin(s) not run: {}", n["cells"], n["reason"]) for n in pt["not_run"]],
        }
    ]


def not_run(r: dict) -> dict:
    """The cells without metrics, with their status and reason."""
    rows = [
        {
            "status": c["status"],
            "cells": [
                c["cell_id"],
                c["stack"],
                c["status"],
                [
                    c["reason"] or "",
                    *when(
                        c["log_file"],
                        wrap(" (", "<br>"),
                        span("muted mono", t("log: {}", c["log_file"])),
                        md_only(")"),
                    ),
                ],
            ],
        }
        for c in r["not_run"]
    ]
    return {"rows": rows, "empty": t("Every cell ran and produced its metrics.")}
