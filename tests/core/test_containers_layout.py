"""The layout rules for the containers and the runners, read from the source (ast): commands
import no other command, one Docker client factory, runners/ and the venv code in no cycle."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "reprokit"


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def imported(path: Path) -> set[str]:
    """Every reprokit module `path` imports (at the top or inside a function), absolute names;
    `from reprokit.x import y` counts as reprokit.x and, when y is a module, reprokit.x.y."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("reprokit")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(
                "reprokit"):
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names
                    if (REPO / Path(*node.module.split(".")) / f"{a.name}.py").is_file()
                    or (REPO / Path(*node.module.split(".")) / a.name / "__init__.py").is_file()}
    return out


def modules() -> dict[str, set[str]]:
    return {module_name(p): imported(p) for p in sorted(PKG.rglob("*.py"))}


def test_no_module_but_the_cli_imports_a_command_module():
    bad = {m: sorted(i for i in imps if i.startswith("reprokit.commands.") and i != m)
           for m, imps in modules().items() if m != "reprokit.cli"}
    assert not {m: i for m, i in bad.items() if i}


def test_docker_clients_come_from_the_one_factory():
    """docker.from_env is called in reprokit/containers/engine.py only."""
    calls = {module_name(p) for p in PKG.rglob("*.py") if "docker.from_env(" in p.read_text()}
    assert calls == {"reprokit.containers.engine"}


def test_runners_and_the_venv_code_import_each_other_in_no_cycle():
    mods = modules()
    runners = {m for m in mods if m.startswith("reprokit.runners.")}
    assert "reprokit.runners.venvs" in runners and "reprokit.envs" not in mods
    # the venv code needs only the runner interface's exception and the bounded process runner (it
    # runs interpreters it does not control); neither needs anything back
    assert mods["reprokit.runners.venvs"] & runners == {"reprokit.runners.base", "reprokit.runners.bounded"}
    assert not mods["reprokit.runners.base"] & runners
    assert not mods["reprokit.runners.bounded"] & runners


def test_the_containers_package_imports_no_runner():
    """containers/ provides images and the one spec of a cell's container (containers/spec.py), which
    it renders into compose files; it imports nothing of runners/ (the runners start the
    containers it describes). The engine's reaper reads a driver's identity (host name, pid alive with
    its start time) from reprokit/probes/processes.py, which starts nothing."""
    mods = modules()
    assert "reprokit.containers.spec" in mods and "reprokit.runners.container" not in mods
    assert "reprokit.probes.processes" in mods["reprokit.containers.engine"]
    for m, imps in mods.items():
        if m.startswith("reprokit.containers"):
            assert not {i for i in imps if i.startswith("reprokit.runners")}, m
