"""The report's formatting: numbers, published figures, ratios, seconds and Markdown escaping, used
by the context (reprokit/report/context.py) and as the templates' Jinja filters (report.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from reprokit.printable import visible
from reprokit.report import report_rows


def fmt_num(v: Any, sig: int = 4) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10 ** sig:
        return f"{v:,.0f}"
    if a >= 1e-4:
        text = f"{v:.{sig}g}"
        return f"{v:,.0f}" if "e" in text else text
    return f"{v:.{sig - 1}e}"


def fmt_published(v: Any) -> str:
    """A published value as written in the data (shortest round-trip form)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def fmt_ratio(v: Any) -> str:
    return "—" if v is None else report_rows.factor_text(v)


def fmt_seconds(v: Any) -> str:
    if v is None:
        return "—"
    if v < 120:
        return f"{v:.1f} s"
    m, s = divmod(int(round(v)), 60)
    h, m = divmod(m, 60)
    return f"{v:.0f} s ({h:d}:{m:02d}:{s:02d})"


def md_escape(value: Any) -> str:
    """Text safe in a Markdown table cell: no pipes, no raw HTML, one line.

    `<` and `&` are escaped (no tag or entity can form); `>` is left as typed (arithmetic such as
    "-> 1,315% of peak" stays readable) except at the start, where it would open a block quote."""
    if value is None:
        return "—"
    text = visible(str(value)).replace("&", "&amp;").replace("<", "&lt;")
    text = " ".join(text.replace("|", "\\|").split("\n")).replace("\r", " ")
    return "\\" + text if text.startswith(">") else text


def slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "x"


def flat(value: Any, limit: int = 300) -> str:
    """One line of at most `limit` characters: a string as it is, anything else as sorted JSON."""
    if value is None:
        return "—"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
