"""`run --repeat K`: each cell in K fresh processes, interleaved, merged into one result per cell.

Real processes through the local runner (the smoke suite and fault-injection cells), the merge rule
on its own, resumption and the user errors; the Docker runner's share is at the end of the file.
"""

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from reprokit import formats, results, validate
from reprokit.analysis import frames
from reprokit.catalog.suites import Cell, Suite
from reprokit.plan.plan import Options, make_plan
from reprokit.reader import merge
from reprokit.reader.load import load
from reprokit.run import progress
from reprokit.run.execute import execute
from reprokit.run.progress import Progress
from reprokit.run.record import exit_code
from reprokit.runners.local import LocalRunner
from tests import models

REPO = Path(__file__).resolve().parents[2]
BUDGET = {"min_samples": 3, "max_samples": 20, "time_budget_s": 0, "warmup": 1}
QUIET = lambda *_: None  # noqa: E731
PROCESS_FILE = re.compile(r"\.p\d+\.json$")


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, str(REPO / "reproduce.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def only_run(root: Path) -> results.RunDir:
    (run,) = [results.RunDir(p) for p in root.iterdir() if (p / "run.json").exists()]
    return run


def cell_files(rundir):
    return sorted(p.name for p in rundir.cells_dir.glob("*.json"))


def check_merged(merged, repeat):
    """The merged-file invariants every test relies on; returns {metric: counts}."""
    assert not validate.errors("cell_result", merged)
    assert merged["repeat"] == repeat and "process" not in merged
    counts = {}
    for name, m in merged["metrics"].items():
        assert sum(m["processes"]) == len(m["samples"]), name
        assert len(m["raw_seconds"]) in (0, len(m["samples"])), name
        assert len(m["stop_reasons"]) == len(m["processes"]), name
        assert m["stop_reason"] == m["stop_reasons"][0]
        counts[name] = m["processes"]
    return counts


# -- the smoke suite through the CLI and the real local runner ----------------------------------
@pytest.fixture(scope="module")
def smoke_repeat2(tmp_path_factory):
    root = tmp_path_factory.mktemp("repeat2")
    p = cli("run", "--suite", "smoke", "--runner", "local", "--quick", "--repeat", "2",
            "--results", str(root), "--no-report")
    assert p.returncode == 0, p.stderr
    return only_run(root), p.stderr


def test_repeat_2_runs_every_cell_in_two_processes_and_merges_them(smoke_repeat2):
    rundir, stderr = smoke_repeat2
    run = rundir.load_run()
    assert run["repeat"] == 2
    cells = {c["cell_id"]: c for c in rundir.load_cells()}  # the merged files only
    assert set(cells) == {"smoke/python/matmul/n24", "smoke/pytorch/nn_lstm/b8-s5-h32"}
    stems = [results.cell_filename(cid)[:-5] for cid in cells]
    assert cell_files(rundir) == sorted(f"{s}{x}.json" for s in stems for x in ("", ".p1", ".p2"))
    for cid, merged in cells.items():
        assert merged["status"] == "ok" and merged["reason"] is None
        counts = check_merged(merged, 2)
        procs = {i: rundir.load_cell(cid, i) for i in (1, 2)}
        for i, r in procs.items():
            assert r["process"] == i and r["status"] == "ok"
            assert not validate.errors("cell_result", r)
        for name, m in merged["metrics"].items():
            one, two = procs[1]["metrics"][name], procs[2]["metrics"][name]
            assert counts[name] == [len(one["samples"]), len(two["samples"])]
            assert m["samples"] == one["samples"] + two["samples"]
            assert m["raw_seconds"] == one["raw_seconds"] + two["raw_seconds"]
            assert m["warmup_seconds"] == one["warmup_seconds"] + two["warmup_seconds"]
            assert m["warmup"] == one["warmup"]
            assert m["stop_reasons"] == [one["stop_reason"], two["stop_reason"]]
        assert [(e["index"], e["status"], e["result_file"]) for e in merged["processes"]] == [
            (i, "ok", f"cells/{results.cell_filename(cid, i)}") for i in (1, 2)]
        assert [e["log_file"] for e in merged["processes"]] == [
            f"logs/{results.cell_filename(cid, i)[:-5]}.log" for i in (1, 2)]
        for e in merged["processes"]:
            assert (rundir.path / e["log_file"]).exists()
        # the run record's process time of the cell is that of both processes
        (entry,) = [e for e in run["cells"] if e["cell_id"] == cid]
        assert entry["status"] == "ok"
        assert entry["process_wall_s"] == pytest.approx(sum(e["process_wall_s"]
                                                            for e in merged["processes"]))
    # compile_time (one sample per process) now has one sample per process
    lstm = cells["smoke/pytorch/nn_lstm/b8-s5-h32"]["metrics"]["compile_time"]
    assert lstm["processes"] == [1, 1] and lstm["stop_reasons"] == ["single", "single"]


def test_the_merge_keeps_the_processes_code_version_and_names_none_for_two(smoke_repeat2):
    """Each process result carries the code version its job sent; the merge keeps it when they agree,
    and says none where two processes ran different code (a run resumed by another kit)."""
    rundir, _ = smoke_repeat2
    cid = "smoke/pytorch/nn_lstm/b8-s5-h32"
    procs = {i: rundir.load_cell(cid, i) for i in (1, 2)}
    code = procs[1]["code"]
    assert code and len(code) == 64 and procs[2]["code"] == code
    assert merge.merge(procs, 2)["code"] == code
    procs[2] = dict(procs[2], code="0" * 64)
    assert merge.merge(procs, 2)["code"] is None


def test_rounds_interleave_the_cells_and_the_progress_counts_every_process(smoke_repeat2):
    _, stderr = smoke_repeat2
    starts = re.findall(r"^\[(\d+)/(\d+)\] (\S+) \(process (\d) of 2\)", stderr, re.M)
    assert [(int(n), int(t), cid, int(p)) for n, t, cid, p in starts] == [
        (1, 4, "smoke/python/matmul/n24", 1), (2, 4, "smoke/pytorch/nn_lstm/b8-s5-h32", 1),
        (3, 4, "smoke/python/matmul/n24", 2), (4, 4, "smoke/pytorch/nn_lstm/b8-s5-h32", 2)]


def test_the_frames_see_merged_cells_with_the_process_of_each_sample(smoke_repeat2):
    rundir, _ = smoke_repeat2
    cf = frames.cells_frame(load(rundir))
    assert set(cf["cell_id"]) == {"smoke/python/matmul/n24", "smoke/pytorch/nn_lstm/b8-s5-h32"}
    assert set(cf["repeat"]) == {2}
    sf = frames.samples_frame(load(rundir))
    merged = rundir.load_cell("smoke/python/matmul/n24")
    rows = sf[(sf.cell_id == "smoke/python/matmul/n24") & (sf.metric == "matmul_time")]
    n1, n2 = merged["metrics"]["matmul_time"]["processes"]
    assert list(rows["process"]) == [1] * n1 + [2] * n2
    assert list(rows["value"]) == merged["metrics"]["matmul_time"]["samples"]


def test_resume_reruns_only_the_deleted_process(smoke_repeat2, tmp_path):
    src, _ = smoke_repeat2
    rundir = results.RunDir(tmp_path / src.path.name)  # same run id
    shutil.copytree(src.path, rundir.path)
    cid = "smoke/python/matmul/n24"
    gone = rundir.cell_path(cid, 2)
    gone.unlink()
    before = {p.name: p.read_bytes() for p in rundir.cells_dir.glob("*.p*.json")}
    p = cli("run", "--suite", "smoke", "--runner", "local", "--quick", "--resume",
            str(rundir.path), "--results", str(tmp_path), "--no-report")
    assert p.returncode == 0, p.stderr
    assert re.findall(r"^\[(\d+)/(\d+)\] (\S+) \(process (\d)", p.stderr, re.M) == [
        ("1", "1", cid, "2")], p.stderr
    assert "resume: smoke/pytorch/nn_lstm/b8-s5-h32 already measured, kept" in p.stderr
    assert f"resume: {cid}: process 1 of 2 kept, running 2" in p.stderr
    # every other process file is untouched; the deleted one is back, newly measured
    for name, data in before.items():
        assert (rundir.cells_dir / name).read_bytes() == data, name
    again = rundir.load_cell(cid, 2)
    assert again["status"] == "ok" and again["process"] == 2
    merged = rundir.load_cell(cid)
    assert merged["status"] == "ok"
    counts = check_merged(merged, 2)
    assert counts["matmul_time"] == [len(rundir.load_cell(cid, i)["metrics"]["matmul_time"]
                                         ["samples"]) for i in (1, 2)]
    assert merged["metrics"]["matmul_time"]["samples"][-len(again["metrics"]["matmul_time"]
                                                            ["samples"]):] == \
        again["metrics"]["matmul_time"]["samples"]
    assert rundir.load_run()["repeat"] == 2


def test_resume_with_a_different_repeat_is_one_line_and_exit_2(smoke_repeat2, tmp_path):
    src, _ = smoke_repeat2
    before = sorted((p.name, p.stat().st_mtime_ns) for p in src.cells_dir.iterdir())
    p = cli("run", "--suite", "smoke", "--runner", "local", "--repeat", "3", "--resume",
            str(src.path), "--results", str(tmp_path), "--no-report")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "--repeat 3" in lines[0] and "--repeat 2" in lines[0]
    assert sorted((p.name, p.stat().st_mtime_ns) for p in src.cells_dir.iterdir()) == before


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_a_repeat_below_1_or_not_an_integer_is_one_line_and_exit_2(tmp_path, bad):
    p = cli("run", "--suite", "smoke", "--runner", "local", f"--repeat={bad}",
            "--results", str(tmp_path), "--no-report")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--repeat must be a whole number from 1 to 100" in lines[0], p.stderr
    assert not list(tmp_path.glob("*/run.json"))


def test_repeat_1_writes_no_process_files_and_no_process_fields(tmp_path):
    p = cli("run", "--suite", "smoke", "--runner", "local", "--quick", "--repeat", "1",
            "--cells", "smoke/python/*", "--results", str(tmp_path), "--no-report")
    assert p.returncode == 0, p.stderr
    rundir = only_run(tmp_path)
    assert cell_files(rundir) == ["smoke__python__matmul__n24.json"]
    assert sorted(x.name for x in rundir.logs_dir.iterdir()) == ["smoke__python__matmul__n24.log"]
    (c,) = rundir.load_cells()
    assert c["status"] == "ok"
    assert not {"process", "processes", "repeat"} & set(c)
    for m in c["metrics"].values():
        assert not {"processes", "stop_reasons"} & set(m)
    assert "(process" not in p.stderr
    assert set(frames.samples_frame(load(rundir))["process"]) == {1}
    assert rundir.load_run()["repeat"] == 1


# -- failing processes, through execute() and the real local runner -----------------------------
def fault_cell(name, mode, fail_process):
    return Cell(id=f"test/repeat/{name}", source="smoke", stack="smoke-python", framework="python",
                workload="fault_injection", variant=mode,
                params={"mode": mode, "fail_process": fail_process}, metrics=("noop_time",),
                timeout_s=60)


def matmul_cell(name):
    return Cell(id=f"test/repeat/{name}", source="smoke", stack="smoke-python", framework="python",
                workload="smoke_stdlib", variant="matmul", params={"n": 8},
                metrics=("matmul_time", "matmul_flops"))


def run_cells(tmp_path, cells, repeat, runner=None, resume=False, name="run1"):
    suite = Suite("test", "test suite", [], {"budget": BUDGET, "quick_budget": BUDGET,
                                             "timeout_s": 60}, list(cells))
    rundir = results.RunDir(tmp_path / name)
    # a resume turning a fault off changes the cell's params: allowed explicitly (--allow-changed-data)
    run = execute(make_plan(suite, Options(repeat=repeat, allow_changed_data=resume)),
                  runner or LocalRunner(say=QUIET), rundir, ["test"], resume=resume, say=QUIET)
    return rundir, run


def test_a_failed_process_makes_the_cell_not_ok_and_keeps_the_other_processes_samples(tmp_path):
    cells = [fault_cell("raise2", "raise", 2), fault_cell("segv1", "segfault", 1),
             matmul_cell("fine")]
    rundir, run = run_cells(tmp_path, cells, repeat=2)
    status = {e["cell_id"]: (e["status"], e["reason"]) for e in run["cells"]}
    assert status["test/repeat/fine"] == ("ok", None)
    assert status["test/repeat/raise2"] == ("failed",
                                            "process 2 of 2: RuntimeError: injected failure")
    st, reason = status["test/repeat/segv1"]
    assert st == "crashed" and reason.startswith("process 1 of 2: ") and "SIGSEGV" in reason
    assert exit_code(run) == 1
    assert not validate.errors("run", json.loads(rundir.run_file.read_text()))

    raised = rundir.load_cell("test/repeat/raise2")
    check_merged(raised, 2)
    one = rundir.load_cell("test/repeat/raise2", 1)
    assert raised["metrics"]["noop_time"]["samples"] == one["metrics"]["noop_time"]["samples"]
    assert raised["metrics"]["noop_time"]["processes"] == [len(one["metrics"]["noop_time"]
                                                              ["samples"])] != [0]
    assert [(e["index"], e["status"]) for e in raised["processes"]] == [(1, "ok"), (2, "failed")]
    assert "injected failure" in raised["traceback"]
    assert raised["log_file"] == raised["processes"][1]["log_file"]  # the log that explains it

    # the crashed process wrote nothing: the host's placeholder is its process file
    segv = rundir.load_cell("test/repeat/segv1")
    check_merged(segv, 2)
    sf = frames.samples_frame(load(rundir))
    assert set(sf[sf.cell_id == "test/repeat/segv1"]["process"]) == {2}  # the process that measured
    assert set(sf[sf.cell_id == "test/repeat/raise2"]["process"]) == {1}
    placeholder = rundir.load_cell("test/repeat/segv1", 1)
    assert placeholder["process"] == 1 and placeholder["status"] == "crashed"
    assert placeholder["metrics"] == {}
    two = rundir.load_cell("test/repeat/segv1", 2)
    assert two["status"] == "ok"
    assert segv["metrics"]["noop_time"]["samples"] == two["metrics"]["noop_time"]["samples"]
    assert [(e["index"], e["status"]) for e in segv["processes"]] == [(1, "crashed"), (2, "ok")]
    assert segv["stack_fingerprint"] == two["stack_fingerprint"]  # base: the first ok process
    assert segv["processes"][0]["reason"] == placeholder["reason"]

    # resuming runs only the processes that are not ok; the fault is gone now
    cells = [fault_cell("raise2", "ok", None), fault_cell("segv1", "ok", None),
             matmul_cell("fine")]
    kept = {n: rundir.cell_path(*n).read_bytes() for n in
            [("test/repeat/raise2", 1), ("test/repeat/segv1", 2), ("test/repeat/fine", 1),
             ("test/repeat/fine", 2)]}
    rundir, run = run_cells(tmp_path, cells, repeat=2, resume=True)
    assert {e["cell_id"]: e["status"] for e in run["cells"]} == dict.fromkeys(
        ["test/repeat/raise2", "test/repeat/segv1", "test/repeat/fine"], "ok")
    for n, data in kept.items():
        assert rundir.cell_path(*n).read_bytes() == data, n
    for cid in ("test/repeat/raise2", "test/repeat/segv1"):
        merged = rundir.load_cell(cid)
        assert merged["status"] == "ok" and [e["status"] for e in merged["processes"]] == ["ok"] * 2
        assert len(check_merged(merged, 2)["noop_time"]) == 2


# -- the merge rule on its own ------------------------------------------------------------------
def process_result(i, status="ok", samples=(1.0, 2.0), reason=None):
    metrics = {} if status != "ok" else {"t": {
        "unit": "ms", "samples": list(samples), "raw_seconds": [s / 1000 for s in samples],
        "items_per_sample": 1, "derivation": "1000 * seconds", "warmup": 1,
        "warmup_seconds": [0.5], "stop_reason": "time_budget" if i == 1 else "max_samples",
        "method": "m", "sync": "n/a"}}
    return {"schema_version": formats.version("cell_result"), "kind": "cell_result", "run_id": "r",
            "cell_id": "a/b",
            "stack": "s", "workload": "w", "status": status, "reason": reason, "process": i,
            "started": f"2026-01-01T00:00:0{i}Z", "finished": f"2026-01-01T00:00:0{i}Z",
            "wall_s": 1.0, "metrics": metrics, "log_file": f"logs/a__b.p{i}.log",
            "load_avg": {"before": [float(i), 0.0, 0.0], "after": [0.5, float(i), 0.0]},
            "runner": {"name": "local", "process_wall_s": 2.0, "exit_code": 0}}


def test_a_cell_with_processes_still_to_run_is_pending_and_keeps_what_was_measured():
    merged = merge.merge({1: process_result(1)}, 3)
    assert merged["status"] == "pending"
    assert merged["reason"].startswith("process 2 of 3: not run yet")
    assert merged["metrics"]["t"]["samples"] == [1.0, 2.0]
    assert merged["metrics"]["t"]["processes"] == [2]
    assert not validate.errors("cell_result", merged)


def test_the_merge_of_three_processes_with_a_gap_and_a_failure():
    procs = {1: process_result(1, samples=(1.0,)), 2: process_result(2, "failed", reason="boom"),
             3: process_result(3, samples=(3.0, 4.0, 5.0))}
    merged = merge.merge(procs, 3)
    assert (merged["status"], merged["reason"]) == ("failed", "process 2 of 3: boom")
    m = merged["metrics"]["t"]
    assert m["samples"] == [1.0, 3.0, 4.0, 5.0] and m["processes"] == [1, 3]
    assert m["stop_reason"] == "time_budget" and m["stop_reasons"] == ["time_budget", "max_samples"]
    assert m["warmup"] == 1 and m["warmup_seconds"] == [0.5, 0.5]
    assert merged["wall_s"] == 3.0 and merged["runner"]["process_wall_s"] == 6.0
    assert "exit_code" not in merged["runner"]
    assert merged["load_avg"] == {"before": [3.0, 0.0, 0.0], "after": [0.5, 3.0, 0.0]}
    assert merged["started"] == "2026-01-01T00:00:01Z"
    assert merged["finished"] == "2026-01-01T00:00:03Z"
    assert merged["log_file"] == "logs/a__b.p2.log"
    assert [e["index"] for e in merged["processes"]] == [1, 2, 3]
    assert not validate.errors("cell_result", merged)
    # all ok: ok, with no reason
    procs[2] = process_result(2, samples=(2.0,))
    merged = merge.merge(procs, 3)
    assert (merged["status"], merged["reason"]) == ("ok", None)
    assert merged["metrics"]["t"]["processes"] == [1, 1, 3]


def test_the_state_each_process_started_from_is_kept_per_process():
    procs = {i: process_result(i, samples=(float(i),)) for i in (1, 2, 3)}
    for i, state in ((1, "Theano compile cache cold"), (2, "Theano compile cache warm")):
        procs[i]["metrics"]["t"]["state"] = state
    m = merge.merge(procs, 3)["metrics"]["t"]
    assert m["states"] == ["Theano compile cache cold", "Theano compile cache warm", None]
    assert "states" not in merge.merge({1: process_result(1)}, 1)["metrics"]["t"]


def test_process_files_are_not_cells_of_their_own(tmp_path):
    rundir = results.RunDir(tmp_path / "r")
    for i in (1, 2):
        rundir.write_process(process_result(i))
    rundir.write_cell(merge.merge({i: rundir.load_cell("a/b", i) for i in (1, 2)}, 2))
    assert [c["cell_id"] for c in rundir.load_cells()] == ["a/b"]
    run = models.run(run_id="r", cells=rundir.load_cells())
    assert len(frames.cells_frame(run)) == 1
    assert list(frames.samples_frame(run)["process"]) == [1, 1, 2, 2]


# -- the ETA counts K x cells of work -----------------------------------------------------------
def test_the_progress_counts_every_process_of_every_cell():
    a, b = SimpleNamespace(id="a", workload="w"), SimpleNamespace(id="b", workload="w")
    lines = []
    p = Progress([(a, 1), (b, 1), (a, 2), (b, 2)], say=lines.append,
                 stream=io.StringIO(), history={"a": 10.0, "b": 20.0}, repeat=2)
    assert p.eta() == 60.0
    p.start(a, process=1)
    assert lines[-1].startswith("[1/4] a (process 1 of 2)")
    p.done(a, "ok", 10.0, process=1)
    assert p.eta() == 50.0
    p.done(b, "ok", 20.0, process=1)
    p.start(a, process=2)
    assert lines[-1].startswith("[3/4] a (process 2 of 2)")
    assert p.eta() == 30.0


def test_earlier_times_of_a_repeated_run_are_per_process(tmp_path):
    d = tmp_path / "old"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({
        "runner": "local", "quick": True, "protocol": "budget", "repeat": 3,
        "started": "2026-01-01T00:00:00Z",
        "cells": [{"cell_id": "a", "status": "ok", "process_wall_s": 30.0}]}))
    assert progress.past_cell_times(tmp_path, "local", True, "budget") == {"a": 10.0}


