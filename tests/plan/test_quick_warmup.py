"""`--quick` shortens sampling, never warm-up (reprokit/plan/plan.py budget_for)."""

import pytest

from reprokit.catalog import suites
from reprokit.catalog.suites import Cell, Suite
from reprokit.plan.plan import Options, budget_for, job_cell

FULL = {"min_samples": 5, "max_samples": 50, "time_budget_s": 8, "warmup": 7}
QUICK = {"min_samples": 3, "max_samples": 50, "time_budget_s": 0, "warmup": 0}


def cell(budget=None):
    return Cell(id="t/c", source="smoke", stack="smoke-python", framework="python",
                workload="smoke_stdlib", variant="matmul", params={"n": 8},
                metrics=("matmul_time",), budget=budget)


def suite(*cells, full=FULL, quick=QUICK):
    return Suite("t", "t", [], {"budget": full, "quick_budget": quick, "timeout_s": 60},
                 list(cells))


def test_quick_keeps_the_full_budgets_warmup_and_shortens_sampling():
    c = cell()
    b = budget_for(c, suite(c), Options(quick=True))
    assert b["warmup"] == 7  # not quick_budget's 0
    assert (b["min_samples"], b["time_budget_s"]) == (3, 0)  # sampling is the quick budget's
    assert budget_for(c, suite(c), Options())["warmup"] == 7


def test_a_cells_own_warmup_override_wins_under_quick_too():
    c = cell({"min_samples": 4, "warmup": 3})
    assert budget_for(c, suite(c), Options(quick=True))["warmup"] == 3
    assert budget_for(c, suite(c), Options())["warmup"] == 3
    # an override without a warm-up leaves the suite's full one
    c = cell({"min_samples": 4})
    assert budget_for(c, suite(c), Options(quick=True))["warmup"] == 7


def test_no_full_warmup_means_none_under_quick_either():
    c = cell()
    full = {k: v for k, v in FULL.items() if k != "warmup"}
    b = budget_for(c, suite(c, full=full, quick={**QUICK, "warmup": 4}), Options(quick=True))
    assert b.get("warmup", 0) == 0


def test_stacked_lstm_2019_quick_cells_warm_up_ten_times():
    """TorchScript's profiling runs must be warm-up under --quick, not timed samples."""
    s = suites.load_suite("stacked-lstm-2019")
    jit = [c for c in s.cells if "jit" in c.id and c.implemented]
    assert jit
    for c in jit:
        assert budget_for(c, s, Options(quick=True))["warmup"] == 10, c.id
        assert job_cell(c, s, Options(quick=True))["budget"]["warmup"] == 10, c.id


@pytest.mark.parametrize("name", suites.suite_names())
def test_every_suite_file_states_the_same_warmup_for_quick(name):
    d = suites.load_suite(name).defaults
    assert d["quick_budget"].get("warmup", 0) == d["budget"].get("warmup", 0), name
