"""The report's run table, as rows of inline pieces: suite, runner, protocol, kit, times, overhead,
devices and cells of the run (reprokit/report/inline.py)."""

from __future__ import annotations

from reprokit.report.filters import fmt_seconds
from reprokit.report.inline import jn, joined, mono, per_format, ref, span, t, when


def row(
    label: object, value: object, only: str | None = None, cls: str | None = None, glued: bool = False
) -> dict:
    """A row of a two-column table: `only` "md" or "html" for a row one report alone shows, `cls` the
    HTML class of its value cell, `glued` for a row the HTML report writes on one line with the next."""
    return {"label": label, "value": value, "only": only, "cls": cls, "glued": glued}


def run_rows(r: dict) -> list[dict]:
    run, iv, ov, kit = r["run"], r["intervals"], r["overhead"], r["run"]["kit"]
    return [
        row("run", run["run_id"], only="md"),
        row(
            "suite",
            t("{}{}", run["suite"], when(r["suite_description"], t(": {}", r["suite_description"]))),
        ),
        row("runner", [run["runner"], *_cluster(r.get("cluster"))]),
        row(
            "protocol",
            t(
                "{}{}{}",
                run["protocol"],
                when(run["quick"], t(" (quick: shorter sampling, full warm-up)")),
                when(iv["repeat"] > 1, t("; every cell in {} processes, interleaved", iv["repeat"])),
            ),
        ),
        row(
            "kit",
            t(
                "{}, git {}{}",
                kit["version"],
                mono(kit["git_commit"] or "unknown"),
                when(kit.get("git_dirty"), t(" (uncommitted changes)")),
            ),
        ),
        row("started / finished", t("{} / {}", run["started"], run["finished"] or "not finished")),
        row("wall time", fmt_seconds(run["wall_s"])),
        row(
            "harness overhead",
            t(
                "{} outside the cell processes (run wall time {} minus {} in cell processes); {}",
                fmt_seconds(ov["driver_overhead_s"]),
                fmt_seconds(ov["run_wall_s"]),
                fmt_seconds(ov["cells_process_wall_s"]),
                per_format(t("per cell below"), ref("#overhead", "per cell")),
            ),
        ),
        row("devices", joined([r["device_labels"][d] for d in r["devices"]], "; ") or "none recorded"),
        row(
            "published numbers",
            t("{} in the suite's sources", r["summary"]["published_numbers"]),
            only="md",
        ),
        row(
            "cells",
            joined([t("{} {}", v, span("status-" + str(k), k)) for k, v in r["status_counts"].items()]),
        ),
        row("command", jn(run["argv"] or [], " "), only="html", cls="mono"),
    ]


def _cluster(cl: dict | None) -> list:
    """How a Slurm run ran, after its runner: launcher, job arrays, nodes and their sharing."""
    if not cl:
        return []
    arrays, nodes = cl["job_arrays"], cl["nodes"]
    one_node = t(": {}", nodes[0]["node"]) if len(nodes) == 1 else []
    sharing = cl["sharing"] or (
        "exclusive nodes" if cl["exclusive"] else "nodes shared (--slurm-no-exclusive)"
    )
    return t(
        " ({} launcher; job array{} {}; {} node{}{}; {})",
        cl["launcher"],
        "s" if len(arrays) != 1 else "",
        jn(arrays),
        len(nodes),
        "s" if len(nodes) != 1 else "",
        one_node,
        sharing,
    )