# -- the Docker runner --------------------------------------------------------------------------
from runners.test_docker_runner import client  # noqa: E402,F401  (fixture; smoke_image is conftest's)


@pytest.mark.docker
def test_repeat_2_through_the_docker_runner(client, smoke_image, tmp_path):  # noqa: F811
    from reprokit.runners.docker import DockerRunner

    cells = [matmul_cell("fine"), fault_cell("exit1", "exit", 1)]
    rundir, run = run_cells(tmp_path, cells, repeat=2, runner=DockerRunner(client=client,
                                                                           say=QUIET))
    status = {e["cell_id"]: (e["status"], e["reason"]) for e in run["cells"]}
    assert status["test/repeat/fine"] == ("ok", None)
    st, reason = status["test/repeat/exit1"]
    assert st == "crashed" and reason == ("process 1 of 2: container exited with status 7 "
                                          "without writing a result")
    assert cell_files(rundir) == sorted(f"test__repeat__{n}{x}.json" for n in ("fine", "exit1")
                                        for x in ("", ".p1", ".p2"))
    fine = rundir.load_cell("test/repeat/fine")
    counts = check_merged(fine, 2)
    assert len(counts["matmul_time"]) == 2 and all(n >= 3 for n in counts["matmul_time"])
    containers = set()
    for i in (1, 2):
        r = rundir.load_cell("test/repeat/fine", i)
        assert r["process"] == i and r["status"] == "ok"
        assert r["runner"]["image_id"] == smoke_image["image_id"]
        assert r["stack_fingerprint"]["image"]["id"] == smoke_image["image_id"]
        containers.add(r["runner"]["container_id"])
    assert len(containers) == 2  # a fresh container per process
    assert fine["runner"]["image_id"] == smoke_image["image_id"]
    crashed = rundir.load_cell("test/repeat/exit1")
    check_merged(crashed, 2)
    two = rundir.load_cell("test/repeat/exit1", 2)
    assert crashed["metrics"]["noop_time"]["samples"] == two["metrics"]["noop_time"]["samples"]
    assert rundir.load_cell("test/repeat/exit1", 1)["status"] == "crashed"
    assert exit_code(run) == 1
    assert not client.containers.list(all=True, filters={"label": "reprokit.run=run1"})


