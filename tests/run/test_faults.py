"""Fault injection against the real driver: nothing measured is ever lost.

Each test starts `reproduce.py run --suite smoke` as a real process, slowed down with
--min-samples so a cell lasts seconds, and injects one fault while a cell runs: SIGINT to the
process group, SIGTERM, SIGKILL of the driver, SIGKILL of the cell, a second driver on the same
run, a disk that fills up (a small tmpfs), a results directory that turns read-only (a read-only
bind mount), damaged or deleted result files; with the Docker runner: the container killed, the
driver killed, the engine stopped (a private dockerd of the test's own, so no other test loses its
engine). Each asserts that every sample measured before the fault is still on disk, byte for byte,
that no harness process or container of the run is left, that `report` renders and says what
happened, and that `--resume` measures only what is missing.

Mounts need root (tests run as root in CI): a test that cannot mount fails, it does not skip.
Docker tests skip only when no engine answers (as in test_docker_runner.py).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import docker_client

from reprokit import files, results
from reprokit.plan.plan import bench_facts
from reprokit.probes import processes
from reprokit.reader.reconcile import cell_id_of
from reprokit.run import lifecycle
from reprokit.run.record import write_run
from reprokit.runners import cell_process

REPO = Path(__file__).resolve().parents[2]
MATMUL = "smoke/python/matmul/n24"
LSTM = "smoke/pytorch/nn_lstm/b8-s5-h32"
# The LSTM cell takes ~3.5 s and the matmul cell ~4.5 s here with 4000 samples (1.1 s and 1.4 s with
# 1000, which let a cell finish between "it runs" and the fault on a fast machine: 2026-11-25, idle).
SLOW = ["--min-samples", "4000"]
STARTED = re.compile(r"^\[\d+/\d+\] (\S+)", re.M)


# -- helpers ------------------------------------------------------------------------------------
def wait_until(cond, timeout: float, what: str, poll: float = 0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def cli(*args, timeout=300, env=None):
    return subprocess.run([sys.executable, str(REPO / "reproduce.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env=env)


class Driver:
    """`reproduce.py run --suite smoke ...` in a session of its own (its own process group, as a
    shell's foreground job: a terminal's Ctrl-C is SIGINT to that group)."""

    count = 0

    def __init__(self, root: Path, *args, env=None, log_dir: Path | None = None):
        Driver.count += 1
        self.root = Path(root)
        self.err_path = Path(log_dir or self.root.parent) / f"driver-{Driver.count}.err"
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "reproduce.py"), "run", "--suite", "smoke",
             "--results", str(root), "--no-report", *args],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.err_path, "w"), start_new_session=True, env=env)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self, timeout: float = 180) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        return self.err_path.read_text()

    def rundir(self) -> results.RunDir:
        def find():
            runs = [p for p in self.root.iterdir() if (p / "run.json").exists()] \
                if self.root.is_dir() else []
            return runs[0] if len(runs) == 1 else None
        return results.RunDir(wait_until(find, 60, f"a run directory under {self.root}"))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_json(rundir: results.RunDir) -> dict:
    try:
        return json.loads(rundir.run_file.read_text())
    except (OSError, ValueError):
        return {}


def harness_pids(rundir: results.RunDir, cell_id: str | None = None) -> list[int]:
    """Processes running bench/harness.py on a job of this run (for `cell_id` only, when given):
    a /proc scan, no psutil."""
    needle = str(rundir.path.resolve())
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(a.endswith("harness.py") for a in args) and any(needle in a for a in args) \
                and (cell_id is None or cell_id in args):
            out.append(int(d.name))
    return out


def wait_mid_cell(driver: Driver, cell_id: str) -> results.RunDir:
    """Wait until `cell_id` runs (its harness process exists) and has run for a second."""
    rundir = driver.rundir()
    wait_until(lambda: harness_pids(rundir, cell_id), 120,
               f"{cell_id} to start ({driver.stderr()[-500:]})")
    time.sleep(1.0)
    assert driver.proc.poll() is None, driver.stderr()
    assert harness_pids(rundir, cell_id), f"{cell_id} ended too soon: slow it down"
    return rundir


def snapshot(rundir: results.RunDir) -> dict[str, bytes]:
    """Every result file of the run (main and process files), by name."""
    return {p.name: p.read_bytes() for p in rundir.cells_dir.glob("*.json")
            if not p.name.startswith(".")}


def assert_kept(before: dict[str, bytes], rundir: results.RunDir) -> None:
    """Every result file measured before the fault is on disk, byte for byte."""
    now = snapshot(rundir)
    for name, data in before.items():
        assert now.get(name) == data, f"{name} changed or vanished"


def no_harness_left(rundir: results.RunDir, within: float = 10.0) -> None:
    wait_until(lambda: not harness_pids(rundir), within,
               f"the harness processes of {rundir.path.name} to end: {harness_pids(rundir)}")


def started_cells(stderr: str) -> list[str]:
    return STARTED.findall(stderr)


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.startswith("reproduce.py:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr, stderr
    return lines[0]


def report(rundir: results.RunDir):
    p = cli("report", str(rundir.path))
    md = (rundir.path / "report.md").read_text() if (rundir.path / "report.md").exists() else ""
    return p, md


def resume(rundir: results.RunDir, *args, env=None):
    return cli("run", "--suite", "smoke", "--resume", str(rundir.path), "--results",
               str(rundir.path.parent), "--no-report", *args, env=env)


# -- signals ------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["SIGINT to the process group", "SIGTERM to the driver"])
def test_a_signal_stops_the_running_cell_and_resume_measures_only_it(tmp_path, how):
    d = Driver(tmp_path / "results", "--runner", "local", *SLOW)
    try:
        rundir = wait_mid_cell(d, LSTM)
        before = snapshot(rundir)
        assert results.cell_filename(MATMUL) in before
        t = time.monotonic()
        if how.startswith("SIGINT"):
            os.killpg(d.pid, signal.SIGINT)
            expected = 130
        else:
            os.kill(d.pid, signal.SIGTERM)
            expected = 143
        assert d.wait(cell_process.TIMEOUT_GRACE_S + 60) == expected, d.stderr()
        took = time.monotonic() - t
    finally:
        d.kill()
    # the bound is the kit's own: the grace a cell process gets to stop, and the driver's writes after;
    # a loaded machine (the CI beside an image build) took over 30 s, so no figure of this machine's speed
    assert took < cell_process.TIMEOUT_GRACE_S + 30, f"the driver took {took:.1f} s to stop"
    line = one_line(d.stderr())
    sig = "SIGINT" if expected == 130 else "SIGTERM"
    assert f"interrupted by {sig}" in line and LSTM in line and "--resume" in line, line
    no_harness_left(rundir, within=2)
    assert_kept(before, rundir)
    run = rundir.load_run()
    assert run["finished"] and run["current"] is None
    entry = {e["cell_id"]: e for e in run["cells"]}
    assert entry[MATMUL]["status"] == "ok"
    assert entry[LSTM]["status"] == "interrupted" and sig in entry[LSTM]["reason"]
    assert run["incidents"][-1]["kind"] == "interrupted"
    p, md = report(rundir)
    assert p.returncode == 1, p.stderr
    assert "This run is incomplete" in md and "**INTERRUPTED**" in md and sig in md
    assert "Every cell ran and produced its metrics" not in md
    p = resume(rundir, "--runner", "local", *SLOW)
    assert p.returncode == 0, p.stderr
    assert started_cells(p.stderr) == [LSTM], p.stderr
    assert f"resume: {MATMUL} already measured, kept" in p.stderr
    assert_kept(before, rundir)
    assert {e["status"] for e in rundir.load_run()["cells"]} == {"ok"}
    no_harness_left(rundir, within=2)


def test_sigkill_of_the_driver_takes_its_cell_with_it(tmp_path):
    d = Driver(tmp_path / "results", "--runner", "local", *SLOW)
    try:
        rundir = wait_mid_cell(d, LSTM)
        # Freeze the cell first, so it cannot finish on its own between this check and the
        # kill however fast the machine is: only the parent-death signal can end it now.
        frozen = harness_pids(rundir, LSTM)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        assert frozen and not rundir.cell_path(LSTM).exists()
        before = snapshot(rundir)
        os.kill(d.pid, signal.SIGKILL)
        d.wait(10)
    finally:
        d.kill()
    no_harness_left(rundir, within=5)  # the cell's parent-death signal (SIGKILL ends stopped ones)
    time.sleep(0.5)
    assert not (rundir.cell_path(LSTM)).exists()
    assert_kept(before, rundir)
    p, md = report(rundir)
    assert p.returncode == 1 and "incomplete" in p.stderr, p.stderr
    assert "**INTERRUPTED**" in md and "ended without finishing the run" in md
    assert not rundir.load_run().get("incidents")  # the report only reads; the resume records it
    p = resume(rundir, "--runner", "local", *SLOW)
    assert p.returncode == 0, p.stderr
    assert started_cells(p.stderr) == [LSTM], p.stderr
    assert [i["kind"] for i in rundir.load_run()["incidents"]] == ["driver_lost"]
    assert_kept(before, rundir)
    no_harness_left(rundir, within=2)


def test_a_driver_killed_before_its_first_cell_leaves_a_run_to_resume(tmp_path):
    """run.json is written before the CPU probe: a driver killed during the probe or its first
    cell leaves a run that `report` and `--resume` know."""
    d = Driver(tmp_path / "results", "--runner", "local", *SLOW)
    try:
        rundir = d.rundir()  # waits for run.json
        os.kill(d.pid, signal.SIGKILL)
        d.wait(10)
    finally:
        d.kill()
    no_harness_left(rundir, within=5)
    run = rundir.load_run()
    assert {e["cell_id"] for e in run["cells"]} == {MATMUL, LSTM}
    p, md = report(rundir)
    assert p.returncode == 1 and "incomplete" in p.stderr, p.stderr
    assert "**PENDING**" in md or "**INTERRUPTED**" in md
    p = resume(rundir, "--runner", "local", *SLOW)
    assert p.returncode == 0, p.stderr
    assert sorted(started_cells(p.stderr)) == sorted([MATMUL, LSTM]), p.stderr
    assert {e["status"] for e in rundir.load_run()["cells"]} == {"ok"}


def test_sigkill_of_the_cell_is_a_crash_not_out_of_memory(tmp_path):
    d = Driver(tmp_path / "results", "--runner", "local", *SLOW)
    try:
        rundir = wait_mid_cell(d, LSTM)
        before = snapshot(rundir)
        for pid in harness_pids(rundir):
            os.kill(pid, signal.SIGKILL)
        assert d.wait(60) == 1, d.stderr()
    finally:
        d.kill()
    assert_kept(before, rundir)
    entry = {e["cell_id"]: e for e in rundir.load_run()["cells"]}[LSTM]
    assert entry["status"] == "crashed", entry
    assert "killed by SIGKILL (no out-of-memory evidence" in entry["reason"], entry
    p, md = report(rundir)
    # complete (a crash is a cell's result), and exit 1 as the run itself did (not 0)
    assert p.returncode == 1 and "did not finish ok" in p.stderr and "incomplete" not in p.stderr, p.stderr
    assert "no out-of-memory evidence" in md
    p = resume(rundir, "--runner", "local", *SLOW)
    assert p.returncode == 0, p.stderr
    assert started_cells(p.stderr) == [LSTM], p.stderr
    assert_kept(before, rundir)


# -- result files damaged after the run -----------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("finished")
    p = cli("run", "--suite", "smoke", "--runner", "local", "--quick", "--results", str(root),
            "--no-report")
    assert p.returncode == 0, p.stderr
    (path,) = [q for q in root.iterdir() if (q / "run.json").exists()]
    return path


def copy_run(src: Path, tmp_path: Path) -> results.RunDir:
    import shutil
    dst = tmp_path / "results" / src.name
    shutil.copytree(src, dst)
    return results.RunDir(dst)


def _damage(path: Path, how: str) -> None:
    text = path.read_text()
    doc = json.loads(text)
    samples = doc["metrics"]["matmul_time"]["samples"]
    if how == "truncated":
        path.write_text(text[: len(text) // 2])
    elif how == "deleted":
        path.unlink()
    elif how in ("NaN", "1e308", "-0.63"):
        raw = text.replace(json.dumps(samples[0]), how, 1)
        assert raw != text
        path.write_text(raw)


@pytest.mark.parametrize("how", ["truncated", "deleted", "NaN", "1e308", "-0.63"])
def test_a_damaged_result_is_set_aside_reported_and_remeasured(finished_run, tmp_path, how):
    rundir = copy_run(finished_run, tmp_path)
    victim = rundir.cell_path(MATMUL)
    original = victim.read_bytes()
    _damage(victim, how)
    damaged = victim.read_bytes() if victim.exists() else None
    other = rundir.cell_path(LSTM).read_bytes()
    p, md = report(rundir)
    assert p.returncode == 1, p.stderr
    label = "MISSING" if how == "deleted" else "INVALID"
    assert f"1 {label}" in p.stderr and MATMUL in p.stderr, p.stderr
    assert f"**{label}** {MATMUL}" in md and "Every cell ran and produced" not in md
    # the other cell is still reported with its numbers
    rep = json.loads((rundir.path / "report.json").read_text())
    assert rep["status_counts"] == {"ok": 1, label.lower(): 1}
    assert any(u["cell"] == LSTM for u in rep["unmatched"]), rep["unmatched"]
    # the report only reads: the damaged file stays where it is and run.json is not rewritten
    assert (victim.read_bytes() if victim.exists() else None) == damaged
    assert not rundir.invalid_dir.exists()
    entry = {e["cell_id"]: e for e in rundir.load_run()["cells"]}[MATMUL]
    assert entry["status"] == "ok"
    p = resume(rundir, "--runner", "local", "--quick")
    assert p.returncode == 0, p.stderr
    assert started_cells(p.stderr) == [MATMUL], p.stderr
    if damaged is not None:  # the resume moved it aside, kept as it was
        (kept,) = list(rundir.invalid_dir.iterdir())
        assert kept.name.startswith(victim.name + ".") and kept.read_bytes() == damaged
    assert rundir.cell_path(LSTM).read_bytes() == other
    again = rundir.load_cell(MATMUL)
    assert again["status"] == "ok" and victim.read_bytes() != original
    p, md = report(rundir)
    assert p.returncode == 0 and "incomplete" not in md, p.stderr


def test_a_result_run_json_does_not_list_is_adopted_never_remeasured(finished_run, tmp_path):
    """The orphan of a driver killed outright finished its cell after the driver's last write:
    run.json still says pending, the file is complete and valid."""
    rundir = copy_run(finished_run, tmp_path)
    run = json.loads(rundir.run_file.read_text())
    for e in run["cells"]:
        if e["cell_id"] == LSTM:
            e.update(status="pending", reason="not run yet", process_wall_s=None)
    run["finished"] = None
    run["current"] = {"cell_id": LSTM, "process": None, "started": run["started"],
                      "driver": {"pid": 999999, "host": "elsewhere"}}
    write_run(rundir, run)
    before = snapshot(rundir)
    p = resume(rundir, "--runner", "local", "--quick")
    assert p.returncode == 0, p.stderr
    assert started_cells(p.stderr) == [], p.stderr
    assert "adopted" in p.stderr or "kept the file's" in p.stderr, p.stderr
    assert_kept(before, rundir)
    assert {e["status"] for e in rundir.load_run()["cells"]} == {"ok"}


def test_resume_refuses_options_that_change_measurements(finished_run, tmp_path):
    rundir = copy_run(finished_run, tmp_path)
    before = snapshot(rundir)
    run_before = rundir.run_file.read_bytes()
    for extra, word in [((), "without --quick"), (("--quick", "--time-budget", "5"), "--time-budget"),
                        (("--quick", "--min-samples", "9"), "--min-samples"),
                        (("--quick", "--protocol", "published"), "--protocol published"),
                        (("--quick", "--repeat", "2"), "--repeat")]:
        p = resume(rundir, "--runner", "local", *extra)
        assert p.returncode == 2, (extra, p.stderr)
        line = one_line(p.stderr)
        assert "cannot resume" in line or "--repeat" in line, line
        assert word in line, (extra, line)
    p = cli("run", "--suite", "legacy-2017", "--runner", "local", "--quick", "--resume",
            str(rundir.path), "--results", str(rundir.path.parent), "--no-report")
    assert p.returncode == 2 and "for suite smoke" in one_line(p.stderr), p.stderr
    assert_kept(before, rundir)
    assert rundir.run_file.read_bytes() == run_before


# -- one writer per run ---------------------------------------------------------------------------
def test_a_second_driver_on_a_running_run_exits_2_naming_the_first(tmp_path):
    d = Driver(tmp_path / "results", "--runner", "local", *SLOW)
    try:
        rundir = wait_mid_cell(d, LSTM)
        p = resume(rundir, "--runner", "local", *SLOW)
        assert d.proc.poll() is None
        assert d.wait(180) == 0, d.stderr()
    finally:
        d.kill()
    assert p.returncode == 2, p.stderr
    line = one_line(p.stderr)
    assert f"pid {d.pid} on host {processes.host_name()}" in line, line
    assert started_cells(p.stderr) == []
    assert started_cells(d.stderr()) == [MATMUL, LSTM]
    assert {e["status"] for e in rundir.load_run()["cells"]} == {"ok"}


def test_new_runs_never_share_a_directory(tmp_path):
    root = tmp_path / "results"
    first = lifecycle.make_run_dir(root, "20260101T000000Z-smoke")
    second = lifecycle.make_run_dir(root, "20260101T000000Z-smoke")
    assert (first.name, second.name) == ("20260101T000000Z-smoke", "20260101T000000Z-smoke-2")
    # two drivers started together: two runs, each complete
    a = Driver(root / "live", "--runner", "local", "--quick")
    b = Driver(root / "live", "--runner", "local", "--quick")
    try:
        assert a.wait(180) == 0 and b.wait(180) == 0, (a.stderr(), b.stderr())
    finally:
        a.kill()
        b.kill()
    runs = [results.RunDir(p) for p in (root / "live").iterdir()]
    assert len(runs) == 2
    for r in runs:
        run = r.load_run()
        assert r.path.name == run["run_id"] and {e["status"] for e in run["cells"]} == {"ok"}
        assert {c["run_id"] for c in r.load_cells()} == {run["run_id"]}


# -- the disk -------------------------------------------------------------------------------------
def mount(*args) -> None:
    p = subprocess.run(["mount", *args], capture_output=True, text=True)
    assert p.returncode == 0, (f"`mount {' '.join(args)}` failed ({p.stderr.strip()}): these tests "
                               "need root and mount(8), as CI has")


def umount(target: Path) -> None:
    subprocess.run(["umount", str(target)], capture_output=True)
    if os.path.ismount(target):
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path):
    target = tmp_path / "disk"
    target.mkdir()
    mount("-t", "tmpfs", "-o", "size=40m", "tmpfs", str(target))
    yield target
    umount(target)


def fill(disk: Path) -> Path:
    """Fill the file system to the last block; the filler file's path."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (2**20, 4096, 1):
            block = b"\0" * size
            try:
                while True:
                    os.write(fd, block)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_disk_that_fills_up_mid_cell_is_one_line_and_resume_completes(small_disk, tmp_path):
    d = Driver(small_disk / "results", "--runner", "local", *SLOW, log_dir=tmp_path)
    try:
        rundir = wait_mid_cell(d, LSTM)
        before = snapshot(rundir)
        filler = fill(small_disk)
        assert d.wait(120) == 2, d.stderr()
    finally:
        d.kill()
    line = one_line(d.stderr())
    assert "the disk is full" in line and "--results" in line, line
    no_harness_left(rundir, within=2)
    assert_kept(before, rundir)
    run_json(rundir)["cells"]  # run.json is still whole
    filler.unlink()
    p, md = report(rundir)
    assert p.returncode == 1, p.stderr
    assert f"**INTERRUPTED** {LSTM}" in md and "full or read-only disk" in md
    p = resume(rundir, "--runner", "local", *SLOW)
    assert p.returncode == 0, p.stderr
    assert started_cells(p.stderr) == [LSTM], p.stderr
    assert_kept(before, rundir)


