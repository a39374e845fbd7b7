"""The code version of a cell: a digest of the bench/ files its process runs.

A host's history compares a cell's central value across runs (reprokit/run/host_history.py); a run of
an older kit whose workload or timing code differed measured something else, and its move counts as
variation between runs where it is a change of code. The version is the sha256 over the path and
content of every file of bench/ the process imports: bench/harness.py and the cell's workload module,
each with the bench modules they import, followed statically (`import x`, `from x import y`,
`from workloads import y`, in any block: a conditional import counts, so the set is an upper bound).
Framework and standard-library modules are not bench files and do not count.
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

from reprokit import files

HARNESS = "harness.py"
WORKLOADS = "workloads"


def _module_files(name: str, parent: str | None, bench: Path) -> list[Path]:
    """The bench files `import name` (parent None) or `from parent import name` can load."""
    out = []
    if parent is None:
        head = name.split(".")[0]
        out += [bench / f"{head}.py", bench / WORKLOADS / f"{head}.py"]
        if name.startswith(WORKLOADS + "."):
            out += [bench / WORKLOADS / "__init__.py", bench / WORKLOADS / f"{name.split('.', 1)[1]}.py"]
    elif parent == WORKLOADS:
        out += [bench / WORKLOADS / "__init__.py", bench / WORKLOADS / f"{name}.py"]
    else:
        out += [bench / f"{parent}.py", bench / WORKLOADS / f"{parent}.py"]
    return [p for p in out if p.is_file()]


def imports(path: Path, bench: Path) -> set[Path]:
    """The bench files one bench file imports (anywhere in it)."""
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.update(_module_files(a.name, None, bench))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == WORKLOADS:
                for a in node.names:
                    found.update(_module_files(a.name, WORKLOADS, bench))
            else:
                found.update(_module_files(node.module, node.module, bench))
    return found


def closure(start: list[Path], bench: Path) -> set[Path]:
    """The files `start` import, transitively, with themselves."""
    seen: set[Path] = set()
    todo = [p for p in start if p.is_file()]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(imports(p, bench) - seen)
    return seen


@cache
def digest(workload: str, bench: Path = files.BENCH) -> str:
    """sha256 of the bench files a cell of `workload` runs (module doc)."""
    paths = closure([bench / HARNESS, bench / WORKLOADS / f"{workload}.py"], bench)
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(bench).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()
