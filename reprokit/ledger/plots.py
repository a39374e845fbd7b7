"""The ledger's plots: per published number, its re-measurements by device model against the published.

Every re-measurement with its interval, by device model, against a horizontal line at the published
value; inline SVG, made as the report makes its plots.

matplotlib (Agg, SVG with text kept as text), then re-serialised by reprokit/report/plots.py
`clean_svg` (ids prefixed per plot, every text escaped, no script). Deterministic: the hash salt is the
plot's own prefix and no date or creator is written, so the same store draws the same bytes. The value
axis is logarithmic when the values drawn (medians, interval ends, the published value) span more than
`LOG_SPAN` (10x). A run stored twice (the original and its copy rejudged with newer data: the same
samples) is drawn once.

Bounded: a device model's runs of one stack kind are drawn one marker each (with its interval) up to
`POINTS_MAX` runs; past that, as their distribution: a box from the first to the third quartile of
the runs' medians, its median marked, whiskers from the lowest to the highest median. A plot draws
at most `POINTS_MAX` markers or one box per device model and stack kind, whatever the run count.

`data` reduces a number to exactly what its plot draws; `key` hashes that (with the prefix and
`STYLE`, changed whenever the drawing changes), so a plot kept under its key in the store
(reprokit/ledger/store.py `plots`) is the plot `render` would draw again.
"""

from __future__ import annotations

import hashlib
import io
import json
import statistics
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from reprokit.report.plots import PUBLISHED_COLOR, RC, clean_svg, shorten  # noqa: E402

LOG_SPAN = 10.0
COLORS = {"original": "#1f77b4", "other": "#d95f02"}
LEGEND = {"original": "original stack (median, interval)", "other": "another stack (median, interval)"}
CLASS_ORDER = {"gpu": 0, "cpu": 1}
POINTS_MAX = 12
STYLE = "ledger-plot-2"  # changed whenever render draws the same data differently
BOX_LEGEND = {"original": "original stack (runs' medians: quartiles, min-max)",
              "other": "another stack (runs' medians: quartiles, min-max)"}


def _tick(v: float, _pos=None) -> str:
    """A tick label as plain text (mathtext is off: labels from data are never parsed as TeX)."""
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:g}"


def _label(model: str) -> str:
    """A device model on at most two lines under its column."""
    lines = textwrap.wrap(model, 22)
    return "\n".join(lines[:1] + [shorten(" ".join(lines[1:]), 22)] if len(lines) > 1 else lines)


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


def _kind(m: dict) -> str:
    return "original" if m.get("stack_kind") == "original" else "other"


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def data(number: dict) -> dict | None:
    """Exactly what the plot of one published number (ledger.json `numbers` entry) draws, as plain
    JSON values; None when nothing is drawn. `points`: per stack kind, each run as (x, median, below,
    above), x the device model's place, a model's runs of that kind spread over [-0.3, 0.3] around it
    in date order (shifted aside when both kinds are drawn); `boxes`: per stack kind, (x, min, first
    quartile, median, third quartile, max) of the runs' medians of a model with more than POINTS_MAX
    runs of that kind."""
    ms = [m for m in drawn(number["measurements"]) if m["measured"] is not None]
    if not ms:
        return None
    models = sorted({_model(m) for m in ms}, key=lambda d: (CLASS_ORDER.get(d[0], 2), d[1]))
    published = number.get("published")
    values = [v for m in ms for v in (m["measured"], m["ci_low"], m["ci_high"]) if v is not None]
    log = uses_log(values + ([published] if published else [])) and all(v > 0 for v in values)
    points: dict[str, list] = {"original": [], "other": []}
    boxes: dict[str, list] = {"original": [], "other": []}
    for i, model in enumerate(models):
        mine = [m for m in ms if _model(m) == model]
        kinds = {k: [m for m in mine if _kind(m) == k] for k in ("original", "other")}
        both = all(kinds.values())
        for kind, runs in kinds.items():
            centre = i + ((-0.17 if kind == "original" else 0.17) if both else 0.0)
            half = 0.13 if both else 0.3
            if len(runs) > POINTS_MAX:
                q1, med, q3 = _quartiles([m["measured"] for m in runs])
                boxes[kind].append([centre, min(m["measured"] for m in runs), q1, med, q3,
                                    max(m["measured"] for m in runs)])
                continue
            for j, m in enumerate(runs):
                x = centre + (0.0 if len(runs) == 1 else -half + 2 * half * j / (len(runs) - 1))
                lo = m["ci_low"] if m["ci_low"] is not None else m["measured"]
                hi = m["ci_high"] if m["ci_high"] is not None else m["measured"]
                y = m["measured"]
                points[kind].append([x, y, max(y - lo, 0.0), max(hi - y, 0.0)])
    device = number.get("published_device") or "device not stated"
    unit = number.get("unit") or ""
    return {"models": [_label(m) for _, m in models], "log": log, "published": published,
            "published_label": shorten(f"published ({device})", 60),
            "ylabel": shorten(f"{number.get('metric') or ''} [{unit}]" + (" (log)" if log else ""), 40),
            "points": points, "boxes": boxes}


