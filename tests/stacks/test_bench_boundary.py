"""The host/stack boundary: every file under bench/ must run inside an old stack.

Python 3.5 syntax (no f-strings, no annotations), standard library plus one framework, never the
host package `reprokit`.
"""

import ast
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
FILES = sorted(p.relative_to(BENCH).as_posix() for p in BENCH.rglob("*.py"))
# frameworks and their companions, always imported lazily and guarded
FRAMEWORKS = {"torch", "tensorflow", "tf_keras", "theano", "mxnet", "keras", "jax", "jaxlib", "numpy",
              "pynvml", "threadpoolctl"}
LOCAL = {p.stem for p in BENCH.rglob("*.py")} | {"workloads"}
PY2_STDLIB = {"StringIO", "cStringIO", "Queue", "cPickle"}  # guarded fallbacks for 2.7 stacks


def test_bench_has_files():
    assert "harness.py" in FILES and any(f.startswith("workloads/s000_") for f in FILES)


@pytest.mark.parametrize("rel", FILES)
def test_bench_file_runs_in_an_old_stack(rel):
    tree = ast.parse((BENCH / rel).read_text(), filename=rel, feature_version=(3, 5))
    allowed = set(sys.stdlib_module_names) | FRAMEWORKS | LOCAL | PY2_STDLIB | {"__future__"}
    for node in ast.walk(tree):
        assert not isinstance(node, ast.JoinedStr), f"{rel}:{node.lineno}: f-string"
        assert not isinstance(node, ast.AnnAssign), f"{rel}:{node.lineno}: variable annotation"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args + node.args.kwonlyargs
            assert node.returns is None and all(a.annotation is None for a in args), \
                f"{rel}:{node.lineno}: annotation"
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            continue
        for n in names:
            top = n.split(".")[0]
            assert top != "reprokit", f"{rel}:{node.lineno}: imports the host package"
            assert top in allowed, f"{rel}:{node.lineno}: imports {n}, not stdlib or a framework"


def test_the_check_can_fail():
    with pytest.raises(SyntaxError):
        ast.parse('x = f"{1}"', feature_version=(3, 5))
