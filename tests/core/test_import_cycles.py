"""The kit's host modules import in one direction, stage by stage, and in no cycle, counting the
imports placed inside functions (issue 22: four cycles hid behind them).

Stages, earliest first: the formats (flat: errors, files, validate, results, ...) -> catalog -> probes
-> plan -> runners and containers -> run -> analysis -> report -> crate, commands and generate -> cli.
A module may import its own stage and earlier ones; an import of a later stage fails, unless it is one
of the EXCEPTIONS below, each named with its reason. An exception that is no longer used fails too, so
the list only shrinks: it is empty since host_preflight (which probes the engine, images and
environments) moved from the plan stage to the runners'. The last cycle, run.execute <->
run.execute_concurrent, went when both began to write the run's record through
reprokit/run/record.py; KNOWN names none."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "reprokit"
KNOWN: list[set[str]] = []

STAGES = [
    {"reprokit", "errors", "files", "validate", "console", "printable", "checks", "results", "schemas",
     "data"},
    {"catalog"},
    {"probes"},
    {"plan"},
    {"runners", "containers"},
    {"run"},
    {"analysis"},
    {"report"},
    {"crate", "commands", "generate"},
    {"cli"},
]

EXCEPTIONS: dict[tuple[str, str], str] = {}  # (importer, imported): why; none left


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):  # every import, in functions too
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t not in (name, "reprokit"):
                    graph[name].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def stage(module: str) -> int:
    """The rank of a module's stage: reprokit.X and reprokit.X.* are stage X's."""
    top = module.split(".")[1] if "." in module else module
    ranks = [i for i, names in enumerate(STAGES) if top in names]
    assert ranks, f"{module} is in no stage: add it to STAGES (tests/core/test_import_cycles.py)"
    return ranks[0]


def _backward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every import of a later stage: (importer, imported). `from reprokit.run import lifecycle` counts
    once, as reprokit.run.lifecycle (not again as the package reprokit.run)."""
    packages = {m for m, p in _modules().items() if p.name == "__init__.py"}
    return {(a, b) for a, imps in graph.items() for b in imps if stage(b) > stage(a)
            and not (b in packages and any(x.startswith(b + ".") for x in imps))}


def test_no_import_cycle_but_the_one_named():
    cycles = _cycles(_graph())
    assert [c for c in cycles if c not in KNOWN] == [], cycles


def test_the_check_sees_an_import_inside_a_function():
    graph = {"a": {"b"}, "b": set()}
    assert _cycles(graph) == []
    graph["b"].add("a")  # b imports a inside a function: still an edge
    assert _cycles(graph) == [{"a", "b"}]
    # on the kit itself: execute_concurrent imports the Slurm runner only inside its functions
    assert "reprokit.runners.slurm" in _graph()["reprokit.run.execute_concurrent"]


def test_every_module_is_in_a_stage():
    for m in _modules():
        stage(m)


def test_imports_go_from_later_stages_to_earlier_ones():
    backward = _backward(_graph())
    unexplained = sorted(backward - set(EXCEPTIONS))
    assert unexplained == [], ("imports of a later stage (move the function, or name the exception "
                               f"with its reason): {unexplained}")


def test_every_exception_is_still_needed():
    assert sorted(set(EXCEPTIONS) - _backward(_graph())) == []


def test_the_direction_check_sees_an_import_inside_a_function():
    """plan.py imports nothing of a later stage; made to import the run inside a function, it would
    fail the check."""
    graph = {"reprokit.plan.plan": {"reprokit.catalog.suites"}, "reprokit.catalog.suites": set(),
             "reprokit.run.execute": {"reprokit.plan.plan"}}
    assert _backward(graph) == set()
    graph["reprokit.plan.plan"].add("reprokit.run.execute")
    assert _backward(graph) == {("reprokit.plan.plan", "reprokit.run.execute")}
    # on the kit itself: Plan.run_stack imports the fallback chains inside a method, and is seen
    assert "reprokit.plan.fallback" in _graph()["reprokit.plan.plan"]
