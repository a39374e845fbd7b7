"""The report's inline text: a sentence, list item or table cell as pieces, written as Markdown or HTML.

The report's wording is built once, in Python (reprokit/report/blocks.py), as pieces; the two
templates lay the pieces out and write them through `write_md` or `write_html` (their `inline`
filter), each escaping text its own way:

- a value (str, int, float or None) is text from the data: escaped by `filters.md_escape` for Markdown
  (pipes, `<`, `&`, newlines, a leading `>`), by control characters shown (reprokit/printable.py) and
  HTML escaping for HTML; None is a dash. Each value is escaped on its own, as one `{{ value }}` of a
  template was;
- `Kit` text (made by `t`) is the kit's own wording: written as it is in Markdown, with `&`, `<` and
  `>` escaped in HTML;
- a list is its pieces one after the other;
- a tuple names its markup, made by the functions below: `strong`, `em`, `code` (backticks in
  Markdown, monospace in HTML), `mono`, `span` and `html_strong` (styled in HTML only), `link` (a link
  in both), `ref` (a link in HTML, its text in Markdown: the Markdown report has no such anchors),
  `anchor` (an anchor Markdown needs; the HTML gives the element the id), `wrap` (what separates two
  pieces in each format: the reports wrap their lines differently, and a table cell's `<br>` is a
  separator in Markdown), `entity` (one character spelled per format) and `per_format`, `md_only`,
  `html_only` (where the two reports word a sentence differently: both wordings side by side, here).

`when` and `joined` help build pieces; `jn` joins values into one text, as the templates' `join` did.

The writers return `MarkdownText` and `Markup`: text escaped for its format, which the templates'
finalize passes as it is (reprokit/report/report.py)."""

from __future__ import annotations

from html import escape as escape_kit
from typing import Any

from markupsafe import Markup, escape

from reprokit.printable import visible
from reprokit.report.filters import md_escape

Piece = Any  # a value, a list of pieces, or a tuple made by the functions below


class MarkdownText(str):
    """Markdown written by `write_md`: its values are escaped already."""


class Kit(str):
    """Text the kit wrote (never data): the report's own wording."""


def t(fmt: str, *args: Piece) -> list:
    """The kit's sentence `fmt` with `args` (pieces: data, markup) in place of its `{}`s."""
    parts = fmt.split("{}")
    if len(parts) != len(args) + 1:
        raise ValueError(f"{len(parts) - 1} places for {len(args)} pieces in {fmt!r}")
    out: list = [Kit(parts[0])]
    for a, p in zip(args, parts[1:]):
        out += [a, Kit(p)]
    return out


def strong(*inner: Piece, cls: str | None = None) -> tuple:
    """Bold in both; `cls` a class for HTML."""
    return ("strong", list(inner), cls)


def html_strong(*inner: Piece) -> tuple:
    """Bold in HTML, plain in Markdown."""
    return ("span", "", list(inner), "strong")


def em(*inner: Piece) -> tuple:
    return ("em", list(inner))


def code(*inner: Piece) -> tuple:
    """A command or file name: `backticks` in Markdown, monospace in HTML."""
    return ("code", list(inner))


def mono(*inner: Piece) -> tuple:
    """Monospace in HTML (an id, a path), plain in Markdown."""
    return ("span", "mono", list(inner), "span")


def span(cls: str, *inner: Piece) -> tuple:
    """Styled in HTML (`<span class=cls>`), plain in Markdown."""
    return ("span", cls, list(inner), "span")


def link(href: Piece, *inner: Piece) -> tuple:
    """A link in both reports; `href` is pieces too (escaped as text)."""
    return ("link", list(inner), href)


def ref(href: Piece, *inner: Piece) -> tuple:
    """A link in the HTML report, its text alone in the Markdown one."""
    return ("ref", list(inner), href)


def anchor(name: Piece) -> tuple:
    """`<a id=name></a>` in Markdown (the HTML report puts the id on the element itself)."""
    return ("anchor", name)


def wrap(md: str, html: str) -> tuple:
    """What separates two pieces in each format, written as it is: where the two reports wrap their
    lines differently, or a separator in Markdown that is a `<br>` in HTML."""
    return ("wrap", md, html)


def entity(md: str, html: str) -> tuple:
    """One character spelled per format, as kit text (`>=` and `&ge;`)."""
    return ("wrap", md, html)


def per_format(md: Piece, html: Piece) -> tuple:
    """Wording the two reports word differently."""
    return ("alt", md, html)


