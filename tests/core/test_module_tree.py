"""docs/architecture.md shows the tree as it is, one line per module (tools/module_tree.py), and at
most 10 modules sit flat in reprokit/."""

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


def test_the_readmes_layout_lists_the_stages_in_their_order():
    """The README's layout block names every stage package, in the order of reprokit.STAGES (the one
    list the import test and docs/architecture.md also follow), so it cannot drift from the code."""
    import re

    from reprokit import STAGES

    readme = (REPO / "README.md").read_text()
    block = readme[readme.index("## Layout"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    stage_of = {name: i for i, names in enumerate(STAGES) for name in names}
    named = [m for line in block.splitlines() if line.startswith("  ")
             for m in re.findall(r"\b([a-z_]+)/?(?=\s)", line.split("  ")[1] + " ") if m in stage_of]
    packages = [n for names in STAGES[1:] for n in names if (REPO / "reprokit" / n).is_dir()]
    assert [n for n in named if n in packages] == packages, named
    ranks = [stage_of[n] for n in named if n not in ("data", "schemas")]  # files, not a stage's code
    assert ranks == sorted(ranks), named
