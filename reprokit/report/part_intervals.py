"""The report's "Intervals" part, as inline pieces: the kinds of interval the run's metrics carry, and
what they cover: one process only (`--repeat 1`) or the spread between processes, against the kit's
own measurement of re-runs (reprokit/report/inline.py)."""

from __future__ import annotations

from reprokit.report.filters import fmt_num
from reprokit.report.inline import NL_HTML, NL_MD, code, entity, html_strong, t, when

GE = entity(">=", "&ge;")


def intervals(r: dict) -> dict:
    """The sentence above the kinds, one line per kind, and the sentences under them (one paragraph for
    a run of one process per cell)."""
    iv = r["intervals"]
    cv = fmt_num(iv["median_cv"] * 100, 2) if iv["median_cv"] is not None else None
    return {
        "intro": t(
            "{} timed metrics; median CV {}. Every interval is labelled with its real coverage of "
            "the median:",
            iv["metrics"],
            t("{} %", cv) if cv is not None else t("—"),
        ),
        "kinds": [_kind(k) for k in iv["kinds"]],
        "one_process": iv["repeat"] == 1,
        "sentences": [_one_process(iv)] if iv["repeat"] == 1 else _processes(r),
    }


def _kind(k: dict) -> list:
    if k["method"] == "none":
        return t("{} with no interval ({})", k["metrics"], k["method_text"])
    if k["covers"] == "rerun":
        cov = t("nominal coverage {} % of a re-run's median", fmt_num(k["coverage"] * 100, 3))
    elif k["covers"] == "median":
        cov = t("nominal coverage {} % of the cell's central value", fmt_num(k["coverage"] * 100, 4))
    else:
        cov = t("coverage at least {} %", fmt_num(k["coverage"] * 100, 3))
    return t(
        "{} with a {} ({}; {}{})",
        k["metrics"],
        k["label"],
        k["method_text"],
        cov,
        when(k["levels_text"], t("; levels: {}", k["levels_text"])),
    )


def _one_process(iv: dict) -> list:
    """Why one process's intervals decide no verdict, and how far a re-run's median moves."""
    rerun = iv["rerun"]
    repeat = code("run --repeat K")
    if rerun and rerun["other_device"]:
        spread = t(
            "not calibrated on this device (the kit measured the run-to-run spread only on {}). "
            "Treat{}the intervals as narrower than it;{}{} (K {} 3) gives intervals over process "
            "medians.",
            rerun["machine"],
            NL_MD,
            NL_HTML,
            repeat,
            GE,
        )
    elif rerun:
        repeated = t(" ({})", iv["rerun_repeated"]["text"]) if iv["rerun_repeated"] else []
        spread = t(
            "{}. {};{}{} (K {} 3) gives intervals over process medians{}.",
            rerun["text"],
            html_strong(
                t(
                    "These intervals are narrower than the run-to-run spread and do not cover a{}re-run",
                    NL_HTML,
                )
            ),
            NL_MD,
            repeat,
            GE,
            repeated,
        )
    else:
        spread = t(
            "the kit has{}not measured the run-to-run spread (scripts/bench_rerun_coverage.py). Treat "
            "the intervals as{}narrower than it;{}{} (K {} 3) gives intervals over process medians.",
            NL_HTML,
            NL_MD,
            NL_HTML,
            repeat,
            GE,
        )
    return t(
        "Every cell ran in a single process ({}), so these intervals describe that{}process only and "
        "no{}REPRODUCED, DEVIATES or EFFICIENCY verdict is decided on them (INCONCLUSIVE, with the "
        "reason). The{}median of another process, or of the same cells minutes later on a shared "
        "machine, moves more than that:\n{}",
        code("--repeat 1"),
        NL_HTML,
        NL_MD,
        NL_MD,
        spread,
    )


def _processes(r: dict) -> list:
    """The sentences of a run of several processes per cell: what its intervals are, its design, the
    spread between processes, and the kit's calibration of re-run intervals."""
    iv = r["intervals"]
    out = [_over_processes(r)]
    if iv["design"]:
        out.append(t("The run's design: {}.", iv["design"]))
    if iv["between"]:
        bw = iv["between"]
        narrower = (
            t(
                ": {}",
                html_strong(
                    t(
                        "an interval from one process would have been narrower than{}the "
                        "spread this run measured between processes",
                        NL_HTML,
                    )
                ),
            )
            if bw["narrower"]
            else []
        )
        out.append(
            t(
                "Spread between the process medians: {} % of the median (median{}over {} metrics), "
                "against a median half-width of {} %{}for one process's own interval{}.",
                fmt_num(bw["spread_median"] * 100, 3),
                NL_HTML,
                bw["metrics"],
                fmt_num(bw["within_half_width_median"] * 100, 3),
                NL_HTML,
                narrower,
            )
        )
    rerun = iv["rerun"]
    if rerun and rerun["other_device"]:
        out.append(
            t(
                "Not calibrated on this device: the kit's measured coverage of re-run intervals comes "
                "from {}, not from this run's device; a re-run on this device model would calibrate it.",
                rerun["machine"],
            )
        )
    elif rerun and rerun["current"]:
        out.append(t("The kit's measured coverage of the re-run (prediction) interval: {}.", rerun["text"]))
    elif rerun:
        out.append(
            t(
                "The kit has not yet measured how often these re-run intervals cover a re-run ({}); its "
                "last measurement with several processes per cell used the older interval over the "
                "process medians: {}.",
                code("scripts/bench_rerun_coverage.py --calibrate"),
                rerun["text"],
            )
        )
    return out


def _over_processes(r: dict) -> list:
    """What an interval over processes is: a confidence interval of the central value (where verdicts are
    decided on it) or a re-run interval."""
    iv = r["intervals"]
    if "median" not in [k["covers"] for k in iv["kinds"]]:
        return t(
            "Every cell ran in {} fresh processes, interleaved across cells; each interval is a "
            "re-run{}interval{}(t over the process medians with processes - 1 degrees of freedom): "
            "where the median of a re-run{}of the same design falls{}with the stated probability.",
            iv["repeat"],
            NL_MD,
            NL_HTML,
            NL_MD,
            NL_HTML,
        )
    if r["plan"] and r["plan"]["judgment"]:
        who = t("The cells that decide ran in up to {} fresh processes", iv["repeat"])
    else:
        who = t("Every cell ran in {} fresh processes", iv["repeat"])
    return t(
        "{}, interleaved across cells. Each\ninterval over processes is a confidence interval of the "
        "cell's central value (t over the process medians{}with processes - 1{}degrees of freedom): "
        "verdicts and claims are decided on it. With 3 or more processes{}a row also gives the "
        "prediction interval{}for a re-run (where the median of a re-run of the same design{}falls with "
        "the stated probability, about 1.4 times wider); a{}95 % CI alone captures a re-run's "
        "median{}only about 83 % of the time (Cumming & Maillardet 2006).",
        who,
        NL_MD,
        NL_HTML,
        NL_MD,
        NL_HTML,
        NL_MD,
        NL_HTML,
        NL_MD,
    )
