"""The report's "Environments" part, as inline pieces: the publications' environments, this run's host
and each stack as built here (reprokit/report/inline.py; two-column rows made by part_run.row)."""

from __future__ import annotations

from reprokit.report.filters import flat, fmt_num
from reprokit.report.inline import entity, html_only, html_strong, jn, joined, mono, span, strong, t, when
from reprokit.report.part_run import row

ARROW = entity("->", "→")


def publications(r: dict) -> list[dict]:
    """Per source: its environment (a line in Markdown, a table in HTML) and its publication
    environments."""
    out = []
    for s in r["sources"]:
        env = list(s["environment"].items())
        out.append(
            {
                "title": t("Source {}", s["id"]),
                "line": t(
                    "{}: {}",
                    strong(t("Source {}", s["id"])),
                    joined([t("{}: {}", k, v) for k, v in env], "; "),
                ),
                "environment": env,
                "rows": [
                    [
                        e["gpu"],
                        e["cuda"] or "",
                        e["cudnn"] or "",
                        e["framework"],
                        e["framework_version"],
                        e["numbers"],
                    ]
                    for e in s["publication_environments"]
                ],
            }
        )
    return out


def host(r: dict) -> list[dict]:
    """The rows of this run's host: OS, CPU, memory, Python, NVIDIA, GPUs and their probes, environment."""
    h = r["environments"]["host"]
    if h["cpu_peak_gflops"]:
        probe = t(
            "{} GFLOP/s{}",
            fmt_num(h["cpu_peak_gflops"]),
            when(h["cpu_peak_method"], " ", span("muted", t("({})", h["cpu_peak_method"]))),
        )
    else:
        probe = t("not measured")
    rows = [
        row("OS", t("{} (kernel {}, {}, {})", h["os"], h["kernel"], h["machine"], h["libc"])),
        row(
            "CPU",
            t(
                "{} {}: {} logical / {} physical cores, {} usable",
                h["cpu_label"],
                span("muted", t('("{}")', h["cpu"])),
                h["logical_cores"],
                h["physical_cores"],
                h["usable_cores"],
            ),
        ),
        row("CPU governor", flat(h["governor"])),
        row("CPU peak", h["cpu_peak_theoretical"] or "unknown"),
        row("CPU GEMM probe (context)", probe),
        row("memory", t("{} GiB", h["memory_gib"])),
        row("host Python", h["python"]),
        row(
            "NVIDIA",
            t("driver {}", h["nvidia_driver"])
            if h["nvidia_available"]
            else t("not available: {}", h["nvidia_reason"]),
        ),
    ]
    rows += [
        row(
            t("GPU {}", g["index"]),
            t(
                "{}, CC {}, {}, driver {}, CUDA driver {}",
                g["name"],
                g["compute_capability"],
                g["architecture"],
                g["driver_version"],
                g["cuda_driver_version"],
            ),
        )
        for g in h["gpus"]
    ]
    rows += _gpu_peak(h)
    env = joined([t("{}={}", k, v) for k, v in h["env"].items()]) or t("no allow-listed variables set")
    return rows + [row("environment", env, cls="mono")]


def _gpu_peak(h: dict) -> list[dict]:
    """The GPU GEMM probe's rows, where it ran or the host has GPUs."""
    gp = h.get("gpu_peak")
    if not gp or not (gp["measured"] or h["gpus"]):
        return []
    rows = [row(t("GPU {} GEMM probe (context)", g["index"]), g["text"]) for g in gp["gpus"]] or [
        row("GPU GEMM probe (context)", t("not measured: {}", gp["text"]))
    ]
    return rows + ([row("GPU GEMM method", gp["method"], cls="muted")] if gp["method"] else [])


def stacks(r: dict) -> list[dict]:
    return [_stack(st) for st in r["environments"]["stacks"]]


def _error(text: object) -> list:
    return when(text, " ", span("bad", t("(error: {})", text)))


def _stack(st: dict) -> dict:
    """A stack as built here: its rows, framework build details, substitutes and notes."""
    original = (
        joined([t("{}: {}", k, v) for k, v in st["original"].items()], "; ")
        if st["original"]
        else t("unknown")
    )
    rows = [
        row("original", original),
        row(
            "framework here",
            t(
                "{} {}{}",
                st["framework"] or "—",
                st["framework_version"] or "",
                _error(st["framework_error"]),
            ),
        ),
        row("implementations", jn(st["implementations"], "; ")),
        row("Python / numpy", t("{} / {}", st["python"] or "—", st["numpy"] or "—")),
    ]
    env = st.get("environment")
    if env:
        rows.append(row("environment", t("{}{}", env["used"], when(env["why"], t(": {}", env["why"])))))
        if env["attempts"]:
            rows.append(row("candidates tried", jn(env["attempts"], "; "), glued=True))
    if st.get("scan_loops"):
        rows.append(row("Theano scan loop", jn(st["scan_loops"], "; "), glued=True))
    fingerprint = t("from {}", mono(st["fingerprint_from"])) if st["fingerprint_from"] else t("none recorded")
    rows += [
        row(
            "CUDA runtime / cuDNN / driver",
            t("{} / {} / {}", st["cuda_runtime"] or "—", st["cudnn"] or "—", st["cuda_driver"] or "—"),
        ),
        row("image", st["image_id"] or "—", cls="mono"),
        row("fingerprint", t("{}{}", fingerprint, _error(st["fingerprint_error"]))),
    ]
    return {
        "title": st["stack"],
        "rows": rows,
        "details": [[d["key"], d["value"]] for d in st["details"]],
        "details_title": t("framework build details ({} fields)", len(st["details"])),
        "substitutes": [
            {
                "title": t("Substitutes{}:", html_only(t(" (original → used here, why)"))),
                "lines": [
                    t("{} {} {}: {}", s["original"], ARROW, html_strong(s["used"]), s["why"])
                    for s in st["substitutes"]
                ],
            }
        ]
        if st["substitutes"]
        else [],
        "notes": [t("Notes: {}", jn(st["notes"], "; "))] if st["notes"] else [],
    }
