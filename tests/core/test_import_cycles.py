"""The kit's host modules import in one direction, stage by stage, and in no cycle, counting the
imports placed inside functions (cycles hide behind them).

The stages are reprokit.STAGES (reprokit/__init__.py), earliest first: the flat modules and the
formats -> catalog -> probes -> reader -> analysis -> plan -> containers -> runners -> run -> report
-> crate -> commands -> cli, one stage per package, in the order of docs/architecture.md. A module may
import its own stage and earlier ones; an import of a later stage fails, unless it is one of the
EXCEPTIONS below, each named with its reason (none is left). KNOWN names the cycles known (none).

More rules: the analysis and the report read a run through reprokit/reader/ and import nothing of run/
or runners/ (execution code); the run stage imports the analysis it needs, never receives it as a
callback; reprokit/run/record.py is the one module that writes run.json."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import reprokit

PACKAGE = Path(__file__).resolve().parents[2] / "reprokit"
KNOWN: list[set[str]] = []

STAGES = [{"reprokit", *names} if i == 0 else set(names) for i, names in enumerate(reprokit.STAGES)]

EXCEPTIONS: dict[tuple[str, str], str] = {}  # (importer, imported): why; none left


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for p in package.rglob("*.py"):
        parts = p.relative_to(package.parent).with_suffix("").parts
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
    assert ranks, f"{module} is in no stage: add it to reprokit.STAGES (reprokit/__init__.py)"
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


def test_one_stage_per_package_in_the_order_of_the_architecture_note():
    """From the catalog's to the report's, each stage is one package, and docs/architecture.md's
    module tree lists them in the order of their stages (runners and containers each have their own)."""
    note = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    listed = re.findall(r"^  (\w+)/ ", note, re.M)  # the module tree's packages, in its order
    report = next(i for i, names in enumerate(STAGES) if "report" in names)
    staged = []
    for names in STAGES[1:report + 1]:
        assert len(names) == 1 and (PACKAGE / next(iter(names)) / "__init__.py").is_file(), names
        staged += names
    assert [n for n in listed if n in staged] == staged


# -- analysis and report read a run without the execution code --------------------------------------
EXECUTION = ("reprokit.run", "reprokit.runners")
READERS = ("reprokit.analysis", "reprokit.report")


def _execution_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) for every import of run/ or runners/ by analysis/ or report/."""
    return sorted((a, b) for a, imps in graph.items() if a.startswith(READERS) for b in imps
                  if any(b == x or b.startswith(x + ".") for x in EXECUTION))


def test_the_analysis_and_the_report_import_nothing_of_run_or_runners():
    """They read results through reprokit/reader/ (and results.py): no exception."""
    assert _execution_imports(_graph()) == []
    assert "reprokit.reader.load" in _graph()["reprokit.report.report"]


def test_the_execution_check_sees_an_import_inside_a_function():
    graph = {"reprokit.report.run_health": {"reprokit.reader.cells"},
             "reprokit.report.context": {"reprokit.reader.reconcile"}}
    assert _execution_imports(graph) == []
    graph["reprokit.report.run_health"].add("reprokit.run.reconcile")
    graph["reprokit.report.context"].add("reprokit.runners")
    assert _execution_imports(graph) == [("reprokit.report.context", "reprokit.runners"),
                                         ("reprokit.report.run_health", "reprokit.run.reconcile")]


# -- no callback into the analysis ------------------------------------------------------------------
def _analysis_passed(path: Path) -> list[str]:
    """'line: name' of every analysis function a module passes as an argument (a callback), found
    from the names its imports bind to analysis modules."""
    tree = ast.parse(path.read_text())
    bound = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             and (n.module or "") == "reprokit.analysis" for a in n.names}
    bound |= {a.asname or a.name.rsplit(".", 1)[-1] for n in ast.walk(tree) if isinstance(n, ast.Import)
              for a in n.names if a.name.startswith("reprokit.analysis.")}
    out = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id in bound \
                    and _is_function(arg.value.id, arg.attr):
                out.append(f"{arg.lineno}: {arg.value.id}.{arg.attr}")
    return out


def _is_function(module: str, name: str) -> bool:
    """Whether reprokit.analysis.<module>.<name> is a function (a constant passed on is no callback)."""
    import importlib
    import inspect

    try:
        return inspect.isfunction(getattr(importlib.import_module(f"reprokit.analysis.{module}"), name))
    except (ImportError, AttributeError):
        return True


