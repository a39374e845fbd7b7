"""A cell's code version (reprokit/plan/code_version.py): the bench files its process imports, and
only those, make its digest."""

import shutil

from reprokit import files
from reprokit.plan import code_version


def _bench(tmp_path):
    bench = tmp_path / "bench"
    (bench / "workloads").mkdir(parents=True)
    (bench / "harness.py").write_text("import timing\nimport importlib\n")
    (bench / "timing.py").write_text("import time\n")
    (bench / "unused.py").write_text("X = 1\n")
    (bench / "workloads" / "__init__.py").write_text("")
    (bench / "workloads" / "_helper.py").write_text("Y = 1\n")
    (bench / "workloads" / "w_a.py").write_text(
        "try:\n    from workloads import _helper\nexcept ImportError:\n    import _helper\n")
    (bench / "workloads" / "w_b.py").write_text("def f():\n    import torch\n")
    return bench


def test_the_digest_follows_what_the_workload_imports(tmp_path):
    bench = _bench(tmp_path)
    got = {p.relative_to(bench).as_posix() for p in code_version.closure(
        [bench / "harness.py", bench / "workloads" / "w_a.py"], bench)}
    assert got == {"harness.py", "timing.py", "workloads/__init__.py", "workloads/_helper.py",
                   "workloads/w_a.py"}
    a, b = code_version.digest.__wrapped__("w_a", bench), code_version.digest.__wrapped__("w_b", bench)
    (bench / "unused.py").write_text("X = 2\n")  # imported by no one: no version changes
    assert code_version.digest.__wrapped__("w_a", bench) == a
    (bench / "workloads" / "_helper.py").write_text("Y = 2\n")  # w_a's helper: w_a's version only
    assert code_version.digest.__wrapped__("w_a", bench) != a
    assert code_version.digest.__wrapped__("w_b", bench) == b
    (bench / "timing.py").write_text("import time  # changed\n")  # the harness's: every version
    assert code_version.digest.__wrapped__("w_b", bench) != b


def test_every_workload_of_the_kit_has_a_version_covering_its_own_module(tmp_path):
    copy = tmp_path / "bench"
    shutil.copytree(files.BENCH, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path in sorted((files.BENCH / "workloads").glob("s*.py")):
        paths = code_version.closure([copy / "harness.py", copy / "workloads" / path.name], copy)
        assert copy / "workloads" / path.name in paths and copy / "timing.py" in paths
