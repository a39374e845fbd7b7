"""The two numbers a cell's process and its runner must agree on, across the host/stack boundary:
bench/harness.py cannot import the host package (it runs inside the old stacks), so it keeps its own
copy of each, and this test holds the copies equal."""

import ast
from pathlib import Path

from reprokit.runners import cell_process

HARNESS = Path(__file__).resolve().parents[2] / "bench" / "harness.py"


def _harness_constants() -> dict:
    out = {}
    for node in ast.parse(HARNESS.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Constant):
                out[node.targets[0].id] = node.value.value
    return out


def test_the_harness_and_the_runners_agree_on_the_heartbeat_exit_and_the_grace():
    bench = _harness_constants()
    assert bench["HEARTBEAT_EXIT"] == cell_process.HEARTBEAT_EXIT  # the runner reads "driver gone"
    assert bench["TIMEOUT_GRACE_S"] == cell_process.TIMEOUT_GRACE_S  # the alarm the runner explains
