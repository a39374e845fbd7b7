"""Every workload records one: each workload module a suite cell can run builds a
real-work check (bench/real_work.py Check) for its timed metrics. Read from the source (with the `_*.py`
helpers it imports), so it holds for the stacks that cannot run here too; the per-workload tests under
tests/stacks/ run the cells that can and assert that each timed metric recorded an ok check."""

from __future__ import annotations

import re
from pathlib import Path

from reprokit.analysis import benchmark_lint
from reprokit.catalog import suites

WORKLOADS = Path(__file__).resolve().parents[2] / "bench" / "workloads"
FIXTURES = {"fault_injection", "test_sleep", "test_gpu_runtime"}  # test doubles, not benchmarks


def without_a_check(folder: Path) -> list[str]:
    """Workload modules (a `def run(ctx)`, not a `_helper`) whose text and helpers build no Check."""
    out = []
    for path in sorted(folder.glob("*.py")):
        if path.stem.startswith("_") or path.stem in FIXTURES:
            continue
        text = benchmark_lint.workload_text(path.stem, folder)
        if re.search(r"^def run\(ctx\)", text, re.M) and "real_work.Check(" not in text:
            out.append(path.stem)
    return out


def test_every_workload_builds_a_real_work_check():
    assert without_a_check(WORKLOADS) == []
    used = {c.workload for s in suites.suite_names() for c in suites.load_suite(s).cells}
    assert used - FIXTURES <= {p.stem for p in WORKLOADS.glob("*.py")}  # every cell's workload is read


def test_a_workload_without_a_check_is_named(tmp_path):
    (tmp_path / "s999_x.py").write_text("def run(ctx):\n    ctx.measure('t', step, 'ms', 'ms', 1, 'm')\n")
    (tmp_path / "s998_y.py").write_text("import _h\n\ndef run(ctx):\n    _h.go(ctx)\n")
    (tmp_path / "_h.py").write_text("import real_work\n\ndef go(ctx):\n    real_work.Check('train', f)\n")
    assert without_a_check(tmp_path) == ["s999_x"]
