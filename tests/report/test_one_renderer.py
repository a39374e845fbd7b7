"""One renderer: each sentence of the report is built once, in Python (reprokit/report/blocks.py and
part_*.py), and both templates only lay it out, each escaping it its own way (reprokit/report/inline.py)."""

import json
import shutil
from pathlib import Path

import jinja2
import pytest
from jinja2 import meta, nodes

from reprokit import results
from reprokit.report import inline, part_head, report
from reprokit.report.inline import code, em, link, mono, ref, span, strong, t

STORED = Path(__file__).resolve().parents[1] / "data" / "runs"
TEMPLATES = Path(report.TEMPLATES)
HOSTILE = "<b>x</b> | & y\n> z"


def _conditions(name: str) -> set[str]:
    """The distinct conditions of a template: {% if %} and {% elif %}, `a if c else b` and `for ... if c`."""
    ast = jinja2.Environment().parse((TEMPLATES / name).read_text())
    found = {repr(n.test) for n in ast.find_all((nodes.If, nodes.CondExpr, nodes.For)) if n.test is not None}
    return found | {repr(e.test) for n in ast.find_all(nodes.If) for e in n.elif_}


def test_a_sentence_built_once_is_in_both_reports(tmp_path, monkeypatch):
    """The first screen's line of a source comes from one builder: change it, and both reports change."""
    rd = results.RunDir(tmp_path / "cpu-a")
    shutil.copytree(STORED / "cpu-a", rd.path)
    monkeypatch.setattr(part_head, "answer", lambda f: t("ONE-RENDERER {}", f["source"] + " & <mark>"))
    md, html, js = (p.read_text() for p in report.render(rd))
    answers = json.loads(js)["first_screen"]
    assert [a["source"] for a in answers] == ["000", "001"]
    assert "- ONE-RENDERER 000 &amp; &lt;mark>" in md and "- ONE-RENDERER 001 &amp; &lt;mark>" in md
    assert '<li id="answer-000">ONE-RENDERER 000 &amp; &lt;mark&gt;</li>' in html
    for a in answers:  # the sentence the builder made is gone from both
        assert a["answer"][:60] not in md and a["answer"][:60] not in html
    assert "- **Source 000**" not in md and '"answer-000"><strong>Source 000</strong>' not in html


def test_the_templates_read_only_the_blocks():
    """Neither template sees the context: they lay out what blocks.build made (and the HTML its plots)."""
    html_env, md_env = report._environments()
    md = meta.find_undeclared_variables(md_env.parse((TEMPLATES / "report.md.j2").read_text()))
    html = meta.find_undeclared_variables(html_env.parse((TEMPLATES / "report.html.j2").read_text()))
    assert md == {"b"} and html == {"b", "svgs"}


def test_the_templates_share_only_layout_conditions():
    """What is left to decide in the templates is layout, and the two share almost none of it. Shared
    now: `part.rows` (a table, or the sentence a part shows instead of an empty one) and `part.failed`
    (the table of failed checks). Each template has its own few more: which rows of a two-column table
    it shows (`row.only`), the HTML's cell classes, `<details>` and glued rows, a row that was not
    measured spanning three columns. Every wording, count and `or "unknown"` is in Python."""
    md, html = _conditions("report.md.j2"), _conditions("report.html.j2")
    assert len(md & html) <= 4, sorted(md & html)
    assert len(md) <= 6 and len(html) <= 16, (sorted(md), sorted(html))


@pytest.mark.parametrize("piece", [
    lambda v: v, lambda v: t("kit {}", v), lambda v: strong(v), lambda v: strong(v, cls=v), lambda v: em(v),
    lambda v: code(v), lambda v: mono(v), lambda v: span(v, v), lambda v: link(["#", v], v),
    lambda v: ref(["#", v], v), lambda v: inline.per_format([v], [v]), lambda v: inline.joined([v, v]),
])
def test_every_piece_escapes_its_data_in_both_formats(piece):
    md, html = inline.write_md(piece(HOSTILE)), inline.write_html(piece(HOSTILE))
    assert "<b>" not in md and "\\|" in md and "&amp; y" in md and "\n" not in md
    assert "<b>" not in html and "&lt;b&gt;" in html and "&amp; y" in html and "&gt; z" in html
    assert "&#34;q&#34;" in inline.write_html(piece('"q"')) and '"q"' not in inline.write_html(piece('"q"'))
    assert "\\>lead" in inline.write_md(piece(">lead"))  # a value's leading > opens no block quote


def test_kit_text_is_written_as_the_templates_wrote_it():
    """The kit's own wording keeps its quotes and Markdown; HTML escapes its `&`, `<` and `>`."""
    kit = t("the run's \"own\" {} (Cumming & Maillardet) `x` K >= 3", None)
    assert inline.write_md(kit) == "the run's \"own\" — (Cumming & Maillardet) `x` K >= 3"
    assert inline.write_html(kit) == "the run's \"own\" — (Cumming &amp; Maillardet) `x` K &gt;= 3"
    with pytest.raises(ValueError):
        t("two {} places {}", "one piece")
