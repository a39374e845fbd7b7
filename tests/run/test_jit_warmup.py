"""JIT is measured apart (reprokit/run/jit_warmup.py).

The warm-up runs for real: the executor, the local runner and bench/harness.py in processes of their
own. There is no GPU here, so a GPU run is described by a stored H100 fingerprint and a plan whose
preflight verdicts are given (pure data), and the CUDA driver's JIT cache is stood in for by
bench/workloads/test_gpu_runtime.py, which writes one file into $CUDA_CACHE_PATH as the driver stores
the machine code it JIT-compiles. The time limits are checked against the real legacy-2017 suite and
the real preflight on that fingerprint; the compile-time rule on synthetic results."""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reprokit import files, kitdata, results, validate
from reprokit.analysis import verdicts
from reprokit.catalog import suites
from reprokit.catalog.suites import Cell, Suite
from reprokit.errors import UserError
from reprokit.plan.plan import Options, bench_facts, make_job, make_plan, raise_timeout
from reprokit.probes import jit_cache
from reprokit.reader.frozen import thaw
from reprokit.reader.load import load
from reprokit.run import jit_warmup
from reprokit.run.execute import execute
from reprokit.runners import host_preflight
from reprokit.runners.local import LocalRunner
from tests import models

REPO = Path(__file__).resolve().parents[2]
H100 = json.loads((REPO / "tests" / "data" / "fingerprints" / "h100.json").read_text())
H100_KEY = "smoke-python | NVIDIA H100 80GB HBM3 | driver 570.133.20"
BUDGET = {"min_samples": 5, "max_samples": 5, "time_budget_s": 0, "warmup": 0}
QUIET = lambda *_: None  # noqa: E731


class RecordingRunner(LocalRunner):
    """The real local runner; it only notes which job and cell each process ran, in order."""

    def __init__(self):
        super().__init__(say=QUIET)
        self.calls: list[tuple[str, str]] = []

    def run_cell(self, prepared, job_path, cell, results_dir, log_path, process=None):
        self.calls.append((Path(job_path).name, cell["id"]))
        return super().run_cell(prepared, job_path, cell, results_dir, log_path, process)


def cache_cell(name: str) -> Cell:
    return Cell(id=f"test/jit/{name}", source="smoke", stack="smoke-python", framework="python",
                workload="test_gpu_runtime", variant=None, params={"write_cuda_cache": True},
                metrics=("cache_files",), timeout_s=60)


def matmul_cell(name: str) -> Cell:
    return Cell(id=f"test/matmul/{name}", source="smoke", stack="smoke-python", framework="python",
                workload="smoke_stdlib", variant="matmul", params={"n": 8},
                metrics=("matmul_time", "matmul_flops"))


def plan_for(cells, device: str, status: str = "ok", host: dict | None = None):
    """A plan decided for the local runner on `host` with the given preflight status per cell."""
    suite = Suite("test", "test suite", [], {"budget": BUDGET, "quick_budget": BUDGET,
                                             "timeout_s": 60}, list(cells))
    plan = make_plan(suite, Options(device=device))
    given = {c.id: {"runnable": True, "status": status, "reasons": [], "checks": [], "env": {}}
             for c in cells}
    return replace(plan, runner="local", host=host, verdicts=given)


def run_plan(tmp_path, plan, runner, resume=False):
    rundir = results.RunDir(tmp_path / "run1")
    run = execute(plan, runner, rundir, ["test"], resume=resume, say=QUIET)
    return rundir, run


@pytest.fixture
def cuda_cache(tmp_path, monkeypatch):
    """An empty CUDA JIT cache directory of this test's own (the local runner passes the variable on)."""
    path = tmp_path / "cuda-cache"
    path.mkdir()
    monkeypatch.setenv("CUDA_CACHE_PATH", str(path))
    monkeypatch.delenv(jit_warmup.ENV, raising=False)
    return path


