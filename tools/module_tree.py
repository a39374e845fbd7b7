"""The module tree of docs/architecture.md: one line per host module, the first line of its docstring.

    python tools/module_tree.py           print the tree
    python tools/module_tree.py --write   put it into docs/architecture.md, between its markers

tests/core/test_module_tree.py fails when the note's tree is not the one this prints.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "reprokit"
DOC = REPO / "docs" / "architecture.md"
sys.path.insert(0, str(REPO))
from reprokit import STAGES  # noqa: E402  (the checkout's, not an installed one)

# the packages in the order of the stages the data passes (reprokit.STAGES), then the rest
ORDER = [name for names in STAGES[1:] for name in names] + ["schemas", "data"]
START = "<!-- module tree: made by `python tools/module_tree.py --write`; tests/core/test_module_tree.py -->"
END = "<!-- end of the module tree -->"
WIDTH = 30
HEAD = [("reproduce.py", "thin entry point (also installed as the `reprokit` command)"),
        ("reprokit/", "HOST side, Python 3.11: never runs inside a stack")]
TAIL = [("bench/", "STACK side, Python 3.5 syntax, stdlib + the framework, never imports reprokit"),
        ("  harness.py timing.py", "job file in, one JSON result per cell out; sampling with a time budget"),
        ("  stack_fingerprint.py", "what the stack says about itself"),
        ("  workloads/", "sNNN_<framework>.py: one module per published source and framework"),
        ("images/", "per stack: recipe.yaml -> generated Dockerfile (GPU recipe + CPU flavour)"),
        ("  _blocks/", "shared Dockerfile blocks, OS package pins per distro, fetch_sha256.sh"),
        ("compose/", "one compose file per suite")]


def first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.strip().splitlines()[0] if doc.strip() else "(no docstring)"


def line(name: str, text: str) -> str:
    return f"{name:<{WIDTH}}{text}" if len(name) < WIDTH else f"{name} {text}"


def tree() -> str:
    out = [line(n, t) for n, t in HEAD]
    flat = sorted(PKG.glob("*.py"), key=lambda p: (p.stem != "__init__", p.stem))
    out += [line(f"  {p.name}", first_line(p)) for p in flat]
    packages = sorted((p for p in PKG.iterdir() if (p / "__init__.py").is_file()),
                      key=lambda p: (ORDER.index(p.name) if p.name in ORDER else len(ORDER), p.name))
    for pkg in packages:
        out.append(line(f"  {pkg.name}/", first_line(pkg / "__init__.py")))
        out += [line(f"    {p.name}", first_line(p))
                for p in sorted(pkg.glob("*.py")) if p.name != "__init__.py"]
    out += [line(n, t) for n, t in TAIL]
    return "\n".join(out) + "\n"


def stage_line() -> str:
    """The stages in the order the data passes (reprokit.STAGES), as one line of the note."""
    flat = ", ".join(STAGES[0])
    return "Stages, earliest first: the flat modules (" + flat + ") -> " + " -> ".join(
        "/".join(names) for names in STAGES[1:]) + "."


def block() -> str:
    return f"{START}\n{stage_line()}\n\n```\n{tree()}```\n{END}"


def write() -> None:
    text = DOC.read_text()
    if START in text and END in text:
        a, b = text.index(START), text.index(END) + len(END)
    else:  # the first time: the hand-written tree, the note's first code block
        a = text.index("```")
        b = text.index("```", a + 3) + 3
    DOC.write_text(text[:a] + block() + text[b:])


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    elif sys.argv[1:]:
        sys.exit(__doc__)
    else:
        sys.stdout.write(tree())
