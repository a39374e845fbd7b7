"""The local runner against real processes: crashes, hangs, exceptions and resumption."""

import json

import pytest

from reprokit import results, validate
from reprokit.catalog.suites import Cell, Suite
from reprokit.plan.plan import Options, make_plan
from reprokit.run.execute import execute
from reprokit.run.record import exit_code
from reprokit.runners.local import LocalRunner

BUDGET = {"min_samples": 5, "max_samples": 50, "time_budget_s": 0, "warmup": 0}


def fault_cell(name, mode, seconds=0.0, timeout=60):
    return Cell(id=f"test/fault/{name}", source="smoke", stack="smoke-python", framework="python",
                workload="fault_injection", variant=mode, params={"mode": mode, "seconds": seconds},
                metrics=("noop_time",), timeout_s=timeout)


def matmul_cell(name):
    return Cell(id=f"test/matmul/{name}", source="smoke", stack="smoke-python", framework="python",
                workload="smoke_stdlib", variant="matmul", params={"n": 8},
                metrics=("matmul_time", "matmul_flops"))


def suite_of(cells):
    return Suite("test", "test suite", [], {"budget": BUDGET, "quick_budget": BUDGET,
                                             "timeout_s": 60}, list(cells))


def run_suite(tmp_path, cells, runner=None, resume=False, name="run1"):
    suite = suite_of(cells)
    # a resume here turns a fault off by changing the cell's params, which changes what the cell
    # is: allowed explicitly, as `--allow-changed-data` does (reconcile.check_cell_specs)
    plan = make_plan(suite, Options(allow_changed_data=resume))
    rundir = results.RunDir(tmp_path / name)
    run = execute(plan, runner or LocalRunner(say=lambda *_: None), rundir, ["test"],
                  resume=resume, say=lambda *_: None)
    return rundir, run


def test_faults_are_recorded_and_the_suite_goes_on(tmp_path):
    cells = [matmul_cell("first"), fault_cell("raise", "raise"),
             fault_cell("segfault", "segfault"), fault_cell("exit", "exit"),
             fault_cell("hang", "sleep", seconds=60, timeout=3), matmul_cell("last")]
    rundir, run = run_suite(tmp_path, cells)
    status = {c["cell_id"]: (c["status"], c["reason"]) for c in run["cells"]}
    assert status["test/matmul/first"][0] == "ok"
    assert status["test/matmul/last"][0] == "ok"
    assert status["test/fault/raise"] == ("failed", "RuntimeError: injected failure")
    assert status["test/fault/segfault"][0] == "crashed"
    assert "SIGSEGV" in status["test/fault/segfault"][1]
    assert status["test/fault/exit"][0] == "crashed" and "status 7" in status["test/fault/exit"][1]
    assert status["test/fault/hang"][0] == "timeout" and "3 s timeout" in status["test/fault/hang"][1]
    assert exit_code(run) == 1
    # every file validates; measured cells kept their samples
    assert not validate.errors("run", json.loads(rundir.run_file.read_text()))
    for c in rundir.load_cells():
        assert c["run_id"] == "run1"
    first = rundir.load_cell("test/matmul/first")
    assert len(first["metrics"]["matmul_time"]["samples"]) >= 5
    for name in ("matmul_time", "matmul_flops"):  # real work: the last timed product vs one untimed
        rw = first["metrics"][name]["real_work"]
        assert rw["ok"] and rw["phase"] == "forward", rw
        assert rw["checks"][0]["timed"] == rw["checks"][0]["reference"] > 0, rw
    # a crashed cell keeps its log
    assert (rundir.path / rundir.load_cell("test/fault/segfault")["log_file"]).exists()


def test_out_of_memory_is_recorded_as_oom(tmp_path):
    rundir, run = run_suite(tmp_path, [fault_cell("memory", "memory")],
                            runner=LocalRunner(say=lambda *_: None, memory_limit_mb=400))
    (entry,) = run["cells"]
    assert entry["status"] == "oom", entry


def test_resume_keeps_measured_cells_and_reruns_the_rest(tmp_path):
    cells = [matmul_cell("a"), fault_cell("flaky", "raise")]
    rundir, run = run_suite(tmp_path, cells)
    before = rundir.cell_path("test/matmul/a").read_text()
    # the flaky cell now succeeds
    cells[1] = fault_cell("flaky", "ok")
    rundir, run = run_suite(tmp_path, cells, resume=True)
    assert rundir.cell_path("test/matmul/a").read_text() == before
    assert {c["cell_id"]: c["status"] for c in run["cells"]} == {
        "test/matmul/a": "ok", "test/fault/flaky": "ok"}


@pytest.mark.parametrize("bad", ["{not json", '{"schema_version": 1}'])
def test_unreadable_results_are_a_user_error(tmp_path, bad):
    from reprokit.errors import UserError
    rundir, _ = run_suite(tmp_path, [matmul_cell("a")])
    rundir.cell_path("test/matmul/a").write_text(bad)
    with pytest.raises(UserError, match="matmul__a.json"):
        rundir.load_cells()
