"""The report's head, as inline pieces: notices of an incomplete, resumed or re-judged run, the first
screen ("Does it hold here?": one line per source, the plan, the one-process caveat) and the notes
and warnings under the run table (reprokit/report/inline.py)."""

from __future__ import annotations

from reprokit.report.filters import fmt_num
from reprokit.report.inline import (
    NL_HTML,
    NL_MD,
    code,
    html_only,
    jn,
    joined,
    md_only,
    mono,
    per_format,
    ref,
    strong,
    t,
    when,
    wrap,
)

NO_SOURCE = t("The suite names no published source.")
QNL = wrap("\n> ", "\n")  # a line break inside a Markdown block quote


def title(r: dict) -> list:
    return t("reprokit report: {}", mono(r["run"]["run_id"]))


def _incident(i: dict) -> list:
    return [i["text"], *when(i["at"], t(" ({})", i["at"]))]


def incomplete(r: dict) -> list[dict]:
    """The notice of cells without a usable result: [] or [its title, one line per cell and incident,
    and the command that measures them]."""
    if not r["incomplete"]:
        return []
    n = len(r["incomplete"])
    cells = [
        t(
            "{} {}: {}",
            strong(c["label"], cls="status-" + _txt(c["status"])),
            mono(c["cell_id"]),
            c["reason"] or "no reason recorded",
        )
        for c in r["incomplete"]
    ]
    happened = [t("What happened: {}.", _incident(i)) for i in r["incidents"]]
    run = r["run"]
    verb = "s have" if n > 1 else " has"
    return [
        {
            "title": t("This run is incomplete: {} cell{} no usable result.", n, verb),
            "lines": cells + happened,
            "command": t(
                "{} (with the run's options) measures these cells and keeps every other.",
                code("reproduce.py run --suite ", run["suite"], " --resume ", run["run_id"]),
            ),
        }
    ]


def resumed(r: dict) -> list:
    """The note of a run stopped and resumed with every cell's result: [] or [the sentence]."""
    if r["incomplete"] or not r["incidents"]:
        return []
    return [
        t(
            "This run was stopped and resumed: {}. Every cell has its result.",
            joined([_incident(i) for i in r["incidents"]], "; "),
        )
    ]


def rejudged(r: dict) -> list:
    """The note of a run judged again with later data: [] or [the sentence]."""
    rj = r["rejudged"]
    if not rj:
        return []
    kit = rj["kit"]
    return [
        t(
            "{} on {} with the kit's data of kit {}, git {}{} ({}): the measurements are those of run {} "
            "(started {}, copied from {}); the published numbers, defect catalogue, bounds and policies "
            "are the kit's data of that day, not the data the run started with{}. The run's own report "
            "is unchanged.",
            strong("Judged again"),
            rj["at"],
            kit["version"],
            mono(kit["git_commit"] or "unknown"),
            when(kit.get("git_dirty"), " (uncommitted changes)"),
            code("report --rejudge"),
            r["run"]["run_id"],
            rj["started"],
            mono(rj["copied_from"]),
            when(not rj["had_snapshot"], " (the run kept no copy of it)"),
        )
    ]


def first_screen(r: dict) -> dict:
    """The first screen ("Does it hold here?"): the sentence above its lines, one line per source."""
    intro = t(
        "Measured on this {}. One line per source: what holds on this hardware, what cannot be\n"
        "tested here and why, what is physically impossible.",
        r["run_device"],
    )
    return {
        "intro": intro,
        "answers": [{"source": f["source"], "text": answer(f)} for f in r["first_screen"]],
    }


def answer(f: dict) -> list:
    """A source's line of the first screen: its id and title, and what holds here."""
    return t(
        "{}{}: {}", strong("Source ", f["source"]), when(f["title"], t(" ({})", f["title"])), f["answer"]
    )


def plan(r: dict) -> list:
    """What the run could decide, as planned: [] or [the sentence]."""
    pl = r.get("plan")
    if not pl:
        return []
    out: list = t("What this run could decide, as planned before it ran: ")
    if pl["judgment"]:
        out += t("{}; {}", pl["judgment"], pl["design"])
    if pl["time_limit_s"]:
        left = pl["left"]
        out += t(
            "{}Run with {}: {} cell{} left unmeasured",
            when(pl["judgment"], ". "),
            code("--time-limit ", "%g" % (pl["time_limit_s"] / 60), "m"),
            len(left),
            "s" if len(left) != 1 else "",
        )
        if left:
            out += t(
                " ({}{}{})",
                joined([c["cell_id"] for c in left[:5]]),
                when(len(left) > 5, ", ..."),
                md_only("; see Cells not run"),
            )
        part = pl.get("partial") or []
        if part:
            out += t(
                "; {} cell{} reported from the processes {} finished before the limit ({}{})",
                len(part),
                "s" if len(part) != 1 else "",
                "they" if len(part) != 1 else "it",
                joined([c["cell_id"] for c in part[:5]]),
                when(len(part) > 5, ", ..."),
            )
    return [out + t(".")]


