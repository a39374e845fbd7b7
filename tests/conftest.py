import json
import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


_NVML_GPUS: list = []


# Tests that use the one Docker engine or the one Slurm cluster of this machine (a test stops the
# engine, another sets a node down): under pytest-xdist (scripts/test.sh) they all run in one worker,
# one after the other; every other module is a group of its own, so its module fixtures run once.
_ENGINE_USE = re.compile(r"docker_client\(|smoke_image|pytest\.mark\.docker|slurm-setup|\bcluster\b")


def _xdist_group(path: Path, cache: dict[Path, str]) -> str:
    if path not in cache:
        uses = path.name.startswith("test_slurm") or bool(_ENGINE_USE.search(path.read_text()))
        cache[path] = "engines" if uses else str(path.relative_to(REPO))
    return cache[path]


def _heaviest_groups_first(items, group_of: dict) -> None:
    """Order the items group by group, the group whose modules took longest first (their seconds
    measured in tests/data/module_seconds.json, written by tools/record_test_seconds.py; a module not
    there counts as 0 s). pytest-xdist hands the groups out in this order (scripts/test.sh turns off
    its own reordering by test count), so no long group is left to run alone at the end."""
    seconds = json.loads((REPO / "tests" / "data" / "module_seconds.json").read_text())["seconds"]
    cost: dict[str, float] = {}
    for path, group in group_of.items():
        cost[group] = cost.get(group, 0.0) + seconds.get(str(path.relative_to(REPO)), 0.0)
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        first.setdefault(group_of[Path(item.fspath)], i)

    def key(item):
        group = group_of[Path(item.fspath)]
        return -cost[group], first[group]

    items.sort(key=key)  # stable: within a group, the collection order


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (its hook suffixes node ids)
def pytest_collection_modifyitems(config, items):
    groups: dict[Path, str] = {}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_xdist_group(Path(item.fspath), groups)))
    _heaviest_groups_first(items, groups)
    _skip_gpu_tests_without_a_gpu(items)


def _skip_gpu_tests_without_a_gpu(items):
    """Tests marked `gpu` run only where NVML sees an NVIDIA GPU; elsewhere they are skipped with
    NVML's own reason (a skipped test is not a passed one: the report counts them apart)."""
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if not marked:
        return
    if not _NVML_GPUS:
        from reprokit.probes import fingerprint

        _NVML_GPUS.append(fingerprint.nvml_gpus())
    gpus, nvidia = _NVML_GPUS[0]
    if gpus:
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {nvidia.get('reason') or 'NVML sees none'}")
    for item in marked:
        item.add_marker(skip)


def suite_params(workload: str) -> dict:
    """The params of the first cell of the suites that runs `workload`: the published shape, data set
    and optimiser, whose one copy is the suite file (a workload's default for them is GIVEN)."""
    from reprokit.catalog import suites

    for name in suites.suite_names():
        for c in suites.load_suite(name).cells:
            if c.workload == workload:
                return dict(c.params)
    raise LookupError(f"no suite cell runs {workload}")


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def data_copy(tmp_path) -> Path:
    """A copy of the packaged kit data (reprokit/data) to edit, for `kitdata.using(KitData(path))`."""
    import shutil

    from reprokit import kitdata
    root = tmp_path / "data"
    shutil.copytree(kitdata.PACKAGED, root, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return root


def docker_client():
    """A client of this machine's Docker engine (reprokit.containers.engine); the test is skipped
    only when no engine answers (CI installs and starts one: scripts/test.sh)."""
    from reprokit.containers import engine
    from reprokit.errors import UserError

    try:
        return engine.client()
    except UserError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def image_lock(tmp_path_factory):
    """An image lock file of the test module's own (images/lock.json is left alone), named by
    REPROKIT_IMAGE_LOCK for the module and every driver it starts."""
    path = tmp_path_factory.mktemp("lock") / "lock.json"
    old = os.environ.get("REPROKIT_IMAGE_LOCK")
    os.environ["REPROKIT_IMAGE_LOCK"] = str(path)
    yield path
    if old is None:
        os.environ.pop("REPROKIT_IMAGE_LOCK", None)
    else:
        os.environ["REPROKIT_IMAGE_LOCK"] = old


@pytest.fixture(scope="module")
def smoke_image(image_lock):
    """The smoke-python CPU image, built (or found built from the same inputs) into image_lock."""
    from reprokit.containers.build import build_image

    return build_image(docker_client(), "smoke-python", say=lambda *_: None)


@pytest.fixture(scope="session")
def theano_python() -> str:
    """The theano-0.9 stack's venv (numpy < 2), created exactly as the local runner creates it and
    cached under REPROKIT_VENV_DIR; REPROKIT_THEANO_PYTHON overrides it."""
    from reprokit.catalog import suites
    from reprokit.runners import venvs
    from reprokit.runners.base import StackUnavailable

    explicit = os.environ.get("REPROKIT_THEANO_PYTHON")
    if explicit:
        return explicit
    try:
        return venvs.python_for("theano-0.9", suites.load_stacks()["theano-0.9"],
                                say=lambda *_: None)
    except StackUnavailable as e:
        pytest.skip("the Theano environment cannot be installed here: %s" % e)


def smoke_run(results: Path, *args: str, env: dict | None = None) -> Path:
    """`reproduce.py run --suite smoke --quick --runner local --results RESULTS ARGS...` in a process
    of its own (the real command line), asserted to exit 0; the run directory it made."""
    import subprocess

    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "run", "--suite", "smoke", "--quick",
                        "--runner", "local", "--results", str(results), *args], capture_output=True,
                       text=True, timeout=600, cwd=str(REPO), env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr
    (run,) = [d for d in Path(results).iterdir() if (d / "run.json").exists()]
    return run


def run_with_todays_data(src: Path, dst: Path):
    """A copy of a stored run judged with today's reprokit/data (`report --rejudge`,
    reprokit/run/rejudge.py): what a run recorded with today's data would render (the defect
    catalogue and its rules are newer than the committed runs' snapshots)."""
    from reprokit import results
    from reprokit.run import rejudge

    return rejudge.rejudge(results.RunDir(src), dst)[0]