def test_no_analysis_function_is_passed_as_a_callback():
    """The run loop imports the decision functions it needs (analysis is an earlier stage than run):
    a callback passed down from a command is an import the import test cannot see."""
    passed = {str(p.relative_to(PACKAGE)): found for p in PACKAGE.rglob("*.py")
              if "analysis" not in p.parts and (found := _analysis_passed(p))}
    assert passed == {}
    assert "reprokit.analysis.decidability" in _graph()["reprokit.run.serial"]
    assert "reprokit.analysis.decidability" in _graph()["reprokit.run.driver"]


def test_the_callback_check_sees_one(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from reprokit.analysis import decidability\n\ndrive(x, judge=decidability.judge)\n")
    assert _analysis_passed(f) == ["3: decidability.judge"]


# -- one writer of run.json ---------------------------------------------------------------------------
RUN_RECORD_WRITER = "reprokit.run.record"
# the calls that write a file, and the words that name the run's record in them
_WRITE_CALLS = {"write_json_atomic", "write_text_atomic", "write_text", "write_bytes", "open", "replace",
                "rename", "copy", "copy2", "copyfile", "move", "symlink_to", "hardlink_to", "link"}
_RUN_RECORD = re.compile(r"\brun_file\b|run\.json")


def _writes_run_json(source: str) -> list[int]:
    """The lines of `source` that write run.json: a call that writes a file and names the run's
    record (its path, `run_file` or "run.json", or, for write_json_atomic, the schema "run"). `open`
    counts when its mode writes; run.json in a comment or a docstring does not, nor a call of
    record.write_run (the one way in)."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name not in _WRITE_CALLS:
            continue
        text = ast.get_source_segment(source, node) or ""
        if name in ("write_json_atomic", "write_text_atomic") and (
                _RUN_RECORD.search(text) or any(isinstance(a, ast.Constant) and a.value == "run"
                                                for a in node.args[2:] + [k.value for k in node.keywords])):
            out.append(node.lineno)
        elif name == "open":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            writes = isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+")
            if writes and _RUN_RECORD.search(text):
                out.append(node.lineno)
        elif _RUN_RECORD.search(text):
            out.append(node.lineno)
    return sorted(out)


def _run_json_writers(package: Path = PACKAGE) -> dict[str, list[int]]:
    """{module: the lines that write run.json} over the package, every module that writes it."""
    found = {}
    for name, path in _modules(package).items():
        lines = _writes_run_json(path.read_text())
        if lines:
            found[name] = lines
    return found


def test_run_json_has_one_writer():
    """Every write of run.json goes through reprokit/run/record.py `write_run` (RunRecord, the driver,
    the concurrent runner, the JIT warm-up and reconcile's RecordWriter call it): no other module
    writes the run's record, and results.RunDir has no writer of it."""
    writers = _run_json_writers()
    assert list(writers) == [RUN_RECORD_WRITER], writers
    from reprokit import results

    assert not hasattr(results.RunDir, "write_run")


def test_the_writer_check_finds_a_second_writer(tmp_path):
    """Planted writes of run.json in a copy of the package, each one the check must name."""
    copy = tmp_path / "reprokit"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "schemas"))
    assert list(_run_json_writers(copy)) == [RUN_RECORD_WRITER]
    planted = {
        "run/execute_concurrent.py": "    files.write_json_atomic(rundir.run_file, run, \"run\")\n",
        "run/jit_warmup.py": "    (rundir.path / \"run.json\").write_text(json.dumps(run))\n",
        "report/run_health.py": "    files.write_json_atomic(path, run, \"run\")\n",
        "report/context.py": ("    with open(rundir.path / \"run.json\", \"w\") as f:\n"
                              "        f.write(\"{}\")\n"),
        "run/reconcile.py": "    shutil.copy(tmp, rundir.path / \"run.json\")\n",
        "containers/engine.py": "    os.replace(tmp, rundir.run_file)\n",
    }
    for rel, line in planted.items():
        path = copy / rel
        clean = path.read_text()
        path.write_text(clean + "\n\ndef _planted(rundir, run, path, tmp, files, json, os, shutil):\n" + line)
        name = "reprokit." + rel[:-3].replace("/", ".")
        assert sorted(_run_json_writers(copy)) == sorted([RUN_RECORD_WRITER, name]), rel
        path.write_text(clean)
    # reading it, or naming it in words, is no write
    assert _writes_run_json('(p / "run.json").is_file()\nx = open(rundir.run_file)\n'
                            '"""writes run.json"""\n# run.json\nrecord.write_run(rundir, run)\n') == []