def key(drawn_data: dict, prefix: str) -> str:
    """The hash of what a plot draws, its prefix and STYLE: its key in the store's plots."""
    text = json.dumps([STYLE, prefix, drawn_data], sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def number_svg(number: dict, prefix: str) -> str | None:
    """The plot of one published number (ledger.json `numbers` entry), or None when nothing is drawn."""
    got = data(number)
    return None if got is None else render(got, prefix)


def render(d: dict, prefix: str) -> str:
    """The SVG of a plot's `data`."""
    models, log, published = d["models"], d["log"], d["published"]
    width, height = min(7.5, 3.2 + 1.3 * len(models)), 3.0
    with matplotlib.rc_context(RC | {"svg.hashsalt": prefix}):
        fig = plt.figure(figsize=(width, height))
        try:
            # fixed margins (inches): the y label and its ticks, two lines of x labels, the legend above
            ax = fig.add_axes((1.05 / width, 0.6 / height, 1 - 1.2 / width, 1 - 1.15 / height))
            for kind, pts in d["points"].items():
                if pts:
                    xs, ys, below, above = (list(v) for v in zip(*pts))
                    ax.errorbar(xs, ys, yerr=[below, above], fmt="o", markersize=3.5, color=COLORS[kind],
                                ecolor=COLORS[kind], elinewidth=0.9, capsize=2, label=LEGEND[kind])
            for kind, bxs in d["boxes"].items():
                if bxs:
                    stats = [{"whislo": b[1], "q1": b[2], "med": b[3], "q3": b[4], "whishi": b[5],
                              "fliers": []} for b in bxs]
                    style = {"color": COLORS[kind], "linewidth": 0.9}
                    ax.bxp(stats, positions=[b[0] for b in bxs], widths=0.22, manage_ticks=False,
                           boxprops=style, whiskerprops=style, capprops=style,
                           medianprops={"color": COLORS[kind], "linewidth": 1.6})
                    ax.plot([], [], marker="s", linestyle="none", markerfacecolor="none",
                            color=COLORS[kind], label=BOX_LEGEND[kind])
            if published is not None and (published > 0 or not log):
                ax.axhline(published, color=PUBLISHED_COLOR, linestyle="--", linewidth=1.0,
                           label=d["published_label"])
            if log:
                ax.set_yscale("log")
                ax.yaxis.set_minor_locator(ticker.NullLocator())
                ax.yaxis.set_major_locator(ticker.LogLocator(numticks=5))
            else:
                ax.yaxis.set_major_locator(ticker.MaxNLocator(5))
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(_tick))
            ax.set_xticks(range(len(models)), models)
            ax.tick_params(axis="x", labelsize=7)
            ax.set_xlim(-0.6, len(models) - 0.4)
            ax.set_ylabel(d["ylabel"])
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