def one_process(r: dict) -> list:
    """The caveat of a run with one process per cell (`--repeat 1`): [] or [the sentence]."""
    iv = r["intervals"]
    if iv["repeat"] != 1:
        return []
    pl = r.get("plan")
    rerun = iv["rerun"]
    if pl and pl["judgment"]:
        why = t(" (no verdict or claim here depends on its interval)")
    else:
        why = t(" ({})", code("--repeat 1"))
    if rerun and rerun["other_device"]:
        wider = t(
            " (not calibrated on this device: the kit measured run-to-run spread only on {})",
            rerun["machine"],
        )
    elif rerun:
        wider = t(
            ", which is wider: on the kit's own test machine {} (see {})",
            rerun["short"],
            ref("#intervals", "Intervals"),
        )
    else:
        wider = []
    return [
        t(
            "Each cell ran in one process{}: its intervals describe that process{}only, not the spread{}"
            "between processes or between runs{}.",
            why,
            NL_HTML,
            NL_MD,
            wider,
        )
    ]


def suite_note(r: dict) -> list:
    return [[md_only(t("Note: ")), r["suite_note"]]] if r["suite_note"] else []


def cluster_note(r: dict) -> list:
    cl = r.get("cluster")
    return [t("{} {}.", strong("Note:"), cl["note"])] if cl and cl["note"] else []


def nodes(r: dict) -> list[dict]:
    """The nodes of a Slurm run on more than one: [] or [the sentence above the table, its rows]."""
    cl = r.get("cluster")
    if not cl or len(cl["nodes"]) <= 1:
        return []
    return [
        {
            "intro": t("The cells ran on {} nodes:", len(cl["nodes"])),
            "rows": [
                [
                    n["node"],
                    jn(n["partitions"]),
                    n["cpu"],
                    t("{} GiB", n["memory_gib"]) if n["memory_gib"] else "",
                    jn(n["gpus"]) or "none",
                    jn(n["cells"]),
                ]
                for n in cl["nodes"]
            ],
        }
    ]


def load_warning(r: dict) -> list:
    """The warning of a machine loaded during the run: [] or [the pieces], a block quote in Markdown."""
    ld = r["load"]
    if not ld["warning"]:
        return []
    effect = ld["effect"]["text"] if ld.get("effect") else t("around {} cell(s)", len(ld["high_cells"]))
    return [
        t(
            "{}{}The 1-minute load average exceeded{}{} (the {} usable cores, which a cell may keep busy "
            "itself, plus one; highest {}):{}{}.{}{}{}",
            strong("The machine was loaded during this run: timings may be inflated."),
            NL_HTML,
            wrap("\n> ", " "),
            ld["limit_1min"],
            ld["cores"],
            fmt_num(ld["max_1min"]),
            NL_HTML,
            effect,
            when(len(ld["high_cells"]) <= 5, t(" Loaded: {}.", jn(ld["high_cells"]))),
            html_only(t(" {}.", ref("#load", "Load per cell"))),
            _probe_under_load(ld),
        )
    ]


def _probe_under_load(ld: dict) -> list:
    """The sentence follows the one before it without a break (in Markdown, its `> ` too)."""
    if not ld["cpu_peak_probe_high"]:
        return []
    return t(
        "{}{} also ran under load ({}); it is shown as context only.{}",
        wrap("> ", ""),
        per_format(t("The CPU peak probe"), t("The CPU GEMM probe")),
        fmt_num(ld["cpu_peak_probe_1min"]),
        wrap("\n", ""),
    )


def gpu_warning(r: dict) -> list:
    """The warning of GPU cells that ran throttled or beside other processes: [] or [the pieces], a block
    quote in Markdown."""
    gs = r.get("gpu_state")
    if not gs or not gs["warning"]:
        return []
    lines: list = [
        strong("GPU cells ran throttled or beside other processes: their timings may be inflated.")
    ]
    if gs["throttled_cells"]:
        lines.append(
            t(
                "Throttled (NVML clock event reasons of power, heat or a hardware slowdown seen while "
                "the cell ran{}): {}.",
                md_only(t("; reprokit/data/gpu_clock_reasons.yaml")),
                _cells_with(gs["cells"], "throttled"),
            )
        )
    if gs["shared_cells"]:
        lines.append(
            t("Beside other compute processes on their GPUs: {}.", _cells_with(gs["cells"], "shared"))
        )
    link = html_only(t("{}.", ref("#gpu-state", "GPU state per cell")))
    return [[joined(lines, QNL), wrap("", "\n"), link]]


def _cells_with(cells: list[dict], key: str) -> list:
    """The cells with something under `key`, and what: "cell: a, b; cell: c"."""
    return joined([t("{}: {}", c["cell_id"], jn(c[key])) for c in cells if c[key]], "; ")


def _txt(v: object) -> str:
    return "—" if v is None else str(v)
