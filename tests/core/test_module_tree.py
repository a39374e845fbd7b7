"""docs/architecture.md shows the tree as it is, one line per module (tools/module_tree.py), and at
most 10 modules sit flat in reprokit/ (issue 22)."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("module_tree", REPO / "tools" / "module_tree.py")
module_tree = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(module_tree)


def test_the_note_shows_the_tree_as_it_is():
    assert module_tree.block() in (REPO / "docs" / "architecture.md").read_text(), (
        "docs/architecture.md's module tree is stale: run `python tools/module_tree.py --write`")


def test_every_module_has_a_line():
    lines = module_tree.tree().splitlines()
    modules = [p for p in (REPO / "reprokit").rglob("*.py") if p.name != "__init__.py"]
    assert modules and all(any(line.lstrip().startswith(p.name) for line in lines) for p in modules)
    assert "(no docstring)" not in module_tree.tree()


def test_at_most_ten_modules_sit_flat():
    flat = sorted(p.name for p in (REPO / "reprokit").glob("*.py"))
    assert len(flat) <= 10, flat