def md_only(*inner: Piece) -> tuple:
    return ("alt", list(inner), [])


def html_only(*inner: Piece) -> tuple:
    return ("alt", [], list(inner))


BR = wrap("", "<br>")  # a line break inside an HTML table cell, nothing in Markdown
NL_MD = wrap("\n", " ")  # a line break in Markdown, a space in HTML
NL_HTML = wrap(" ", "\n")  # a space in Markdown, a line break in HTML


def when(condition: Any, *pieces: Piece) -> list:
    """The pieces if the condition holds, else nothing (the pieces are made either way: a piece that
    needs the condition to be made at all is written with `if`)."""
    return list(pieces) if condition else []


def joined(items: list, sep: Piece = ", ") -> list:
    """The items as pieces with `sep` between them, each escaped on its own."""
    out: list = []
    for i, x in enumerate(items):
        if i:
            out.append(Kit(sep) if isinstance(sep, str) else sep)
        out.append(x)
    return out


def jn(items: Any, sep: str = ", ") -> str:
    """The items joined into one text, as Jinja's `join` filter does (None as "None")."""
    return sep.join(str(x) for x in items)


# -- the writers -------------------------------------------------------------------------------
def write_md(pieces: Piece) -> MarkdownText:
    """The pieces as Markdown (the `inline` filter of report.md.j2)."""
    out: list[str] = []
    _md(pieces, out)
    return MarkdownText("".join(out))


def write_html(pieces: Piece) -> Markup:
    """The pieces as HTML (the `inline` filter of report.html.j2)."""
    out: list[str] = []
    _html(pieces, out)
    return Markup("".join(out))


def write_text(pieces: Piece) -> str:
    """The text alone, unescaped (for the HTML <title>, which autoescape escapes)."""
    out: list[str] = []
    _text(pieces, out)
    return "".join(out)


def _md(p: Piece, out: list[str]) -> None:
    if isinstance(p, list):
        for x in p:
            _md(x, out)
    elif isinstance(p, Kit):
        out.append(p)
    elif not isinstance(p, tuple):
        out.append(md_escape(p))
    elif p[0] == "wrap":
        out.append(p[1])
    elif p[0] == "alt":
        _md(p[1], out)
    elif p[0] in ("span", "ref"):
        _md(p[2] if p[0] == "span" else p[1], out)
    else:
        before, after = _MD_MARKS[p[0]]
        out.append(before)
        _md(p[1], out)
        out.append(after)
        if p[0] == "link":
            _md(p[2], out)
            out.append(")")


_MD_MARKS = {
    "strong": ("**", "**"),
    "em": ("*", "*"),
    "code": ("`", "`"),
    "link": ("[", "]("),
    "anchor": ('<a id="', '"></a>'),
}


def _html_value(v: Any) -> str:
    if v is None:
        return "—"
    return str(escape(visible(v) if isinstance(v, str) else v))


def _html(p: Piece, out: list[str]) -> None:
    if isinstance(p, list):
        for x in p:
            _html(x, out)
    elif isinstance(p, Kit):
        out.append(escape_kit(p, quote=False))
    elif not isinstance(p, tuple):
        out.append(_html_value(p))
    elif p[0] == "wrap":
        out.append(p[2])
    elif p[0] == "alt":
        _html(p[2], out)
    elif p[0] == "anchor":
        return
    elif p[0] in ("link", "ref"):
        out.append('<a href="')
        _html(p[2], out)
        out.append('">')
        _html(p[1], out)
        out.append("</a>")
    else:
        tag, cls, inner = _html_tag(p)
        out.append(f'<{tag} class="{_html_value(cls)}">' if cls else f"<{tag}>")
        _html(inner, out)
        out.append(f"</{tag}>")


def _html_tag(p: tuple) -> tuple[str, str | None, Piece]:
    if p[0] == "strong":
        return "strong", p[2], p[1]
    if p[0] == "em":
        return "em", None, p[1]
    if p[0] == "code":
        return "span", "mono", p[1]
    return p[3], p[1], p[2]  # span, html_strong


def _text(p: Piece, out: list[str]) -> None:
    if isinstance(p, list):
        for x in p:
            _text(x, out)
    elif not isinstance(p, tuple):
        out.append("—" if p is None else str(p))
    elif p[0] == "wrap":
        out.append(p[2])
    elif p[0] == "alt":
        _text(p[2], out)
    elif p[0] != "anchor":
        _text(p[2] if p[0] == "span" else p[1], out)