def test_a_results_directory_that_turns_read_only_mid_cell(tmp_path):
    d = Driver(tmp_path / "results", "--runner", "local", *SLOW)
    target = None
    try:
        rundir = wait_mid_cell(d, LSTM)
        before = snapshot(rundir)
        target = rundir.path
        mount("--bind", str(target), str(target))  # a read-only view of the run directory
        mount("-o", "remount,bind,ro", str(target))
        assert d.wait(120) == 2, d.stderr()
    finally:
        d.kill()
        if target is not None:
            umount(target)
    assert not os.path.ismount(target)
    line = one_line(d.stderr())
    assert "read-only" in line, line
    no_harness_left(rundir, within=2)
    assert_kept(before, rundir)
    p, md = report(rundir)
    assert p.returncode == 1, p.stderr
    assert f"**INTERRUPTED** {LSTM}" in md
    p = resume(rundir, "--runner", "local", *SLOW)
    assert p.returncode == 0, p.stderr
    assert started_cells(p.stderr) == [LSTM], p.stderr
    assert_kept(before, rundir)


# -- the harness on its own: limits that hold without the driver ----------------------------------
def _harness_job(tmp_path: Path, seconds: float, timeout: float, grace: float) -> Path:
    job = {"schema_version": 1, "run_id": "h", "stack": "smoke-python", "kit": {},
           "out_dir": str(tmp_path / "cells"), "facts": bench_facts(), "device": "cpu",
           "timeout_grace_s": grace,
           "cells": [{"id": "t/sleep", "source": "smoke", "workload": "test_sleep", "variant": None,
                      "params": {"seconds": seconds}, "metrics": ["slept"],
                      "budget": {"min_samples": 1}, "protocol": "budget", "timeout_s": timeout}]}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def test_the_harness_ends_a_cell_at_its_time_limit_without_the_driver(tmp_path):
    job = _harness_job(tmp_path, seconds=60, timeout=1, grace=1)
    t = time.monotonic()
    p = subprocess.run([sys.executable, str(REPO / "bench" / "harness.py"), str(job)],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == -signal.SIGALRM, (p.returncode, p.stdout, p.stderr)
    assert time.monotonic() - t < 15
    from reprokit.runners.local import describe_exit
    assert describe_exit(p.returncode)[0] == "timeout"


def test_the_harness_stops_when_its_drivers_heartbeat_goes_stale(tmp_path):
    job = _harness_job(tmp_path, seconds=60, timeout=600, grace=0)
    beat = tmp_path / ".heartbeat"
    beat.touch()
    env = {**os.environ, "REPROKIT_HEARTBEAT": str(beat), "REPROKIT_HEARTBEAT_STALE_S": "2"}
    t = time.monotonic()
    p = subprocess.run([sys.executable, str(REPO / "bench" / "harness.py"), str(job)],
                       capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == cell_process.HEARTBEAT_EXIT, (p.returncode, p.stdout, p.stderr)
    assert 2 <= time.monotonic() - t < 15
    assert "heartbeat" in p.stdout and "driver is gone" in p.stdout


def test_a_stopped_driver_stops_its_local_cell_and_resume_measures_it(tmp_path):
    """SIGSTOP (or Ctrl-Z) of the driver: its cell no longer measures on unobserved until its
    timeout; it sees the heartbeat go stale and ends, the driver, continued, records it as
    interrupted (nothing else lost) and --resume measures it."""
    env = {**os.environ, "REPROKIT_HEARTBEAT_STALE_S": "2"}
    d = Driver(tmp_path / "results", "--runner", "local", "--cells", MATMUL, "--min-samples", "100000",
               env=env)
    try:
        rundir = wait_mid_cell(d, MATMUL)
        os.kill(d.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: not harness_pids(rundir, MATMUL), 30, "the cell to stop itself")
        finally:
            os.kill(d.pid, signal.SIGCONT)
        assert d.wait(120) == 1, d.stderr()
    finally:
        d.kill()
    entry = {e["cell_id"]: e for e in rundir.load_run()["cells"]}[MATMUL]
    assert entry["status"] == "interrupted" and "driver was stopped" in entry["reason"], entry
    log = rundir.path / "logs" / "smoke__python__matmul__n24.log"
    assert "driver is gone or stopped" in log.read_text()
    p, md = report(rundir)  # incomplete: --resume measures an interrupted cell again
    assert p.returncode == 1 and "INTERRUPTED" in p.stderr and "--resume" in p.stderr, p.stderr


# -- honest reasons ---------------------------------------------------------------------------------
def test_sigkill_is_out_of_memory_only_with_evidence(tmp_path, monkeypatch):
    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    monkeypatch.setattr(cell_process, "cgroup_oom_file", lambda pid, root=None: events)
    monkeypatch.setattr(cell_process, "kernel_log", lambda: "6,1,2,-;some other line\n")
    w = cell_process.OomWatch(4242)
    status, reason = w.verdict()
    assert status == "crashed" and reason.startswith("killed by SIGKILL (no out-of-memory evidence")
    assert "stayed at 1" in reason and "no kernel log line names pid 4242" in reason
    events.write_text("low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\n")
    status, reason = w.verdict()
    assert status == "oom" and "rose from 1 to 2" in reason
    monkeypatch.setattr(cell_process, "cgroup_oom_file", lambda pid, root=None: None)
    monkeypatch.setattr(cell_process, "kernel_log", lambda: (
        "3,900,1,-;Out of memory: Killed process 4242 (python3) total-vm:1kB, anon-rss:1kB\n"))
    status, reason = cell_process.OomWatch(4242).verdict()
    assert status == "oom" and "Killed process 4242" in reason
    monkeypatch.setattr(cell_process, "kernel_log", lambda: None)
    status, reason = cell_process.OomWatch(4242).verdict()
    assert status == "crashed" and "kernel log not readable" in reason


def test_the_cgroup_counter_of_this_host_is_found_or_said_missing():
    """On this host: the file is found (cgroup v1 or v2) and its counter reads as a number; or, when
    it is not found, this process's cgroup really has no readable OOM counter."""
    f = cell_process.cgroup_oom_file(os.getpid())
    if f is not None:
        assert isinstance(cell_process.read_oom_kills(f), int)
    else:
        lines = Path(f"/proc/{os.getpid()}/cgroup").read_text().splitlines()
        paths = [ln.split(":", 2)[2].lstrip("/") for ln in lines if ln.count(":") >= 2]
        root = cell_process.CGROUP_ROOT
        candidates = [root / sub / p / name for p in paths for sub in ("", "unified", "memory")
                      for name in ("memory.events", "memory.oom_control")]
        assert not any(c.is_file() for c in candidates), candidates


def test_reconcile_reads_strictly():
    with pytest.raises(ValueError):
        files.loads_strict('{"a": NaN}')
    with pytest.raises(ValueError):
        files.loads_strict('{"a": 1e400}')
    assert cell_id_of("smoke__python__matmul__n24.json") == MATMUL
    # an id holding '__' itself: the file name cannot be reversed, run.json's id is taken
    odd = "000/pytorch/x__y/b1"
    assert cell_id_of(results.cell_filename(odd)) != odd
    assert cell_id_of(results.cell_filename(odd), {results.cell_filename(odd): odd}) == odd


# -- the Docker runner ------------------------------------------------------------------------------
# One cell in two processes (containers): process 1 is measured before the fault, process 2 takes it.
def docker_args(samples: int = 3000) -> list[str]:
    return ["--runner", "docker", "--cells", MATMUL, "--repeat", "2", "--min-samples", str(samples)]


@pytest.fixture(scope="module")
def client():
    return docker_client()


def containers_of(client, rundir: results.RunDir, all_: bool = True, process: int | None = None):
    """The run's containers (by its run id; the run ids of these tests' runs are unique on the
    host only within a second, so also by the mounted run directory). Sparse: from the list call
    alone, so a container that removes itself meanwhile cannot make a second inspect call fail
    (a 404 that once failed the killed-driver test under two test workers)."""
    found = client.containers.list(all=all_, sparse=True,
                                   filters={"label": f"reprokit.run={rundir.path.name}"})
    mine = []
    for c in found:
        mounts = {m.get("Source") for m in c.attrs.get("Mounts") or []}
        if str(rundir.path.resolve()) in mounts and (
                process is None or (c.attrs.get("Labels") or {}).get("reprokit.process") == str(process)):
            mine.append(c)
    return mine


def mid_process_2(d: Driver, client) -> tuple[results.RunDir, object]:
    rundir = d.rundir()
    wait_until(lambda: containers_of(client, rundir, False, process=2), 180,
               f"process 2's container ({d.stderr()[-500:]})")
    time.sleep(1.0)
    (container,) = containers_of(client, rundir, False, process=2)
    assert d.proc.poll() is None, d.stderr()
    container.reload()
    assert container.status == "running", "process 2 ended too soon: slow it down"
    return rundir, container


def docker_errors():
    import docker.errors

    return docker.errors


def started_processes(stderr: str) -> list[str]:
    return re.findall(r"^\[\d+/\d+\] (\S+ \(process \d) of \d\)", stderr, re.M)


@pytest.mark.docker
def test_docker_a_killed_container_is_a_crash_without_oom_evidence(client, smoke_image, tmp_path):
    d = Driver(tmp_path / "results", *docker_args())
    try:
        rundir, container = mid_process_2(d, client)
        before = snapshot(rundir)
        assert results.cell_filename(MATMUL, 1) in before
        container.kill()
        assert d.wait(120) == 1, d.stderr()
    finally:
        d.kill()
    assert not containers_of(client, rundir)
    assert_kept({k: v for k, v in before.items() if ".p1." in k}, rundir)
    entry = {e["cell_id"]: e for e in rundir.load_run()["cells"]}[MATMUL]
    assert entry["status"] == "crashed", entry
    assert "process 2 of 2: container killed by SIGKILL" in entry["reason"]
    assert "no out-of-memory evidence" in entry["reason"]
    p, md = report(rundir)
    assert p.returncode == 1 and "did not finish ok" in p.stderr, p.stderr  # as the run's exit status
    assert "SIGKILL" in md
    p = resume(rundir, *docker_args())
    assert p.returncode == 0, p.stderr
    assert started_processes(p.stderr) == [f"{MATMUL} (process 2"], p.stderr
    assert_kept({k: v for k, v in before.items() if ".p1." in k}, rundir)
    assert not containers_of(client, rundir)


@pytest.mark.docker
def test_docker_a_killed_driver_leaves_a_container_that_stops_itself(client, smoke_image, tmp_path):
    env = {**os.environ, "REPROKIT_HEARTBEAT_STALE_S": "2"}
    d = Driver(tmp_path / "results", *docker_args(6000), env=env)
    try:
        rundir, container = mid_process_2(d, client)
        before = snapshot(rundir)
        os.kill(d.pid, signal.SIGKILL)
        d.wait(10)
        t = time.monotonic()
        # it stops itself (stale heartbeat); the driver's successor then removes it: it is not left
        # listed as exited until a resume (with the successor gone too, the next command
        # that talks to the engine removes it: tests/containers/test_docker_reaper.py)
        wait_until(lambda: not containers_of(client, rundir), 60,
                   "the orphaned container to stop itself and the driver's successor to remove it")
    finally:
        d.kill()
    assert time.monotonic() - t < 30
    with pytest.raises(docker_errors().NotFound):
        container.reload()
    log = rundir.log_path(MATMUL, 2).read_text()  # its output, saved by the successor
    assert "heartbeat" in log and "stopping" in log.lower(), log
    assert not rundir.cell_path(MATMUL, 2).exists()
    assert_kept(before, rundir)
    p, md = report(rundir)
    assert p.returncode == 1, p.stderr
    assert "ended without finishing the run" in md
    p = resume(rundir, *docker_args(6000))
    assert p.returncode == 0, p.stderr
    assert started_processes(p.stderr) == [f"{MATMUL} (process 2"], p.stderr
    assert_kept({k: v for k, v in before.items() if ".p1." in k}, rundir)
    assert not containers_of(client, rundir)


class PrivateEngine:
    """A dockerd of the test's own (data root, socket, no bridge, no iptables) in a network
    namespace of its own (dockerd with --bridge none deletes the host's docker0), so stopping it
    mid-run takes nothing away from the engine every other test uses."""

    def __init__(self, client, image_tag: str):
        import tempfile
        self.dir = Path(tempfile.mkdtemp(prefix="rkd-", dir="/tmp"))  # a socket path is short
        self.sock = self.dir / "docker.sock"
        self.host = f"unix://{self.sock}"
        self.proc = None
        self.start()
        out = subprocess.run(f"docker save {image_tag} | docker -H {self.host} load", shell=True,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr

    def start(self) -> None:
        import shutil
        dockerd, unshare = shutil.which("dockerd"), shutil.which("unshare")
        assert dockerd, "dockerd is not installed (scripts/test.sh installs docker.io)"
        assert unshare, "unshare (util-linux) is not installed"
        self.log = open(self.dir / "dockerd.log", "a")
        self.proc = subprocess.Popen(
            [unshare, "--net", dockerd, "--data-root", str(self.dir / "data"),
             "--exec-root", str(self.dir / "exec"), "--pidfile", str(self.dir / "docker.pid"),
             "--host", self.host, "--bridge", "none",
             "--iptables=false", "--ip-masq=false", "--containerd-namespace", "rkd",
             "--containerd-plugins-namespace", "rkd-plugins"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        import docker
        def answers():
            try:
                return docker.DockerClient(base_url=self.host, timeout=5).ping()
            except Exception:
                return False
        wait_until(answers, 60, f"the private dockerd to answer ({self.dir / 'dockerd.log'})", 0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def client(self):
        import docker
        return docker.DockerClient(base_url=self.host, timeout=60)

    def close(self) -> None:
        import shutil
        self.stop()
        subprocess.run(f"grep -o ' {self.dir}[^ ]*' /proc/mounts | xargs -r umount -l", shell=True)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.mark.docker
def test_docker_the_engine_stopped_mid_cell(client, smoke_image, tmp_path):
    links = sorted(os.listdir("/sys/class/net"))
    eng = PrivateEngine(client, smoke_image["tag"])
    try:
        env = {**os.environ, "DOCKER_HOST": eng.host}
        own = eng.client()
        d = Driver(tmp_path / "results", *docker_args(), env=env)
        try:
            rundir, _ = mid_process_2(d, own)
            before = snapshot(rundir)
            eng.stop()  # SIGTERM to dockerd: it stops its containers and goes away
            assert d.wait(120) == 1, d.stderr()
        finally:
            d.kill()
        line = one_line(d.stderr())
        assert "Docker engine stopped answering" in line and "--resume" in line, line
        assert_kept({k: v for k, v in before.items() if ".p1." in k}, rundir)
        entry = {e["cell_id"]: e for e in rundir.load_run()["cells"]}[MATMUL]
        assert entry["status"] == "interrupted" and "engine" in entry["reason"], entry
        p, md = report(rundir)
        assert p.returncode == 1, p.stderr
        assert "**INTERRUPTED**" in md and "Docker engine stopped answering" in md
        eng.start()
        own = eng.client()
        p = resume(rundir, *docker_args(), env=env)
        assert p.returncode == 0, p.stderr
        assert started_processes(p.stderr) == [f"{MATMUL} (process 2"], p.stderr
        assert_kept({k: v for k, v in before.items() if ".p1." in k}, rundir)
        assert not containers_of(own, rundir)
    finally:
        eng.close()
    client.ping()  # the engine every other test uses is still there, its network too
    assert sorted(os.listdir("/sys/class/net")) == links
