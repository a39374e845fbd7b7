"""One published number's row of the "Published vs measured" tables, as inline pieces: the published
and measured figures, the interval and its basis, n and CV, the ratio, the verdict and its reason, and
the environment fields that differ (reprokit/report/inline.py).

The two reports lay the row out differently (Markdown: one column per fact; HTML: fewer columns, the
facts of a column on lines of their own), so the row has the cells of each, made of the same pieces."""

from __future__ import annotations

from reprokit.report.filters import flat, fmt_num, fmt_published, fmt_ratio
from reprokit.report.inline import (
    BR,
    entity,
    html_only,
    jn,
    joined,
    link,
    md_only,
    mono,
    per_format,
    ref,
    span,
    strong,
    t,
    when,
    wrap,
)

ARROW = entity("->", "→")


def number_row(row: dict, table_anchor: str) -> dict:
    """The row of one published number: its HTML cells by name, and `md` the Markdown table's cells
    (the same pieces, and the columns the HTML row puts inside others: id, bound, n, kind, reason)."""
    measured = row["measured"] is not None
    cells = {
        "label": [
            row["row_label"],
            wrap(" (", "<br>"),
            span("muted", row["metric_as_published"], html_only(t(" · {}", row["id"]))),
            md_only(")"),
            html_only(BR, span("muted mono", row["cell"])),
        ],
        "published": [
            span("nw", t("{} {}", fmt_published(row["published"]), row["unit"])),
            html_only(BR, span("muted", row["published_device"] or row["published_gpu"]), _bound(row)),
        ],
        "figure": _measured(row) if measured else _not_measured(row),
        "cv": _cv(row),
        "ratio": _ratio(row),
        "verdict": per_format(
            jn(row["labels"], " "), joined([span("v v-" + str(v), v) for v in row["labels"]], " · ")
        ),
        "standin": row["standin"] or "",
        "defects": joined([link(["#", table_anchor, "-", d], d) for d in row["defects"]]),
    }
    kind = [row["reproduction"]["label"]] if row.get("reproduction") else []
    md = [
        cells["label"],
        row["id"],
        cells["published"],
        t("{}{}", row["bound"] or "", when(row["tier"], t(" {}", row["tier"]))),
        cells["figure"],
        row["n"] if measured else "",
        cells["cv"],
        cells["ratio"],
        cells["verdict"],
        kind[0] if kind else "",
        row["reason_shown"] or "",
        cells["standin"],
        cells["defects"],
    ]
    return {
        **cells,
        "md": md,
        "anchor": row["anchor"],
        "measured": measured,
        "reason": [row["reason_shown"]] if row["reason_shown"] else [],
        "kind": kind,
        "note": [row["note"]] if measured and row["note"] else [],
        "envdiff": [_envdiff(row)] if row["deviates"] else [],
    }


def _bound(row: dict) -> list:
    """The published figure's roofline bound and tier, under it in HTML (Markdown has a column)."""
    if not row["bound"]:
        return []
    tier = row["tier"]
    return [
        BR,
        span("muted", t("bound: {}", row["bound"])),
        *when(tier and tier != "PLAUSIBLE", " ", span("v v-" + str(tier), tier)),
    ]


def _measured(row: dict) -> list:
    """The measured figure: value, interval and its label, the statistic it is, the device (HTML), the
    row's state and notes."""
    out: list = [
        span("nw", t("{} {}", fmt_num(row["measured"]), row["unit"])),
        *_interval(row),
        *_statistic(row),
        html_only(BR, span("muted", t("here: {}", row["device_label"]))),
    ]
    for shown, note in (
        (row["state"], "state"),
        (row.get("steady_note"), "steady_note"),
        (row.get("data"), "data"),
    ):
        if shown:
            out += [wrap("; ", "<br>"), span("muted", row["data"]["text"] if note == "data" else row[note])]
    return out


def _interval(row: dict) -> list:
    """The interval and its label (Markdown labels an interval only; HTML says when there is none)."""
    lab = [row["ci_label"], *when(row.get("ci_scope"), t(", {}", row.get("ci_scope")))]
    if row["ci_low"] is None:
        return [
            html_only(
                BR, span("muted", "no interval (n = 1)"), *when(row["ci_label"], BR, span("muted", lab))
            )
        ]
    out = [wrap(" ", "<br>"), span("nw", t("[{}, {}]", fmt_num(row["ci_low"]), fmt_num(row["ci_high"])))]
    if row["ci_label"]:
        return out + [wrap(" (", "<br>"), span("muted", lab), md_only(")")]
    return out + [md_only(t(" ({})", lab))]


def _statistic(row: dict) -> list:
    """What the figure is when it is not the median (as published, a partial estimate), with the median
    beside it; or that it is the median."""
    basis = row["basis"]
    if basis and basis["statistic"] != "median":
        robust = (
            t(" [{}, {}]", fmt_num(row["robust_ci_low"]), fmt_num(row["robust_ci_high"]))
            if row["robust_ci_low"] is not None
            else []
        )
        return [
            wrap(", ", "<br>"),
            span("muted" if basis["statistic"] == "as_published" else "noisy", basis["label"]),
            wrap("; ", "<br>"),
            span("muted", t("median {}{}", fmt_num(row["robust_median"]), robust)),
        ]
    if row["n"] > 1:
        return [wrap(", ", "<br>"), span("muted", per_format(t("median"), t("median of the timed samples")))]
    return []


def _not_measured(row: dict) -> list:
    return t(
        "not measured: {}{}",
        row["note"],
        html_only(when(row["cell_reason"], t(" — {}", ref("#not-run", row["cell_reason"])))),
    )


def _cv(row: dict) -> list:
    """n (HTML), CV and the flags of a noisy, loaded or throttled measurement."""
    out: list = [html_only(row["n"])]
    if row["cv"] is not None:
        out += [
            wrap("", "<br>CV "),
            t("{} %", fmt_num(row["cv"] * 100, 2)),
            *when(row["noisy"], " ", span("noisy", "noisy")),
        ]
    if row["load_high"]:
        out += [wrap(" ", "<br>"), span("noisy", "load > cores + 1")]
    if row.get("gpu_state_label"):
        out += [wrap(" ", "<br>"), span("noisy", row["gpu_state_label"])]
    return out


def _ratio(row: dict) -> list:
    if not row["tested"]:
        return []
    return [
        fmt_ratio(row["ratio"]),
        md_only(when(row["reading"], t(" ({})", row["reading"]))),
        html_only(BR, span("muted", row["reading"] or "")),
    ]


def env_diffs(row: dict) -> object:
    """The environment fields that differ between the publication and this run."""
    return joined(
        [
            t("{}: {} {} {}", mono(d["field"]), flat(d["published"]), ARROW, flat(d["measured"]))
            for d in row["environment_diff"]
            if d["differs"]
        ],
        "; ",
    ) or t("none known to differ")


def env_line(nid: str, row: dict) -> list:
    """A deviating number's line under its Markdown table."""
    return t("{} ({}): {}", nid, row["verdict"], env_diffs(row))


def _envdiff(row: dict) -> list:
    """A deviating number's row under it in HTML, with the fields not known on both sides."""
    unknown = [d["field"] for d in row["environment_diff"] if d["differs"] is None]
    return t(
        "{} (fields that differ):\n{}.\n{}",
        strong(t("{}: environment, publication {} this run", row["id"], ARROW)),
        env_diffs(row),
        when(unknown, span("muted", t("Not known on both sides: {}.", jn(unknown)))),
    )