def test_gpu_run_warms_up_once_before_the_first_timed_cell(tmp_path, cuda_cache):
    cells = [cache_cell("first"), cache_cell("second")]
    runner = RecordingRunner()
    rundir, run = run_plan(tmp_path, plan_for(cells, "gpu", host=H100), runner)
    # one untimed process of the first cell, through the same runner, before any timed one
    assert runner.calls == [("smoke-python.jit-warmup.json", "test/jit/first"),
                            ("smoke-python.json", "test/jit/first"),
                            ("smoke-python.json", "test/jit/second")]
    doc = json.loads(rundir.run_file.read_text())
    assert not validate.errors("run", doc)
    assert list(doc["jit_warmups"]) == [H100_KEY]
    rec = doc["jit_warmups"][H100_KEY]
    assert rec["status"] == "ok" and rec["cell_id"] == "test/jit/first"
    assert rec["gpu"] == "NVIDIA H100 80GB HBM3" and rec["driver"] == "570.133.20"
    assert rec["cache_at_start"] == "cold" and rec["wall_s"] > 0
    # its result and log lie apart from the cells, with a one-sample budget; no cell entry of its own
    wdir = rundir.path / rec["dir"]
    warm_result = json.loads((wdir / "test__jit__first.json").read_text())
    assert warm_result["metrics"]["cache_files"]["samples"] == [1]
    assert warm_result["jit_cache"] == "compiled"  # the stand-in kernel went into the empty cache
    assert rec["cache"] == "compiled"
    assert (wdir / "warmup.log").exists()
    assert sorted(p.name for p in rundir.cells_dir.iterdir()) == ["test__jit__first.json",
                                                                   "test__jit__second.json"]
    assert [c["cell_id"] for c in doc["cells"]] == ["test/jit/first", "test/jit/second"]
    first, second = (rundir.load_cell(c.id) for c in cells)
    for res in (first, second):
        assert res["status"] == "ok", res["reason"]
        assert not validate.errors("cell_result", res)
        assert res["jit_warmup_s"] == rec["wall_s"]
    # the timed cells started on the cache the warm-up filled and compiled nothing: without the
    # warm-up the first one compiled its kernel inside its own process
    assert first["jit_cache"] == "warm" and first["stack_fingerprint"]["cuda_cache"]["at_start"]["files"] == 1
    assert first["metrics"]["cache_files"]["samples"] == [1]
    assert second["jit_cache"] == "warm"


def test_a_resumed_run_does_not_warm_up_again(tmp_path, cuda_cache):
    cells = [cache_cell("first"), cache_cell("second")]
    rundir, run = run_plan(tmp_path, plan_for(cells, "gpu", host=H100), RecordingRunner())
    rec = json.loads(rundir.run_file.read_text())["jit_warmups"][H100_KEY]
    rundir.cell_path("test/jit/second").unlink()  # lost: --resume measures it again
    again = RecordingRunner()
    rundir, run = run_plan(tmp_path, plan_for(cells, "gpu", host=H100), again, resume=True)
    assert again.calls == [("smoke-python.json", "test/jit/second")]
    assert json.loads(rundir.run_file.read_text())["jit_warmups"] == {H100_KEY: rec}
    assert rundir.load_cell("test/jit/second")["jit_warmup_s"] == rec["wall_s"]


def test_a_cpu_run_has_no_warmup(tmp_path, cuda_cache):
    runner = RecordingRunner()
    rundir, run = run_plan(tmp_path, plan_for([matmul_cell("a")], "cpu"), runner)
    assert runner.calls == [("smoke-python.json", "test/matmul/a")]
    assert not json.loads(rundir.run_file.read_text()).get("jit_warmups")
    assert not (rundir.path / jit_warmup.WARMUP_DIR).exists()
    res = rundir.load_cell("test/matmul/a")
    assert res["jit_warmup_s"] is None and res["jit_cache"] == "n/a"