def test_the_merged_jit_cache_is_the_worst_any_process_began_on():
    """A compile time is decided only on a warm cache: one cold process among K must show (the
    merge took the first ok process's state)."""

    def proc(i, cache):
        return {"cell_id": "c", "status": "ok", "reason": None, "metrics": {}, "jit_cache": cache,
                "process": i}

    assert merge.merge({1: proc(1, "warm"), 2: proc(2, "cold")}, 2)["jit_cache"] == "cold"
    assert merge.merge({1: proc(1, "warm"), 2: proc(2, "unknown")}, 2)["jit_cache"] == "unknown"
    assert merge.merge({1: proc(1, "warm"), 2: proc(2, "warm")}, 2)["jit_cache"] == "warm"
    assert merge.merge({1: proc(1, None)}, 1).get("jit_cache") is None  # older results


def test_an_interrupted_runs_message_counts_the_processes_it_keeps(tmp_path):
    """The README command on a fresh clone, stopped with SIGINT in round 3 of 3, said "0 cell(s)
    measured are kept" although 74 processes were: the message now counts the ok process files.
    The committed run was resumed to its end since; its round 3 removed, it is that stopped run."""
    import shutil
    from pathlib import Path

    from reprokit import results
    from reprokit.catalog import suites
    from reprokit.plan.plan import Options, make_plan
    from reprokit.run.execute import _ok_processes
    from reprokit.run.record import RunRecord

    src = Path(__file__).resolve().parents[2] / "docs" / "readme-run" / "20261126T205102Z-legacy-2017"
    run = tmp_path / src.name
    shutil.copytree(src / "cells", run / "cells")
    plan = make_plan(suites.load_suite("legacy-2017"), Options(repeat=3))
    rec = RunRecord(results.RunDir(run), {"run_id": run.name, "repeat": 3})
    assert _ok_processes(rec, plan) == 111  # 37 cells x 3 processes
    for f in (run / "cells").glob("*.p3.json"):
        f.unlink()
    assert _ok_processes(rec, plan) == 74  # 37 cells x 2 rounds


