"""The ledger's plots: per published number, its re-measurements by device model against the published.

Every re-measurement with its interval, by device model, against a horizontal line at the published
value; inline SVG, made as the report makes its plots.

matplotlib (Agg, SVG with text kept as text), then re-serialised by reprokit/report/plots.py
`clean_svg` (ids prefixed per plot, every text escaped, no script). Deterministic: the hash salt is the
plot's own prefix and no date or creator is written, so the same store draws the same bytes. The value
axis is logarithmic when the values drawn (medians, interval ends, the published value) span more than
`LOG_SPAN` (10x). A run stored twice (the original and its copy rejudged with newer data: the same
samples) is drawn once.
"""

from __future__ import annotations

import io
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from reprokit.report.plots import PUBLISHED_COLOR, RC, clean_svg  # noqa: E402

LOG_SPAN = 10.0
COLORS = {"original": "#1f77b4", "other": "#d95f02"}
LEGEND = {"original": "original stack (median, interval)", "other": "another stack (median, interval)"}
CLASS_ORDER = {"gpu": 0, "cpu": 1}
LABEL_MAX = 34


def _short(text: str, limit: int = LABEL_MAX) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _tick(v: float, _pos=None) -> str:
    """A tick label as plain text (mathtext is off: labels from data are never parsed as TeX)."""
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:g}"


def _label(model: str) -> str:
    """A device model on at most two lines under its column."""
    lines = textwrap.wrap(model, 22)
    return "\n".join(lines[:1] + [_short(" ".join(lines[1:]), 22)] if len(lines) > 1 else lines)


def drawn(measurements: list[dict]) -> list[dict]:
    """The measurements a plot draws: each run once (an original before its rejudged copy)."""
    seen: dict[tuple, dict] = {}
    for m in sorted(measurements, key=lambda m: (m["rejudged"], m["run"])):
        seen.setdefault((m["run_id"], m.get("machine")), m)
    return sorted(seen.values(), key=lambda m: (m["date"] or "", m["run_id"], m["run"]))


def uses_log(values: list[float]) -> bool:
    """Whether the values (all positive) span more than LOG_SPAN."""
    pos = [v for v in values if v is not None and v > 0]
    return bool(pos) and max(pos) / min(pos) > LOG_SPAN


def _model(m: dict) -> tuple[str | None, str]:
    return (m["device"], m["device_model"] or "(model not recorded)")


def _points(ms: list[dict], models: list[tuple]) -> dict[str, list[tuple[float, float, float, float]]]:
    """Per stack kind ('original' or 'other'), each run as (x, median, below, above): x the device
    model's place, the runs of one model spread over [-0.3, 0.3] around it in date order."""
    out: dict[str, list] = {"original": [], "other": []}
    for i, model in enumerate(models):
        mine = [m for m in ms if _model(m) == model]
        for j, m in enumerate(mine):
            x = i + (0.0 if len(mine) == 1 else -0.3 + 0.6 * j / (len(mine) - 1))
            lo = m["ci_low"] if m["ci_low"] is not None else m["measured"]
            hi = m["ci_high"] if m["ci_high"] is not None else m["measured"]
            kind = "original" if m.get("stack_kind") == "original" else "other"
            out[kind].append((x, m["measured"], max(m["measured"] - lo, 0.0), max(hi - m["measured"], 0.0)))
    return out


def number_svg(number: dict, prefix: str) -> str | None:
    """The plot of one published number (ledger.json `numbers` entry), or None when nothing is drawn."""
    ms = [m for m in drawn(number["measurements"]) if m["measured"] is not None]
    if not ms:
        return None
    models = sorted({_model(m) for m in ms}, key=lambda d: (CLASS_ORDER.get(d[0], 2), d[1]))
    published = number.get("published")
    values = [v for m in ms for v in (m["measured"], m["ci_low"], m["ci_high"]) if v is not None]
    log = uses_log(values + ([published] if published else [])) and all(v > 0 for v in values)
    width, height = min(7.5, 3.2 + 1.3 * len(models)), 3.0
    with matplotlib.rc_context(RC | {"svg.hashsalt": prefix}):
        fig = plt.figure(figsize=(width, height))
        try:
            # fixed margins (inches): the y label and its ticks, two lines of x labels, the legend above
            ax = fig.add_axes((1.05 / width, 0.6 / height, 1 - 1.2 / width, 1 - 1.15 / height))
            for kind, pts in _points(ms, models).items():
                if pts:
                    xs, ys, below, above = (list(v) for v in zip(*pts))
                    ax.errorbar(xs, ys, yerr=[below, above], fmt="o", markersize=3.5, color=COLORS[kind],
                                ecolor=COLORS[kind], elinewidth=0.9, capsize=2, label=LEGEND[kind])
            if published is not None and (published > 0 or not log):
                device = number.get("published_device") or "device not stated"
                ax.axhline(published, color=PUBLISHED_COLOR, linestyle="--", linewidth=1.0,
                           label=_short(f"published ({device})", 60))
            if log:
                ax.set_yscale("log")
                ax.yaxis.set_minor_locator(ticker.NullLocator())
                ax.yaxis.set_major_locator(ticker.LogLocator(numticks=5))
            else:
                ax.yaxis.set_major_locator(ticker.MaxNLocator(5))
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(_tick))
            ax.set_xticks(range(len(models)), [_label(m) for _, m in models])
            ax.tick_params(axis="x", labelsize=7)
            ax.set_xlim(-0.6, len(models) - 0.4)
            unit = number.get("unit") or ""
            ax.set_ylabel(_short(f"{number.get('metric') or ''} [{unit}]" + (" (log)" if log else ""), 40))
            ax.grid(axis="y", color="#dddddd", linewidth=0.6)
            ax.set_axisbelow(True)
            ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=1, fontsize=6.5, frameon=False,
                      borderaxespad=0.2)
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None,
                                                     "Type": None})
        finally:
            plt.close(fig)
    return clean_svg(buf.getvalue(), prefix)