def test_the_switch_forces_it_on_a_cpu_cell_and_turns_it_off(tmp_path, cuda_cache, monkeypatch):
    monkeypatch.setenv(jit_warmup.ENV, "force")
    runner = RecordingRunner()
    rundir, run = run_plan(tmp_path, plan_for([matmul_cell("a")], "cpu"), runner)
    assert runner.calls == [("smoke-python.jit-warmup.json", "test/matmul/a"),
                            ("smoke-python.json", "test/matmul/a")]
    rec = json.loads(rundir.run_file.read_text())["jit_warmups"]["smoke-python | cpu"]
    assert rec["cache_at_start"] == "n/a" and rec["status"] == "ok"
    res = rundir.load_cell("test/matmul/a")
    assert res["jit_warmup_s"] == rec["wall_s"] and res["jit_cache"] == "n/a"
    # the warm-up took one sample; the timed cell its own budget's five, none of the warm-up's
    warm = json.loads((rundir.path / rec["dir"] / "test__matmul__a.json").read_text())
    assert len(warm["metrics"]["matmul_time"]["samples"]) == 1
    assert len(res["metrics"]["matmul_time"]["samples"]) == 5
    assert res["metrics"]["matmul_time"]["raw_seconds"] != warm["metrics"]["matmul_time"]["raw_seconds"]

    monkeypatch.setenv(jit_warmup.ENV, "off")  # a GPU run without it: the cell compiles its kernel
    off = RecordingRunner()
    rundir, run = run_plan(tmp_path / "off", plan_for([cache_cell("x")], "gpu", host=H100), off)
    assert off.calls == [("smoke-python.json", "test/jit/x")]
    res = rundir.load_cell("test/jit/x")
    assert res["jit_warmup_s"] is None and res["jit_cache"] == "compiled"
    assert res["stack_fingerprint"]["cuda_cache"]["at_start"]["files"] == 0


def test_a_probe_cell_is_its_own_first_start(tmp_path, monkeypatch):
    """gpu-smoke probes time their first call, PTX JIT included: no warm-up before them, even forced."""
    monkeypatch.setenv(jit_warmup.ENV, "force")

    class NoRunner:
        def run_cell(self, *args, **kwargs):
            raise AssertionError("no process may run for a probe's warm-up")

    job = {"schema_version": 1, "run_id": "r", "stack": "torch-0.1", "kit": files.kit_info(),
           "out_dir": str(tmp_path), "facts": bench_facts(), "device": "gpu",
           "cells": [{"id": "gpu-smoke/torch-0.1", "source": "gpu-smoke", "workload": "probe_torch",
                      "params": {}, "metrics": ["first_call_time"], "budget": {"min_samples": 1},
                      "protocol": "budget", "timeout_s": 3600}]}
    job_path = tmp_path / "jobs" / "torch-0.1.json"
    job_path.parent.mkdir()
    job_path.write_text(json.dumps(job))
    run = {"host_fingerprint": H100}
    got = jit_warmup.before_cell(run, NoRunner(), {}, job_path, job["cells"][0],
                                 results.RunDir(tmp_path), "torch-0.1", QUIET)
    assert got is None and "jit_warmups" not in run


def test_a_bad_switch_value_is_one_line(monkeypatch):
    monkeypatch.setenv(jit_warmup.ENV, "sometimes")
    with pytest.raises(UserError, match="REPROKIT_JIT_WARMUP='sometimes' is not one of auto, off, force"):
        jit_warmup.mode()


def test_the_key_is_stack_gpu_model_and_driver():
    assert jit_warmup.key("tf-1.2", "gpu", H100) == "tf-1.2 | NVIDIA H100 80GB HBM3 | driver 570.133.20"
    assert jit_warmup.key("tf-1.2", "cpu", H100) == "tf-1.2 | cpu"
    assert jit_warmup.key("tf-1.2", "gpu", {"nvidia": {"available": False}}) == \
        "tf-1.2 | unknown GPU | driver unknown"