def test_a_run_resumed_by_another_kit_says_so_and_its_new_processes_record_that_kit(smoke_repeat2, tmp_path):
    """The README run, stopped at dff3a65 and resumed at 964c40f, recorded dff3a65 in the processes
    964c40f ran (the job carried run.json's kit). A resume by another kit now records an incident,
    and the processes it runs carry the kit that ran them."""
    import json

    from reprokit import files

    src, _ = smoke_repeat2
    rundir = results.RunDir(tmp_path / src.path.name)
    shutil.copytree(src.path, rundir.path)
    run = json.loads(rundir.run_file.read_text())
    run["kit"] = {**run["kit"], "git_commit": "0" * 40}  # as if another commit had started it
    rundir.run_file.write_text(json.dumps(run))
    cid = "smoke/python/matmul/n24"
    rundir.cell_path(cid, 2).unlink()
    kept = rundir.load_cell(cid, 1)["kit"]
    p = cli("run", "--suite", "smoke", "--runner", "local", "--quick", "--resume",
            str(rundir.path), "--results", str(tmp_path), "--no-report")
    assert p.returncode == 0, p.stderr
    now = files.kit_info()
    assert rundir.load_cell(cid, 2)["kit"] == now  # the process this sitting ran
    assert rundir.load_cell(cid, 1)["kit"] == kept  # the kept one is untouched
    (incident,) = [i for i in rundir.load_run()["incidents"] if i["kind"] == "resumed"]
    assert "0" * 40 in incident["text"] and str(now["git_commit"]) in incident["text"]
