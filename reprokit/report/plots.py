"""Report plots: published vs measured per table, as small self-contained SVG strings.

matplotlib (Agg, SVG output with text kept as <text>), then the SVG is parsed and re-serialised with
ElementTree: every id gets a per-plot prefix (several plots share one HTML page) and all text is
escaped by the serialiser, whatever the labels contain. Output is deterministic (fixed hash salt,
no date metadata), so re-rendering a report gives identical files.
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker, transforms  # noqa: E402

from reprokit.analysis import verdicts  # noqa: E402

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

LABEL_MAX = 50
CHAR_IN = 0.068          # generous width of one 8 pt label character, inches
PUBLISHED_COLOR = "#7f7f7f"
MEASURED_COLOR = "#1f77b4"
VERDICT_COLORS = {verdicts.REPRODUCED: "#1a7f37", verdicts.DEVIATES_FASTER: "#b35900",
                  verdicts.DEVIATES_SLOWER: "#b00020", verdicts.DEVIATES_HIGHER: "#b00020",
                  verdicts.DEVIATES_LOWER: "#b35900", verdicts.EFFICIENCY_SIMILAR: "#1f5fa8",
                  verdicts.EFFICIENCY_HIGHER: "#1f5fa8", verdicts.EFFICIENCY_LOWER: "#1f5fa8"}
RC = {"svg.fonttype": "none", "text.parse_math": False, "font.size": 8, "axes.titlesize": 9,
      "font.family": "DejaVu Sans"}


def shorten(text: str, limit: int = LABEL_MAX) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _bar_labels(rows: list[dict]) -> list[str]:
    labels = [shorten(r["row_label"]) for r in rows]
    counts = {lbl: labels.count(lbl) for lbl in labels}
    return [lbl if counts[lbl] == 1 else f"{shorten(lbl, 34)} [{shorten(r['published_gpu'], 26)}]"
            for lbl, r in zip(labels, rows)]


def _tick(v: float) -> str:
    return f"{v:,.0f}" if v >= 1e4 else f"{v:g}"


def _minor_tick(lo: float, hi: float):
    """Label the 2x and 5x minor ticks when the axis spans few decades (else none)."""
    few = hi / lo < 10 ** 2.5

    def fmt(v: float, _pos) -> str:
        if not few or v <= 0:
            return ""
        mantissa = round(v / 10 ** math.floor(math.log10(v) + 1e-9), 6)
        return _tick(v) if mantissa in (2.0, 5.0) else ""
    return fmt


def _groups(rows: list[dict]) -> list[tuple[str, str, list[dict]]]:
    """Rows grouped by (metric as published, unit), first-seen order."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["metric_as_published"], r["unit"]), []).append(r)
    return [(m, u, rs) for (m, u), rs in groups.items()]