# -- time limits: a cell preflight expects to pay PTX JIT gets the documented allowance --------------
def test_ptx_jit_cells_get_more_time_on_an_h100():
    allowance = kitdata.load("compat")["jit"]["timeout_allowance_s"]
    assert kitdata.load("compat")["jit"]["timeout_allowance_source"]
    suite = suites.load_suite("legacy-2017")
    plan = make_plan(suite, Options(device="gpu"))
    given = host_preflight.suite_verdicts(plan.runnable, H100, "slurm", "gpu", other_host=True)
    assert {v["status"] for v in given.values()} == {"jit"}  # CUDA 8 binaries: PTX only on sm_90
    gpu = replace(plan, runner="slurm", host=H100, verdicts=given)
    cpu = make_plan(suite, Options(device="cpu"))
    for stack in gpu.by_stack():
        job = make_job(gpu, stack, "r", files.kit_info(), "/tmp/out")
        assert not validate.errors("job", job)
        plain = {c["id"]: c for c in make_job(cpu, stack, "r", files.kit_info(), "/tmp/out")["cells"]}
        for jc in job["cells"]:
            assert jc["timeout_s"] == plain[jc["id"]]["timeout_s"] + allowance == 1200 + allowance
            assert jc["timeout_jit_allowance_s"] == allowance
            assert "timeout_jit_allowance_s" not in plain[jc["id"]]


def test_native_cells_keep_their_time_limit():
    cell = {"id": "c", "timeout_s": 1200}
    for verdict in (None, {"status": "ok"}, {"status": "probe"}):
        raise_timeout(cell, verdict)
        assert cell == {"id": "c", "timeout_s": 1200}


def test_the_raised_limit_reaches_the_job_the_harness_reads(tmp_path, cuda_cache, monkeypatch):
    monkeypatch.setenv(jit_warmup.ENV, "off")
    rundir, run = run_plan(tmp_path, plan_for([cache_cell("j")], "gpu", "jit", H100), RecordingRunner())
    job = json.loads((rundir.jobs_dir / "smoke-python.json").read_text())
    allowance = kitdata.load("compat")["jit"]["timeout_allowance_s"]
    assert job["cells"][0]["timeout_s"] == 60 + allowance


# -- compile-time verdicts only on a warm cache ------------------------------------------------------
def _m40():
    """The stored M40 run as the model, its cell results as plain documents (to change a copy of one
    and build it again with models.cell), and source 000's published numbers by id."""
    run = load(REPO / "tests" / "data" / "runs" / "m40-same")
    cells = {c.cell_id: thaw(c.doc) for c in run.cell_results()}
    numbers = {n["id"]: n for n in suites.load_published("000")}
    return run, cells, numbers


@pytest.mark.parametrize("state, words", [("cold", "was empty when the cell began"),
                                          ("compiled", "grew while the cell ran"),
                                          ("unknown", "was not recorded")])
def test_a_gpu_compile_time_off_a_warm_cache_gets_no_verdict(state, words):
    run, cells, numbers = _m40()
    n = numbers["000-L008"]  # compile time, 3 samples: DEVIATES_FASTER on a warm cache
    cell = cells[n["cell"]]
    assert verdicts.verdict(n, models.cell(cell), run)["verdict"] == "DEVIATES_FASTER"
    odd = copy.deepcopy(cell)
    odd["jit_cache"] = state
    got = verdicts.verdict(n, models.cell(odd), run)
    assert got["verdict"] == "INCONCLUSIVE"
    assert words in got["reason"] and f"jit_cache {state}" in got["reason"]
    assert "compile times get a verdict only where the cache shows no JIT" in got["reason"]


def test_older_gpu_results_are_read_from_their_fingerprint():
    run, cells, numbers = _m40()
    n = numbers["000-L008"]
    cell = copy.deepcopy(cells[n["cell"]])
    del cell["jit_cache"]
    assert verdicts.verdict(n, models.cell(cell), run)["verdict"] == "INCONCLUSIVE"  # nothing recorded
    cell["stack_fingerprint"]["cuda_cache"] = {"cold": False, "disabled": False}
    assert verdicts.verdict(n, models.cell(cell), run)["verdict"] == "DEVIATES_FASTER"
    cell["stack_fingerprint"]["cuda_cache"]["cold"] = True
    assert "jit_cache cold" in verdicts.verdict(n, models.cell(cell), run)["reason"]


