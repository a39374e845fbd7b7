"""The run report: results/<run>/report.md, report.html (self-contained) and report.json.

`render(rundir)` reads the run into the model (reprokit/reader/load.py), builds the context
(reprokit/report/context.py), validates it against
report.schema.json, draws one SVG plot per published table (inline in the HTML, files under plots/ for
the Markdown; reprokit/report/plots.py) and writes the three files atomically. The text of both reports
is built once from the context (reprokit/report/blocks.py); the templates of report_templates/ lay it
out, each escaping it its own way (reprokit/report/inline.py).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from reprokit import files, kitdata, results, validate
from reprokit.errors import UserError
from reprokit.kitdata import KitData
from reprokit.printable import visible
from reprokit.reader.load import load
from reprokit.reader.model import Run
from reprokit.report import blocks, plots
from reprokit.report.context import build_context
from reprokit.report.filters import md_escape
from reprokit.report.inline import MarkdownText, write_html, write_md, write_text

TEMPLATES = files.REPO / "report_templates"


def load_report(path: Path) -> dict:
    """A report.json, validated against report.schema.json."""
    return files.read_json(Path(path), "report")


# -- rendering ---------------------------------------------------------------------------------
def _environments() -> tuple[jinja2.Environment, jinja2.Environment]:
    if not (TEMPLATES / "report.html.j2").is_file() or not (TEMPLATES / "report.md.j2").is_file():
        raise UserError(f"report templates missing: expected report.md.j2 and report.html.j2 in "
                        f"{TEMPLATES}; restore report_templates/ from the repository")
    return _jinja(str(TEMPLATES))


def _html_finalize(value: Any) -> Any:
    """None as a dash; a plain string with its control characters shown (reprokit/printable.py):
    autoescape then escapes it. Markup the kit made (the plots' SVG) is kept as it is."""
    if value is None:
        return "—"
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def _md_finalize(value: Any) -> Any:
    """Every value escaped by md_escape, but Markdown the inline writer escaped already."""
    return value if isinstance(value, MarkdownText) else md_escape(value)


def _md_row(cells: list) -> MarkdownText:
    """A Markdown table row of inline cells."""
    return MarkdownText("|" + "".join(" " + write_md(c) + " |" for c in cells))


@cache
def _jinja(templates: str) -> tuple[jinja2.Environment, jinja2.Environment]:
    """The HTML and Markdown environments (cached: each keeps its compiled templates), each with the
    `inline` filter that writes the blocks' pieces in its format."""
    loader = jinja2.FileSystemLoader(templates)
    html = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                              autoescape=jinja2.select_autoescape(("html", "html.j2"), default=True),
                              finalize=_html_finalize,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    md = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, autoescape=False,
                            finalize=_md_finalize, keep_trailing_newline=True, trim_blocks=True,
                            lstrip_blocks=True)
    html.filters.update(inline=write_html, plain=write_text)
    md.filters.update(inline=write_md, md_row=_md_row)
    return html, md


def render(rundir: results.RunDir, data: KitData | None = None) -> list[Path]:
    """Write report.md, report.html and report.json (and plots/*.svg) into the run directory, judged
    with `data`: by default the data the run started with (its kit-data/ snapshot; reprokit/data for a
    run that kept none); a crate's export and verify pass the crate's.

    The context is validated against report.schema.json before anything is written."""
    run = load(rundir)
    return write(run, data or results.run_data(rundir, run.doc))


def write(run: Run, data: KitData) -> list[Path]:
    """Write the report of `run` (read by reprokit/reader/load.py) into its directory, judged with
    `data`."""
    with kitdata.using(data):
        return _write(run)


def _write(run: Run) -> list[Path]:
    rundir = results.RunDir(run.path)
    _environments()  # the templates are there before anything is drawn
    context = build_context(run)
    errs = validate.errors("report", context)
    if errs:
        raise ValueError(f"refusing to write the report of {rundir.path}: report schema: {errs[0]}")
    nums = {r["id"]: r for r in context["numbers"]}
    svgs: dict[str, Markup] = {}
    plot_dir = rundir.path / "plots"
    written = set()
    for section in context["sources"]:
        for table in section["tables"]:
            svg = plots.table_svg([nums[i] for i in table["numbers"]], table["anchor"])
            path = rundir.path / table["plot"]
            files.write_text_atomic(path, svg)
            written.add(path.name)
            # Safe to embed: made by matplotlib and re-serialised by ElementTree, which escapes
            # every text node and attribute (labels come from data).
            svgs[table["anchor"]] = Markup(svg)
    if plot_dir.is_dir():
        for old in plot_dir.glob("*.svg"):
            if old.name not in written:
                old.unlink()
    out = [rundir.path / "report.md", rundir.path / "report.html", rundir.path / "report.json"]
    md, html = render_texts(context, svgs)
    files.write_text_atomic(out[0], md)
    files.write_text_atomic(out[1], html)
    files.write_text_atomic(out[2], json.dumps(context, indent=1, ensure_ascii=False) + "\n")
    return out


def render_texts(context: dict, svgs: dict[str, Markup]) -> tuple[str, str]:
    """report.md and report.html of a context: its text built once (reprokit/report/blocks.py), laid
    out by each template."""
    html_env, md_env = _environments()
    b = blocks.build(context)
    return (md_env.get_template("report.md.j2").render(b=b),
            html_env.get_template("report.html.j2").render(b=b, svgs=svgs))
