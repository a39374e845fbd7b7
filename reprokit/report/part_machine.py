"""The report's per-cell tables of the machine, as inline pieces: load average, GPU state (clocks, power,
temperature, throttling, other processes, the CUDA JIT cache) and the harness's overhead
(reprokit/report/inline.py)."""

from __future__ import annotations

from reprokit.report.filters import fmt_num, fmt_seconds
from reprokit.report.inline import NL_HTML, code, html_only, jn, per_format, span, t, when, wrap


def load(r: dict) -> dict:
    """The load average before and after each cell: `rows`, or `empty` when none was recorded."""
    ld = r["load"]
    at_start = when(
        ld["host_at_start"],
        wrap(" ", ""),
        t(
            "(at the start of the run: {} over 1 / 5 / 15 min)",
            " / ".join(fmt_num(x) for x in ld["host_at_start"] or []),
        ),
    )
    return {
        "intro": t(
            "1-minute load average before and after each cell, against {} usable cores{}.{}",
            ld["cores"] or "an unknown number of",
            at_start,
            html_only(
                t("\nA load above the core count means other work competed with the benchmark for the CPU.")
            ),
        ),
        "rows": [
            [
                c["cell_id"],
                fmt_num(c["before_1min"]),
                fmt_num(c["after_1min"]),
                span("noisy", "above the core count") if c["high"] else "",
            ]
            for c in ld["cells"]
        ],
        "empty": t(
            "No load averages were recorded with the cells of this run{}.",
            when(
                ld["host_at_start"],
                t(
                    " (at the start of the run: {} over 1 / 5 / 15 min)",
                    " / ".join(fmt_num(x) for x in ld["host_at_start"] or []),
                ),
            ),
        ),
    }


def gpu_state(r: dict) -> list[dict]:
    """NVML before and after each GPU cell: [] for a run without GPU state, else [the sentence, one entry
    per cell with a row per GPU (`gpus`) or the row of a state not read (`unread`)]."""
    gs = r.get("gpu_state")
    if not gs:
        return []
    intro = t(
        "NVML before and after each GPU cell (SM clock against its maximum, power draw against the "
        "enforced limit, temperature), and what the samples taken while it ran saw:{}clock event reasons "
        "that count as throttling (reprokit/data/gpu_clock_reasons.yaml) and other compute processes.{}The "
        "CUDA JIT cache column compares the cache at the cell's start and end "
        "(reprokit/probes/jit_cache.py): "
        '"compiled" means the driver JIT-compiled PTX inside the cell\'s process.',
        NL_HTML,
        NL_HTML,
    )
    return [{"intro": intro, "cells": [_gpu_cell(c) for c in gs["cells"]]}]


def _listed(items: list, none: str) -> object:
    """What a cell saw (throttle reasons, other processes), flagged in HTML; `none` when it saw nothing."""
    text = jn(items)
    if not items:
        return none
    return span("noisy", text) if text else per_format(none, span("noisy", text))


def _gpu_cell(c: dict) -> dict:
    unattributed = when(
        c["unattributed"],
        " ",
        span(
            "muted",
            t(
                "(seen only during the cell, PIDs not visible here, maybe its own: {})",
                jn(c["unattributed"] or []),
            ),
        ),
    )
    jit = span("noisy", c["jit"]) if str(c["jit"]).startswith("compiled") else c["jit"]
    gpus = [
        [
            c["cell_id"],
            g["gpu"],
            t(
                "{} / {} / {}",
                fmt_num(g["sm_clock_before_mhz"]),
                fmt_num(g["sm_clock_after_mhz"]),
                fmt_num(g["max_sm_clock_mhz"]),
            ),
            t(
                "{} / {} / {}",
                fmt_num(g["power_before_w"]),
                fmt_num(g["power_after_w"]),
                fmt_num(g["power_limit_w"]),
            ),
            t("{} / {}", fmt_num(g["temperature_before_c"]), fmt_num(g["temperature_after_c"])),
            _listed(c["throttled"], "no"),
            [_listed(c["shared"], "none"), *unattributed],
            jit,
        ]
        for g in c["gpus"]
    ]
    unread = [] if c["gpus"] else [c["cell_id"], t("not read: {}", c["error"]), c["jit"]]
    return {"gpus": gpus, "unread": unread}


def overhead(r: dict) -> dict:
    """Each cell's process wall time, its time inside the harness and the difference."""
    return {
        "rows": [
            [
                c["cell_id"],
                fmt_seconds(c["process_wall_s"]),
                fmt_seconds(c["wall_s"]),
                fmt_seconds(c["overhead_s"]),
            ]
            for c in r["overhead"]["cells"]
        ],
        "footer": t(
            "Process wall = the cell's process as seen by the driver (interpreter start and imports\n"
            "included); harness wall = the cell inside the harness. Rendered from\n{} and {}; "
            "machine-readable copy:\n{}.",
            code("run.json"),
            code("cells/*.json"),
            code("report.json"),
        ),
    }