def test_other_metrics_and_cpu_cells_are_unchanged():
    run, cells, numbers = _m40()
    n = numbers["000-L012"]  # cudnn train time: not a compile time
    cell = copy.deepcopy(cells[n["cell"]])
    cell["jit_cache"] = "cold"
    assert verdicts.verdict(n, models.cell(cell), run)["verdict"] == "REPRODUCED"
    assert verdicts.cold_compile("compile_time", models.cell(device="cpu")) is None
    assert verdicts.cold_compile("compile_time", models.cell(device="cpu", jit_cache="n/a")) is None


# -- bench side ---------------------------------------------------------------------------------------
CACHE_RECORDS = [  # (cuda_cache record, state): the stored H100 cells' four cases and the edges
    ({"at_start": {"files": 0, "writable": True}, "at_end": {"files": 2}, "cold": True}, "compiled"),
    ({"at_start": {"files": 2, "writable": True}, "at_end": {"files": 18}, "cold": False}, "compiled"),
    ({"at_start": {"files": 2, "writable": True}, "at_end": {"files": 2}, "cold": False}, "warm"),
    ({"at_start": {"files": 0, "writable": True}, "at_end": {"files": 0}, "cold": True}, "none"),
    ({"at_start": {"files": 0, "writable": True}, "cold": True}, "cold"),  # a start-only record
    ({"at_start": {"files": 3, "writable": True}, "cold": False}, "warm"),
    ({"cold": True, "disabled": False}, "cold"),
    ({"cold": False, "disabled": False}, "warm"),
    ({"at_start": {"files": 0}, "at_end": {"files": 0}, "cold": True, "disabled": True}, "cold"),
    ({"at_start": {"files": 0}, "at_end": {"files": 4}, "cold": True, "disabled": True}, "cold"),
    ({"at_start": {"files": 0, "writable": False}, "at_end": {"files": 0}, "cold": True}, "cold"),
    ({"at_start": {"error": "OSError: x"}, "at_end": {"files": 1}}, "unknown"),
    ({"error": "OSError: x"}, "unknown"),
    (None, "unknown"),
]


@pytest.mark.parametrize("record, state", CACHE_RECORDS)
def test_the_harness_and_the_host_read_a_cache_record_alike(record, state):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import harness
    finally:
        sys.path.remove(str(REPO / "bench"))
    assert jit_cache.from_record(record) == state
    assert harness.jit_cache_state("gpu", record) == state
    assert harness.jit_cache_state("cpu", record) == "n/a"
    result = {"device": "gpu", "stack_fingerprint": {"cuda_cache": record}, "jit_cache": "cold"}
    if record and "at_end" in record:  # a process result: its own record decides
        assert jit_cache.state(result) == state
    else:  # older results: what the harness stored
        assert jit_cache.state(result) == "cold"


def test_the_stored_h100_cells_are_labelled_by_what_their_cache_did():
    """Read at the start only, 5 of the 6 stacked-lstm cells said "cold"; 4 of them added no file."""
    run = REPO / "docs" / "gpu-run" / "20261126T180107Z-stacked-lstm-2019" / "cells"
    got = {p.stem.split("__", 2)[2]: jit_cache.state(json.loads(p.read_text()))
           for p in run.glob("*.json")}
    assert got == {"eager_cudnn__forward": "compiled", "eager_cudnn__train": "warm",
                   "eager_fine_grained__forward": "none", "eager_fine_grained__train": "none",
                   "jit_static__forward": "none", "jit_static__train": "none"}
    modern = REPO / "docs" / "gpu-run" / "20261126T175907Z-modern" / "cells"
    cell = json.loads((modern / "modern__003__pytorch__jit_fine_grained_fixed__train.json").read_text())
    assert cell["jit_cache"] == "warm"  # as stored: the start's reading
    assert jit_cache.state(cell) == "compiled"
    assert "grew by 16 file(s), 188,429 bytes" in jit_cache.describe(cell)


