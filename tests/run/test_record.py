"""The run core's own pieces on tiny synthetic run directories (pure logic, no framework, no
runner): run.json's cell entries, placeholders, status counts and exit status (reprokit/run/record.py),
the checks and the merge of a cell's result files, RunRecord, and what the driver hands the
concurrent runner (execute_concurrent's collector), how it prepares a stack (execute.StackJobs) and
the serial way of running the cells over the record (serial.run_serial, a fake runner)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from reprokit import files, formats, results, validate
from reprokit.catalog.suites import Cell
from reprokit.reader.cells import cell_entry, check_result, status_counts, valid_processes
from reprokit.run import reconcile, record
from reprokit.run.execute import StackJobs
from reprokit.run.execute_concurrent import _Collector
from reprokit.run.record import write_run
from reprokit.run.serial import run_serial
from reprokit.runners.base import CellOutcome, StackUnavailable

RUN_ID = "20260101T000000Z-test"


def cell(cid: str = "000/a", stack: str = "tf-1.8") -> Cell:
    return Cell(id=cid, source="000", stack=stack, framework="tensorflow", workload="w",
                variant=None, params={"n": 1}, metrics=("t",), device="cpu")


def new_run(tmp_path, cells=()) -> results.RunDir:
    """A run directory holding a run.json that lists `cells` pending."""
    rundir = results.RunDir(tmp_path / RUN_ID)
    rundir.cells_dir.mkdir(parents=True)
    run = {"schema_version": formats.version("run"), "kind": "run", "run_id": RUN_ID, "suite": "test",
           "runner": "local", "protocol": "budget", "started": "2026-01-01T00:00:00Z",
           "finished": None, "wall_s": None, "host_fingerprint": {}, "kit": files.kit_info(),
           "cells": [], "current": None, "stacks": {},
           "driver": {"pid": 1, "host": "elsewhere", "start_ticks": None}}
    for c in cells:
        record.set_entry(run, c, "pending", "not run yet", None)
    write_run(rundir, run)
    return rundir


def ok_result(c: Cell, run_id: str = RUN_ID, process: int | None = None,
              samples=(1.0, 2.0), wall: float = 2.0) -> dict:
    """What the harness writes for an ok cell (or process)."""
    doc = record.placeholder_result(run_id, c, "ok", None, "cpu")
    doc["metrics"] = {"t": {"unit": "ms", "samples": list(samples),
                            "raw_seconds": [s / 1000 for s in samples], "items_per_sample": 1,
                            "derivation": "1000 * seconds", "warmup": 1, "warmup_seconds": [0.5],
                            "stop_reason": "max_samples", "method": "m", "sync": "n/a"}}
    doc["started"], doc["wall_s"] = "2026-01-01T00:00:01Z", 1.0
    doc["runner"] = {"name": "local", "process_wall_s": wall}
    if process is not None:
        doc["process"] = process
    assert validate.errors("cell_result", doc) == []
    return doc


# -- run.json `cells` ------------------------------------------------------------------------------
def test_a_cell_entry_names_its_result_file():
    assert cell_entry("000/a/b", "tf-1.8", "ok", None, 1.5) == {
        "cell_id": "000/a/b", "stack": "tf-1.8", "status": "ok", "reason": None,
        "process_wall_s": 1.5, "result_file": "cells/000__a__b.json"}


def test_an_entry_is_replaced_in_its_place_and_a_new_one_goes_last():
    run = {"cells": []}
    a, b, c = cell("000/a"), cell("000/b"), cell("000/c")
    for x in (a, b, c):
        record.set_entry(run, x, "pending", "not run yet", None)
    entry = record.set_entry(run, b, "ok", None, 3.0)
    assert [e["cell_id"] for e in run["cells"]] == ["000/a", "000/b", "000/c"]
    assert run["cells"][1] == entry and entry["status"] == "ok" and entry["process_wall_s"] == 3.0
    record.set_entry(run, cell("000/z"), "skipped", "why", None)
    assert [e["cell_id"] for e in run["cells"]][-1] == "000/z" and len(run["cells"]) == 4


def test_status_counts_are_by_status_name():
    entries = [{"status": s} for s in ("pending", "ok", "failed", "ok", "skipped", "ok")]
    counts = status_counts(entries)
    assert counts == {"failed": 1, "ok": 3, "pending": 1, "skipped": 1}
    assert list(counts) == ["failed", "ok", "pending", "skipped"]
    assert status_counts([]) == {}


@pytest.mark.parametrize("statuses, code", [
    (("ok", "skipped", "not_implemented"), 0),
    (("ok", "failed"), 1), (("ok", "pending"), 1), (("ok", "interrupted"), 1),
    (("missing",), 1), (("invalid",), 1), ((), 0)])
def test_the_exit_status_fails_on_every_cell_not_ok_but_skipped_or_not_implemented(statuses, code):
    run = {"cells": [{"cell_id": f"c{i}", "status": s} for i, s in enumerate(statuses)]}
    assert record.exit_code(run) == code
    assert [c["status"] for c in record.not_ok_cells(run)] == \
        [s for s in statuses if s not in ("ok", "skipped", "not_implemented")]


# -- cell result files -----------------------------------------------------------------------------
def test_a_placeholder_is_a_valid_result_of_its_cell_saying_why():
    doc = record.placeholder_result(RUN_ID, cell(), "crashed", "boom", "gpu")
    assert validate.errors("cell_result", doc) == []
    assert (doc["run_id"], doc["cell_id"], doc["stack"], doc["status"], doc["reason"],
            doc["device"]) == (RUN_ID, "000/a", "tf-1.8", "crashed", "boom", "gpu")
    assert doc["metrics"] == {} and doc["params"] == {"n": 1} and doc["started"] is None


def test_check_result_says_why_a_file_is_not_a_result_of_this_run_cell_and_process(tmp_path):
    rundir = new_run(tmp_path)
    c = cell()
    path = rundir.cell_path(c.id)
    assert check_result(path, RUN_ID, c.id) == (None, "the file is missing")
    path.write_text("")
    assert check_result(path, RUN_ID, c.id) == (None, "the file is empty")
    path.write_text('{"status": "ok", "run_id"')
    assert "not valid JSON" in check_result(path, RUN_ID, c.id)[1]
    path.write_text(json.dumps({"kind": "cell_result"}))
    assert "does not match the cell_result schema" in check_result(path, RUN_ID, c.id)[1]
    rundir.write_cell(ok_result(c, run_id="other"))
    assert check_result(path, RUN_ID, c.id)[1] == f"belongs to run 'other', not {RUN_ID!r}"
    rundir.write_cell(ok_result(c))
    assert check_result(path, RUN_ID, "000/b")[1] == "holds cell '000/a', not '000/b'"
    assert "is a main result, not a process file" in check_result(path, RUN_ID, c.id, 1)[1]
    doc, problem = check_result(path, RUN_ID, c.id)
    assert problem is None and doc["status"] == "ok"
    rundir.write_process(ok_result(c, process=2))
    assert "is process file 2" in check_result(rundir.cell_path(c.id, 2), RUN_ID, c.id, 1)[1]


def test_a_bad_file_is_moved_aside_never_over_another(tmp_path):
    rundir = new_run(tmp_path)
    path = rundir.cell_path("000/a")
    path.write_text("first")
    first = record.move_aside(rundir, path)
    path.write_text("second")
    second = record.move_aside(rundir, path)
    assert not path.exists() and first != second
    assert first.parent == second.parent == rundir.invalid_dir
    assert (first.read_text(), second.read_text()) == ("first", "second")


def test_valid_processes_are_those_of_this_run_that_check(tmp_path):
    rundir = new_run(tmp_path)
    c = cell()
    rundir.write_process(ok_result(c, process=1))
    rundir.write_process(ok_result(c, run_id="other", process=2))
    rundir.cell_path(c.id, 3).write_text("{truncated")
    assert sorted(valid_processes(rundir, c.id, 3, RUN_ID)) == [1]


def test_finish_result_keeps_the_harness_result_and_adds_what_the_runner_saw(tmp_path):
    rundir = new_run(tmp_path)
    c = cell()
    harness = ok_result(c, samples=(7.0,))
    harness["implementation"] = {"substitutes": ["the harness's"]}
    rundir.write_cell(harness)
    log = rundir.log_path(c.id)
    out = CellOutcome("ok", None, 4.5, str(log), {"exit_code": 0})
    res = record.finish_result(rundir, RUN_ID, c, out, {"local": {"substitutes": ["s1"]}}, "local",
                               "cpu", substitution={"from": "x"})
    assert res["metrics"]["t"]["samples"] == [7.0]  # the measurement, kept
    assert res["runner"]["name"] == "local" and res["runner"]["process_wall_s"] == 4.5
    assert res["runner"]["exit_code"] == 0 and res["log_file"] == "logs/000__a.log"
    assert res["implementation"]["substitutes"] == [{"from": "x"}, "the harness's", "s1"]  # fallback first
    assert rundir.load_cell(c.id) == res and validate.errors("cell_result", res) == []


def test_finish_result_without_a_valid_result_writes_a_placeholder_and_keeps_the_bad_file(tmp_path):
    rundir = new_run(tmp_path)
    c = cell()
    res = record.finish_result(rundir, RUN_ID, c, CellOutcome("failed", None, 1.0, None, {}),
                               {}, "local", "cpu")
    assert (res["status"], res["reason"]) == ("failed", "no result written")
    rundir.cell_path(c.id).write_text('{"cut short')
    res = record.finish_result(rundir, RUN_ID, c, CellOutcome("ok", None, 1.0, None, {}),
                               {}, "local", "cpu")
    assert res["status"] == "crashed" and res["reason"].startswith("result file invalid: not valid JSON")
    assert "moved to cells/.invalid/000__a.json." in res["reason"]
    assert [p.read_text() for p in rundir.invalid_dir.iterdir()] == ['{"cut short']
    # a timeout wins over a partial result the harness wrote; a process keeps its index
    rundir.write_process(ok_result(c, process=2))
    res = record.finish_result(rundir, RUN_ID, c, CellOutcome("timeout", "over 60 s", 60.0, None, {}),
                               {}, "local", "cpu", process=2)
    assert (res["status"], res["reason"], res["process"]) == ("timeout", "over 60 s", 2)
    assert rundir.load_cell(c.id, 2)["status"] == "timeout"


# -- the merge of process files --------------------------------------------------------------------
def test_merge_cell_rebuilds_the_main_result_from_this_runs_process_files(tmp_path):
    rundir = new_run(tmp_path)
    c = cell()
    rundir.write_process(ok_result(c, process=1, samples=(1.0,), wall=2.0))
    rundir.write_process(ok_result(c, run_id="other", process=2, samples=(9.0,)))
    merged = record.merge_cell(rundir, c.id, 3, RUN_ID)
    assert (merged["status"], merged["reason"]) == (
        "pending", "process 2 of 3: not run yet (if the run was interrupted, --resume RUN runs it)")
    assert merged["metrics"]["t"]["samples"] == [1.0] and rundir.load_cell(c.id) == merged
    rundir.write_process(ok_result(c, process=2, samples=(2.0, 3.0), wall=3.0))
    rundir.write_process(ok_result(c, process=3, samples=(4.0,), wall=5.0))
    merged = record.merge_cell(rundir, c.id, 3, RUN_ID)
    assert (merged["status"], merged["reason"]) == ("ok", None)
    assert merged["metrics"]["t"]["samples"] == [1.0, 2.0, 3.0, 4.0]
    assert merged["metrics"]["t"]["processes"] == [1, 2, 1]
    assert record.processes_wall(merged) == 10.0
    assert "process" not in merged and validate.errors("cell_result", merged) == []


# -- RunRecord: run.json while a driver writes it --------------------------------------------------
def test_every_entry_the_driver_records_is_on_disk_with_the_runs_wall_time(tmp_path):
    a, b = cell("000/a"), cell("000/b")
    rundir = new_run(tmp_path, [a, b])
    rec = record.RunRecord(rundir, rundir.load_run(), started=time.time() - 10.0, prior_wall=100.0)
    rec.start(b, None)
    on_disk = rundir.load_run()
    assert on_disk["current"]["cell_id"] == "000/b" and on_disk["current"]["process"] is None
    assert rec.current[0] is b
    rec.record(b, "ok", None, 2.5)
    on_disk = rundir.load_run()
    assert [(e["cell_id"], e["status"]) for e in on_disk["cells"]] == [("000/a", "pending"),
                                                                      ("000/b", "ok")]
    assert on_disk["current"] is None and rec.current is None
    assert 110.0 <= on_disk["wall_s"] < 130.0


def test_a_record_without_a_driver_start_changes_only_the_entry(tmp_path):
    a = cell()
    rundir = new_run(tmp_path, [a])
    run = rundir.load_run()
    run["current"] = {"cell_id": a.id, "process": None, "started": "2026-01-01T00:00:02Z",
                      "driver": run["driver"]}
    rec = record.RunRecord(rundir, run)  # `status`/`report` re-attaching to a detached run
    rec.record(a, "failed", "boom", None)
    on_disk = rundir.load_run()
    assert on_disk["cells"][0]["status"] == "failed" and on_disk["wall_s"] is None
    assert on_disk["current"]["cell_id"] == a.id


def test_a_merged_cells_entry_has_its_status_and_the_sum_of_its_process_walls(tmp_path):
    a = cell()
    rundir = new_run(tmp_path, [a])
    rec = record.RunRecord(rundir, rundir.load_run())
    merged = {"status": "failed", "reason": "process 2 of 2: boom",
              "processes": [{"process_wall_s": 1.5}, {"process_wall_s": None}, {"process_wall_s": 2}]}
    rec.record_merged(a, merged)
    assert rundir.load_run()["cells"][0] == cell_entry(a.id, a.stack, "failed",
                                                              "process 2 of 2: boom", 3.5)
    assert record.processes_wall({"processes": [{"process_wall_s": None}]}) is None


# -- reconcile writes its entries as the record builds them ----------------------------------------
def test_reconcile_adopts_a_result_run_json_does_not_list_and_marks_a_lost_one(tmp_path):
    a, b = cell("000/a"), cell("000/b")
    rundir = new_run(tmp_path, [a])
    run = rundir.load_run()
    run["finished"] = "2026-01-01T00:01:00Z"
    record.set_entry(run, a, "ok", None, 1.0)  # listed as measured, but no file
    write_run(rundir, run)
    rundir.write_cell(ok_result(b, wall=4.0))
    out = reconcile.reconcile(rundir, modify=True)
    assert out.run["cells"] == [
        cell_entry(a.id, a.stack, "missing", out.run["cells"][0]["reason"], 1.0),
        cell_entry(b.id, b.stack, "ok", None, 4.0)]
    assert out.run["cells"][0]["reason"].startswith("cells/000__a.json is missing")
    assert rundir.load_run()["cells"] == out.run["cells"]


# -- what the driver hands the concurrent runner ---------------------------------------------------
class _Progress:
    def __init__(self):
        self.seen: list[tuple] = []

    def start(self, c, process=None):
        self.seen.append(("start", c.id, process))

    def done(self, c, status, wall, reason=None, process=None):
        self.seen.append(("done", c.id, status, process))


def test_the_collector_writes_a_tasks_result_then_its_entry(tmp_path):
    a, b = cell("000/a"), cell("000/b")
    rundir = new_run(tmp_path, [a, b])
    rec = record.RunRecord(rundir, rundir.load_run(), started=time.time())
    progress = _Progress()
    stacks = {"tf-1.8": {"local": {"substitutes": []}}}
    collect = _Collector(rec, RUN_ID, SimpleNamespace(name="slurm"), "cpu", 2, stacks, progress, {})
    rundir.write_process(ok_result(a, process=1, wall=1.0))
    collect(SimpleNamespace(cell=a, process=1, job_cell={}),
            CellOutcome("ok", None, 1.0, None, {"job_id": "7"}))
    assert rundir.load_cell(a.id, 1)["runner"]["job_id"] == "7"
    entry = rundir.load_run()["cells"][0]
    assert entry["status"] == "pending" and entry["reason"].startswith("process 2 of 2")
    collect(SimpleNamespace(cell=a, process=2, job_cell={}), CellOutcome("timeout", "limit", 3.0, None, {}))
    assert rundir.load_run()["cells"][0] == cell_entry(
        a.id, a.stack, "timeout", "process 2 of 2: limit", 4.0)
    assert progress.seen[-2:] == [("start", a.id, 2), ("done", a.id, "timeout", 2)]
    # the local launcher's environment goes into the result
    rundir.write_cell(ok_result(b))
    collect.repeat = 1
    env = {"chosen": {"candidate": "venv", "python": "/p", "fallback": False}, "attempts": []}
    res = collect(SimpleNamespace(cell=b, process=None, job_cell={}),
                  CellOutcome("ok", None, 2.0, None, {"launcher": "local", "substitutes": ["venv"],
                                                       "environment": env}))
    assert res["implementation"]["substitutes"] == ["venv"] and res["environment"] == env
    assert rundir.load_cell(b.id) == res
    assert rundir.load_run()["cells"][1]["status"] == "ok"


def test_a_stack_that_cannot_be_prepared_skips_its_cells_once(tmp_path):
    a, b = cell("000/a"), cell("000/b")
    rundir = new_run(tmp_path, [a, b])
    rec = record.RunRecord(rundir, rundir.load_run(), started=time.time())
    calls = []

    class Unavailable:
        name = "local"

        def prepare(self, stack, spec, say):
            calls.append(stack)
            raise StackUnavailable("no interpreter for tf-1.8")

    progress = _Progress()
    plan = SimpleNamespace(options=SimpleNamespace(device="cpu"))
    jobs = StackJobs(plan, Unavailable(), rec, progress,
                     {"tf-1.8": {"framework": "tensorflow", "original": "1.8", "image": "i"}},
                     lambda *_: None)
    items = [(a, [1, 2]), (b, [1, 2])]
    assert jobs.prepare("tf-1.8", items) is None
    assert jobs.prepare("tf-1.8", items) is None and calls == ["tf-1.8"]  # once per run
    run = rundir.load_run()
    assert [(e["status"], e["reason"]) for e in run["cells"]] == [
        ("skipped", "no interpreter for tf-1.8")] * 2
    assert run["stacks"]["tf-1.8"] == {"framework": "tensorflow", "original": "1.8", "image": "i"}
    assert rundir.load_cell(b.id)["status"] == "skipped"
    assert [s for s in progress.seen if s[0] == "done"] == [
        ("done", a.id, "skipped", 1), ("done", a.id, "skipped", 2),
        ("done", b.id, "skipped", 1), ("done", b.id, "skipped", 2)]


def test_the_serial_way_runs_round_by_round_and_records_every_process(tmp_path, monkeypatch):
    monkeypatch.setenv("REPROKIT_JIT_WARMUP", "off")
    a, b, c = cell("000/a"), cell("000/b", stack="tf-2.0"), cell("000/c")
    cells = {x.id: x for x in (a, b, c)}
    rundir = new_run(tmp_path, [a, b, c])
    rec = record.RunRecord(rundir, rundir.load_run(), started=time.time())
    ran, prepared = [], []

    class Runner:
        name = "local"

        def run_cell(self, prep, job_path, job_cell, cells_dir, log, process=None):
            on_record = rundir.load_run()["current"]  # the running cell is on disk first
            ran.append((job_cell["id"], process, on_record["cell_id"], on_record["process"]))
            rundir.write_process(ok_result(cells[job_cell["id"]], process=process, wall=1.0))
            return CellOutcome("ok", None, 1.0, None, {})

    def prepare(stack, items):
        prepared.append(stack)
        return ({}, {}, rundir.jobs_dir / f"{stack}.json",
                {x.id: {"id": x.id, "workload": "w", "device": "cpu"} for x, _ in items})

    plan = SimpleNamespace(options=SimpleNamespace(repeat=2, device="cpu", deadline=None),
                           verdicts={x: {} for x in cells})
    progress = _Progress()
    # c runs its process 2 only (as in a resumed run whose process 1 of c failed elsewhere)
    by_stack = {"tf-1.8": [(a, [1, 2]), (c, [2])], "tf-2.0": [(b, [1, 2])]}
    run_serial(record.Execution(plan, Runner(), rec, by_stack, prepare, progress, {},
                                 lambda *_: None, False))
    assert [(cid, p) for cid, p, _, _ in ran] == [(a.id, 1), (b.id, 1), (a.id, 2), (c.id, 2),
                                                   (b.id, 2)]  # round by round, stack by stack
    assert all(r[:2] == r[2:] for r in ran)
    assert prepared == ["tf-1.8", "tf-2.0", "tf-1.8", "tf-2.0"]  # asked each round (StackJobs: once)
    run = rundir.load_run()
    assert run["cells"][0] == cell_entry(a.id, a.stack, "ok", None, 2.0)
    assert run["cells"][1] == cell_entry(b.id, b.stack, "ok", None, 2.0)
    assert (run["cells"][2]["status"], run["cells"][2]["reason"][:27]) == (
        "pending", "process 1 of 2: not run yet")
    assert run["current"] is None and rundir.load_cell(a.id)["repeat"] == 2
    assert [x for x in progress.seen if x[0] == "done"] == [
        ("done", a.id, "ok", 1), ("done", b.id, "ok", 1), ("done", a.id, "ok", 2),
        ("done", c.id, "ok", 2), ("done", b.id, "ok", 2)]


class _Cluster:
    """A concurrent runner's protocol (runners/slurm.py SlurmRunner) without Slurm: every task
    submitted at once, one finished per poll, its harness result written as it ends."""
    name, concurrent, poll_s = "slurm", True, 0.0

    def __init__(self, results_of, detach=False):
        self.options = SimpleNamespace(record=lambda: {"launcher": "local"}, detach=detach,
                                       exclusive=True)
        self.stats = {"submit_s": 0.25, "sbatch_calls": 1, "polls": 0}
        self.results_of, self.queue, self.submitted = results_of, [], []

    def submit(self, rundir, prepared, tasks):
        for i, t in enumerate(tasks):
            t.job_id = f"9_{i}"
        self.queue = list(tasks)
        self.submitted = [(t.cell.id, t.process) for t in tasks]
        return [{"job_id": "9", "stack": "tf-1.8", "launcher": "local", "time_limit_min": 2,
                 "exclusive": True, "tasks": [{"index": i, "cell_id": t.cell.id, "process": t.process}
                           for i, t in enumerate(tasks)]}]

    def outstanding(self):
        return len(self.queue)

    def poll(self, rundir):
        self.stats["polls"] += 1
        t = self.queue.pop(0)
        status = self.results_of(t, rundir)
        return [(t, CellOutcome(status, None if status == "ok" else "exit 1", 1.5, None,
                                {"job_id": t.job_id}))]


def _concurrent(tmp_path, detach=False):
    from reprokit.run.execute_concurrent import run_concurrent

    a, b = cell("000/a"), cell("000/b")
    rundir = new_run(tmp_path, [a, b])
    rec = record.RunRecord(rundir, rundir.load_run(), started=time.time())

    def results_of(task, rundir):  # a's harness writes an ok result; b's process 2 none
        if task.cell.id == "000/a" or task.process == 1:
            rundir.write_process(ok_result(task.cell, process=task.process, wall=1.0))
            return "ok"
        return "failed"

    runner = _Cluster(results_of, detach)
    plan = SimpleNamespace(options=SimpleNamespace(repeat=2, device="cpu", deadline=None),
                           suite=SimpleNamespace(sources=[]))
    job_cells = {x.id: {"id": x.id} for x in (a, b)}
    ex = record.Execution(plan, runner, rec, {"tf-1.8": [(a, [1, 2]), (b, [1, 2])]},
                          lambda stack, items: ({}, {}, rundir.jobs_dir / "tf-1.8.json", job_cells),
                          _Progress(), {"tf-1.8": {}}, lambda *_: None, False)
    return run_concurrent(ex), rundir, runner, (a, b)


def test_the_concurrent_way_submits_everything_then_records_each_task_as_it_ends(tmp_path):
    detached, rundir, runner, (a, b) = _concurrent(tmp_path)
    assert detached is False
    assert runner.submitted == [(a.id, 1), (a.id, 2), (b.id, 1), (b.id, 2)]
    run = rundir.load_run()
    assert run["slurm"]["detached"] is False and run["slurm"]["jobs"][0]["job_id"] == "9"
    assert run["slurm"]["driver_cost"]["tasks_followed"] == 4
    assert run["slurm"]["driver_cost"]["polls"] == 4
    assert run["cells"] == [cell_entry(a.id, a.stack, "ok", None, 3.0),
                            cell_entry(b.id, b.stack, "failed", "process 2 of 2: exit 1", 3.0)]
    assert rundir.load_cell(b.id, 2)["runner"]["job_id"] == "9_3"


def test_a_detached_concurrent_run_leaves_every_cell_pending_with_its_job(tmp_path):
    detached, rundir, runner, (a, b) = _concurrent(tmp_path, detach=True)
    assert detached is True and runner.outstanding() == 4
    run = rundir.load_run()
    assert run["slurm"]["detached"] is True
    assert [(e["status"], e["reason"]) for e in run["cells"]] == [
        ("pending", "submitted to Slurm as job 9_0; not finished yet"),
        ("pending", "submitted to Slurm as job 9_2; not finished yet")]


def test_a_resumed_cell_stopped_by_the_limit_again_says_this_sittings_time(tmp_path):
    from reprokit.reader.status import Skip

    rundir = new_run(tmp_path)
    c = cell()
    for ran in (53.0, 119.5):  # the first sitting, then the resume: each stopped at the limit
        skip = Skip("while_running", limit_s=900.0, left_s=ran, needs_s=300.0, ran_s=ran)
        res = record.finish_result(rundir, RUN_ID, c, CellOutcome("skipped", skip.reason(), ran, None, {}),
                                   {}, "local", "cpu", skip=skip)
    assert res["reason"] == skip.reason() and "after 120 s" in res["reason"], res["reason"]
    assert rundir.load_cell(c.id)["skip"]["ran_s"] == 119.5