def _panel(ax, metric: str, unit: str, rows: list[dict]) -> None:
    n = len(rows)
    ys = list(range(n))
    h = 0.38
    pub = [r["published"] if r["published"] and r["published"] > 0 else float("nan") for r in rows]
    ax.barh([y - h / 2 for y in ys], pub, height=h, color=PUBLISHED_COLOR, label="published")
    mys, mvals, lo, hi = [], [], [], []
    for y, r in zip(ys, rows):
        if r["measured"] is not None and r["measured"] > 0:
            mys.append(y + h / 2)
            mvals.append(r["measured"])
            low = r["ci_low"] if r.get("ci_low") is not None else r["measured"]
            high = r["ci_high"] if r.get("ci_high") is not None else r["measured"]
            lo.append(max(r["measured"] - low, 0.0))
            hi.append(max(high - r["measured"], 0.0))
    if mvals:
        ax.barh(mys, mvals, height=h, color=MEASURED_COLOR, label="this run (median, 95% CI)",
                xerr=[lo, hi], error_kw={"ecolor": "#222222", "elinewidth": 0.8, "capsize": 2})
    ends = [m - d for m, d in zip(mvals, lo)] + [m + d for m, d in zip(mvals, hi)]
    values = [v for v in pub + mvals + ends if v == v and v > 0]     # the CI bars stay inside
    ax.set_xscale("log")
    if values:
        ax.set_xlim(min(values) / 3, max(v for v in values) * 3)
    left = (min(values) / 3) if values else 1.0
    for y, r in zip(ys, rows):
        if r["measured"] is None:
            why = r.get("note") or "not measured"
            ax.text(left, y + h / 2, " " + shorten(why, 60), va="center", ha="left", fontsize=7,
                    color="#a00000")
    # The verdict of each row, right of the axes (x in axes coordinates, y in data coordinates).
    where = transforms.blended_transform_factory(ax.transAxes, ax.transData)
    for y, r in zip(ys, rows):
        label = r.get("verdict") or ""
        if r.get("implausible"):
            label += " / IMPLAUSIBLE" if label else "IMPLAUSIBLE"
        if label:
            ax.text(1.01, y, shorten(label, 30), transform=where, va="center", ha="left", fontsize=6.5,
                    color=VERDICT_COLORS.get(r.get("verdict"), "#444444"))
    # Plain tick labels (mathtext is off so that labels from data are never parsed as TeX).
    lo, hi = ax.get_xlim()
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: _tick(v)))
    ax.xaxis.set_minor_formatter(ticker.FuncFormatter(_minor_tick(lo, hi)))
    ax.tick_params(axis="x", which="minor", labelsize=6.5)
    ax.set_yticks(ys, _bar_labels(rows))
    ax.invert_yaxis()
    ax.set_title(shorten(f"{metric} [{unit}]", 90), loc="left")
    ax.set_xlabel(f"{unit} (log scale); error bar = 95% CI of the median")
    ax.grid(axis="x", which="major", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def table_svg(rows: list[dict], prefix: str) -> str:
    """Grouped bars (published vs this run's median with its 95 % CI) per metric of one table."""
    groups = _groups(rows)
    heights = [0.35 + 0.3 * len(rs) for _, _, rs in groups]   # inches of axes per panel
    gap, top, bottom, width = 0.85, 0.35, 0.55, 10.0
    total = sum(heights) + gap * (len(groups) - 1) + top + bottom
    longest = max(len(lbl) for _, _, rs in groups for lbl in _bar_labels(rs))
    left = min(0.6, (0.3 + CHAR_IN * longest) / width)          # room for the row labels
    with matplotlib.rc_context(RC | {"svg.hashsalt": prefix}):
        fig = plt.figure(figsize=(width, total))
        try:
            grid = fig.add_gridspec(len(groups), 1, height_ratios=heights, left=left, right=0.80,
                                    top=1 - top / total, bottom=bottom / total,
                                    hspace=gap / (sum(heights) / len(groups)))
            axes = [fig.add_subplot(grid[i, 0]) for i in range(len(groups))]
            for ax, (metric, unit, rs) in zip(axes, groups):
                _panel(ax, metric, unit, rs)
            axes[0].legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2, fontsize=7,
                           frameon=False, borderaxespad=0.2)
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None,
                                                     "Format": None, "Type": None})
        finally:
            plt.close(fig)
    return clean_svg(buf.getvalue(), prefix)


_URL_REF = re.compile(r"url\(#([^)]+)\)")


def clean_svg(svg: str, prefix: str) -> str:
    """Re-serialise an SVG without prolog or DOCTYPE, with every id prefixed by `prefix`."""
    root = ET.fromstring(svg.encode("utf-8"))
    href = f"{{{XLINK_NS}}}href"
    for el in root.iter():
        for name, value in list(el.attrib.items()):
            if name == "id":
                el.set(name, f"{prefix}-{value}")
            elif name in (href, "href") and value.startswith("#"):
                el.set(name, f"#{prefix}-{value[1:]}")
            elif "url(#" in value:
                el.set(name, _URL_REF.sub(lambda m: f"url(#{prefix}-{m.group(1)})", value))
    out = ET.tostring(root, encoding="unicode")
    if re.search(r"<\s*script", out, re.IGNORECASE):  # cannot happen after ET; a last fence
        raise ValueError("generated SVG contains a script element")
    return out + "\n"