SYNC_ORDER = r"""
import json, sys, tempfile
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/workloads"]
import timing
from workloads import s000_theano as w
ticks = []
real_clock = timing.clock
def clock():
    ticks.append("clock")
    return real_clock()
timing.clock = clock
real_sync_for = w._sync_for
def sync_for(theano, gpu):
    ticks.append("sync_for")
    return real_sync_for(theano, gpu)
w._sync_for = sync_for
theano = w._import_theano(tempfile.mkdtemp())
w._build_and_compile(theano, "fastlstm", 2, 2, 4, False)
print(json.dumps(ticks))
"""


def test_theano_chooses_its_sync_before_the_compile_timer(theano_python, tmp_path):
    """Looking the sync function up imports theano.sandbox.cuda (nvcc on a GPU): before the timer."""
    import os
    import subprocess

    env = dict(os.environ, THEANO_FLAGS="cxx=")  # Theano's Python ops: no C compile, seconds
    out = subprocess.run([theano_python, "-c", SYNC_ORDER, str(REPO / "bench")], capture_output=True,
                         text=True, timeout=600, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    ticks = json.loads(out.stdout.strip().splitlines()[-1])
    assert ticks[0] == "sync_for" and ticks.count("sync_for") == 1 and "clock" in ticks


def test_the_warmup_runs_in_the_cells_image_and_fills_its_jit_volume(tmp_path, smoke_image,
                                                                      monkeypatch):
    """The Docker runner: the warm-up is a container of the stack's image with the run's JIT cache
    volume (turned on for this CPU run, as tests/runners/test_docker_runner.py does), its result in warmup/,
    and the first timed cell's container finds the file the warm-up's container wrote there."""
    import uuid

    from conftest import docker_client

    from reprokit.containers import spec
    from reprokit.runners.docker import DockerRunner

    client = docker_client()
    monkeypatch.setenv(jit_warmup.ENV, "force")
    runner = DockerRunner(client=client, say=QUIET, jit_cache=True)
    runner._host_key = f"test-{uuid.uuid4().hex[:8]}"  # a volume of this test's own
    name = spec.jit_volume_name("smoke-python", "cpu", smoke_image["image_id"], runner._host_key)
    cells = [cache_cell("d1"), cache_cell("d2")]
    try:
        rundir, run = run_plan(tmp_path, plan_for(cells, "cpu"), runner)
        doc = json.loads(rundir.run_file.read_text())
        assert not validate.errors("run", doc)
        rec = doc["jit_warmups"]["smoke-python | cpu"]
        assert rec["status"] == "ok", rec["reason"]
        warm = json.loads((rundir.path / rec["dir"] / "test__jit__d1.json").read_text())
        assert warm["stack_fingerprint"]["cuda_cache"]["cold"] is True
        assert sorted(p.name for p in rundir.cells_dir.glob("*.json")) == ["test__jit__d1.json",
                                                                           "test__jit__d2.json"]
        first, second = (rundir.load_cell(c.id) for c in cells)
        for res in (first, second):
            assert res["status"] == "ok", res["reason"]
            assert res["runner"]["jit_cache"]["volume"] == name
            assert res["jit_warmup_s"] == rec["wall_s"] and res["jit_cache"] == "n/a"
        cache = first["stack_fingerprint"]["cuda_cache"]
        assert cache["cold"] is False and cache["at_start"]["files"] == 1  # the warm-up's file
        assert first["metrics"]["cache_files"]["samples"] == [1]  # served from it, not compiled again
    finally:
        try:
            client.volumes.get(name).remove(force=True)
        except Exception:
            pass
