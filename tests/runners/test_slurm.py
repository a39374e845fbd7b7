"""`--runner slurm` on a real one-node Slurm cluster: scripts/slurm-setup.sh starts
munged, slurmctld and slurmd on this machine (CI runs it from scripts/test.sh; the fixture runs it
again, it is idempotent). Every test submits real jobs through the real sbatch and follows them
with the real squeue; the faults are real: a job over its time limit, a job cancelled with
scancel, the node set DOWN with scontrol while a cell runs, the driver killed with SIGKILL and
re-attached with --resume, Ctrl-C (SIGINT to the driver's process group), a results directory the
node cannot see (a private mount namespace of the driver). Each checks that what was measured
before the fault is still on disk, byte for byte. Needs root (CI runs as root): a cluster that
cannot be started fails the tests, it does not skip them.
"""

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import docker_client
from run.test_faults import (
    LSTM,
    MATMUL,
    Driver,
    assert_kept,
    cli,
    harness_pids,
    no_harness_left,
    snapshot,
    wait_until,
)

from reprokit import results
from reprokit.catalog.suites import load_stacks
from reprokit.containers import recipes

REPO = Path(__file__).resolve().parents[2]
SLOW = ["--min-samples", "3000"]  # the LSTM cell takes ~18 s here, the matmul cell ~3 s
NODE = socket.gethostname().split(".")[0]


@pytest.fixture(scope="module")
def cluster():
    p = subprocess.run(["bash", str(REPO / "scripts" / "slurm-setup.sh")], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, f"scripts/slurm-setup.sh failed: {p.stdout[-2000:]} {p.stderr[-2000:]}"
    yield NODE
    subprocess.run(["bash", str(REPO / "scripts" / "slurm-setup.sh")], capture_output=True,
                   timeout=600)


def only_run(root: Path) -> results.RunDir:
    runs = [p for p in Path(root).iterdir() if (p / "run.json").exists()]
    assert len(runs) == 1, runs
    return results.RunDir(runs[0])


def entries(rundir: results.RunDir) -> dict[str, dict]:
    return {e["cell_id"]: e for e in rundir.load_run()["cells"]}


def job_of(rundir: results.RunDir, cell_id: str) -> str:
    """The newest Slurm job id (<array>_<task>) of a cell, from run.json."""
    found = None
    for job in rundir.load_run().get("slurm", {}).get("jobs", []):
        for t in job["tasks"]:
            if t["cell_id"] == cell_id:
                found = f"{job['job_id']}_{t['index']}"
    assert found, f"no job of {cell_id} in run.json"
    return found


def squeue_state(job: str) -> str:
    p = subprocess.run(["squeue", "-h", "-r", "--states=all", "-j", job.split("_")[0], "-o", "%i %T"],
                       capture_output=True, text=True, timeout=30)
    for line in p.stdout.splitlines():
        jid, state = line.split()
        if jid == job:
            return state
    return "UNKNOWN"


def wait_slurm_cell(driver: Driver, cell_id: str) -> results.RunDir:
    """Until the cell's harness runs (its Slurm task started it) and has run for a second."""
    rundir = driver.rundir()
    wait_until(lambda: harness_pids(rundir, cell_id), 180,
               f"{cell_id} to start under Slurm ({driver.stderr()[-800:]})", poll=0.2)
    time.sleep(1.0)
    assert driver.proc.poll() is None, driver.stderr()
    assert harness_pids(rundir, cell_id), f"{cell_id} ended too soon: slow it down"

    def others_collected():  # the driver rewrites a finished cell's file when it collects it
        run = json.loads(rundir.run_file.read_text()) if rundir.run_file.exists() else {}
        return all(e.get("status") != "pending" for e in run.get("cells", []) if e["cell_id"] != cell_id)
    wait_until(others_collected, 60, "the driver to collect the cells that ended before " + cell_id)
    return rundir


def resume_all_ok(rundir: results.RunDir, before: dict) -> str:
    """`run --resume RUN --runner slurm` after a fault: exit 0, everything measured before the fault
    kept byte for byte, every cell ok; returns what the driver said (stderr)."""
    p = cli("run", "--suite", "smoke", "--resume", str(rundir.path), "--runner", "slurm",
            "--results", str(rundir.path.parent), "--no-report", *SLOW, timeout=600)
    assert p.returncode == 0, p.stderr
    assert_kept(before, rundir)
    assert {x["status"] for x in entries(rundir).values()} == {"ok"}
    return p.stderr


def check_cell_record(cell: dict, launcher: str) -> None:
    """Each cell records its launcher, Slurm job, node, partition and the node's fingerprint."""
    r = cell["runner"]
    assert r["name"] == "slurm" and r["launcher"] == launcher, r
    assert r["job_id"].split("_")[0].isdigit() and r["job_id"].split("_")[1].isdigit(), r
    assert r["node"] == NODE and r["partition"] == "debug", r
    assert r["exclusive"] is True
    fp = r["node_fingerprint"]
    assert fp["kind"] == "host_fingerprint" or fp.get("host_id"), fp
    assert fp["cpu"] and fp["memory"], fp
    assert "gflops" in (r["node_cpu_peak"] or {}), r["node_cpu_peak"]


# -- the smoke suite, every cell ok ---------------------------------------------------------------
def test_smoke_suite_through_slurm_with_the_local_launcher(cluster, tmp_path):
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--quick", "--results", str(tmp_path),
            timeout=600)
    assert p.returncode == 0, p.stderr
    assert "probe job" in p.stderr and "launcher local" in p.stderr, p.stderr
    rundir = only_run(tmp_path)
    run = rundir.load_run()
    assert run["runner"] == "slurm" and run["finished"] and not run.get("incidents")
    assert {e["status"] for e in run["cells"]} == {"ok"}, run["cells"]
    jobs = run["slurm"]["jobs"]
    assert {j["stack"] for j in jobs} == {"smoke-python", "torch-0.1"}
    assert all("--exclusive" in j["sbatch"] and "--no-requeue" in j["sbatch"] for j in jobs)
    for c in rundir.load_cells():
        check_cell_record(c, "local")
        assert job_of(rundir, c["cell_id"]) == c["runner"]["job_id"]
        assert c["metrics"], c["cell_id"]
    # the local stand-in's substitutes are recorded as with the local runner
    lstm = rundir.load_cell(LSTM)
    assert lstm["implementation"]["substitutes"], lstm["implementation"]
    md = (rundir.path / "report.md").read_text()
    assert "slurm" in md


def test_smoke_suite_through_slurm_with_the_docker_launcher(cluster, tmp_path, monkeypatch):
    from reprokit.containers.build import build_image

    client = docker_client()
    monkeypatch.setenv("REPROKIT_IMAGE_LOCK", str(tmp_path / "lock.json"))  # the driver's too
    build_image(client, "smoke-python", say=lambda *_: None)
    build_image(client, "legacy-2017-pytorch", say=lambda *_: None)
    env = dict(os.environ)
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--slurm-launcher", "docker", "--quick",
            "--results", str(tmp_path / "r"), timeout=900, env=env)
    assert p.returncode == 0, p.stderr
    rundir = only_run(tmp_path / "r")
    for c in rundir.load_cells():
        assert c["status"] == "ok", c["reason"]
        check_cell_record(c, "docker")
        r = c["runner"]
        assert r["image_id"].startswith("sha256:") and r["container_name"].startswith("reprokit-slurm-")
        assert r["security"]["network_mode"] == "none" and r["security"]["cap_drop"] == ["ALL"]
        # the image's interpreter ran, by the absolute path the container spec names (/usr/bin/python3
        # in the smoke image, the venv's in the others), not the host's: on a host whose Python is
        # Debian's too, a prefix test (/usr) could not tell them apart
        image = load_stacks()[c["stack"]]["image"]
        assert r["python"] == recipes.interpreter(image), r
        assert c["stack_fingerprint"]["python"]["executable"] == r["python"] != sys.executable
    # every container is gone (docker run --rm)
    left = client.containers.list(all=True, filters={"label": f"reprokit.run_dir={rundir.path.resolve()}"})
    assert not left, [c.name for c in left]


# -- faults ---------------------------------------------------------------------------------------
def test_a_cell_over_its_time_limit_ends_timeout(cluster, tmp_path):
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--slurm-time", "1", "--cells", LSTM,
            "--min-samples", "100000", "--results", str(tmp_path), "--no-report", timeout=400)
    assert p.returncode == 1, p.stderr
    rundir = only_run(tmp_path)
    cell = rundir.load_cell(LSTM)
    assert cell["status"] == "timeout", cell["reason"]
    assert "TIMEOUT" in cell["reason"] and "time limit" in cell["reason"], cell["reason"]
    assert cell["runner"]["state"] == "TIMEOUT" and cell["runner"]["node"] == NODE
    no_harness_left(rundir, within=30)


def test_the_runs_time_limit_stops_what_still_runs_with_scancel(cluster, tmp_path):
    """--time-limit holds for the Slurm runner as for the local one: cells that cannot end by the limit
    (100,000 samples each, minutes of work on any machine) are stopped at it with scancel, recorded
    `skipped` with the limit's reason (while running, or before they started), and nothing is left in
    the queue; a run that measured nothing exits 1."""
    t0 = time.monotonic()
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--time-limit", "1m", "--min-samples",
            "100000", "--results", str(tmp_path), timeout=600)
    took = time.monotonic() - t0
    assert p.returncode == 1 and "no cell of the run measured anything" in p.stderr, p.stderr
    rundir = only_run(tmp_path)
    run = rundir.load_run()
    assert {e["status"] for e in run["cells"]} == {"skipped"}, run["cells"]
    for e in run["cells"]:
        assert e["skip"]["when"] in ("while_running", "before_start"), e
        assert "--time-limit" in e["reason"], e["reason"]
    jobs = [f"{j['job_id']}" for j in run["slurm"]["jobs"]]
    wait_until(lambda: not _in_queue(jobs), 60, f"the run's jobs {jobs} to leave the queue", poll=1.0)
    # the stop waits at most 30 s for Slurm to confirm, then records the rest; without the limit the
    # LSTM cell alone runs for minutes (100,000 samples), so these bounds hold however loaded the host
    assert run["wall_s"] < 150, run["wall_s"]
    assert took < 300, took


def test_a_job_cancelled_mid_run_is_interrupted_and_resume_measures_only_it(cluster, tmp_path):
    d = Driver(tmp_path / "results", "--runner", "slurm", *SLOW)
    try:
        rundir = wait_slurm_cell(d, LSTM)
        before = snapshot(rundir)
        assert results.cell_filename(MATMUL) in before
        job = job_of(rundir, LSTM)
        subprocess.run(["scancel", job], check=True, timeout=30)
        assert d.wait(120) == 1, d.stderr()
    finally:
        d.kill()
    no_harness_left(rundir, within=30)
    assert_kept(before, rundir)
    e = entries(rundir)
    assert e[MATMUL]["status"] == "ok"
    assert e[LSTM]["status"] == "interrupted", e[LSTM]
    assert "CANCELLED" in e[LSTM]["reason"] and job in e[LSTM]["reason"], e[LSTM]["reason"]
    said = resume_all_ok(rundir, before)
    assert "submitted 1 cell(s) of torch-0.1" in said and "smoke-python as" not in said
    assert rundir.load_cell(LSTM)["runner"]["job_id"] != job


def test_a_node_set_down_mid_cell_is_node_fail_and_resume_measures_only_it(cluster, tmp_path):
    d = Driver(tmp_path / "results", "--runner", "slurm", *SLOW)
    try:
        rundir = wait_slurm_cell(d, LSTM)
        before = snapshot(rundir)
        job = job_of(rundir, LSTM)
        subprocess.run(["scontrol", "update", f"nodename={cluster}", "state=down",
                        "reason=reprokit-test"], check=True, timeout=30)
        assert d.wait(120) == 1, d.stderr()
    finally:
        d.kill()
        subprocess.run(["bash", str(REPO / "scripts" / "slurm-setup.sh")], capture_output=True,
                       timeout=300)  # the node back up (it may have returned by itself)
    no_harness_left(rundir, within=30)
    assert_kept(before, rundir)
    e = entries(rundir)
    assert e[MATMUL]["status"] == "ok"
    assert e[LSTM]["status"] == "interrupted", e[LSTM]
    assert "NODE_FAIL" in e[LSTM]["reason"] and "DOWN" in e[LSTM]["reason"], e[LSTM]["reason"]
    assert squeue_state(job) == "NODE_FAIL"
    resume_all_ok(rundir, before)


def test_a_killed_driver_leaves_its_jobs_running_and_resume_reattaches(cluster, tmp_path):
    d = Driver(tmp_path / "results", "--runner", "slurm", *SLOW)
    try:
        rundir = wait_slurm_cell(d, LSTM)
        before = snapshot(rundir)
        job = job_of(rundir, LSTM)
        d.proc.kill()  # SIGKILL: no cleanup at all
        d.wait(30)
    finally:
        d.kill()
    assert harness_pids(rundir, LSTM), "the cell's job should outlive its driver"
    assert squeue_state(job) == "RUNNING"
    jobs_before = [j["job_id"] for j in rundir.load_run()["slurm"]["jobs"]]
    said = resume_all_ok(rundir, before)
    assert f"re-attached to {LSTM}" in said and f"job {job}" in said, said
    assert "submitted" not in said, said  # nothing re-submitted
    run = rundir.load_run()
    assert [j["job_id"] for j in run["slurm"]["jobs"]] == jobs_before
    assert rundir.load_cell(LSTM)["runner"]["job_id"] == job
    assert any(i["kind"] == "driver_lost" for i in run.get("incidents", []))


def test_ctrl_c_cancels_what_the_driver_submitted(cluster, tmp_path):
    d = Driver(tmp_path / "results", "--runner", "slurm", *SLOW)
    try:
        rundir = wait_slurm_cell(d, LSTM)
        before = snapshot(rundir)
        job = job_of(rundir, LSTM)
        os.killpg(d.pid, signal.SIGINT)
        assert d.wait(90) == 130, d.stderr()
    finally:
        d.kill()
    wait_until(lambda: squeue_state(job) == "CANCELLED", 30, f"job {job} to be cancelled")
    no_harness_left(rundir, within=30)
    assert_kept(before, rundir)
    run = rundir.load_run()
    e = entries(rundir)
    assert e[LSTM]["status"] == "interrupted" and "interrupted by SIGINT" in e[LSTM]["reason"]
    assert run["finished"] and run["incidents"][-1]["kind"] == "interrupted"


# -- detach, re-attach ----------------------------------------------------------------------------
def _comparable(report_json: Path) -> dict:
    doc = json.loads(report_json.read_text())
    return {k: doc[k] for k in ("status_counts", "incidents", "incomplete", "not_run",
                                "first_screen", "summary", "numbers", "claims")} | {
        "unmatched": sorted((u["cell"], u.get("metric"), u.get("n") is not None)
                            for u in doc["unmatched"]),
        "stacks": [s.get("stack") or s.get("name") for s in doc["environments"]["stacks"]],
        "runner": doc["run"]["runner"], "suite": doc["run"]["suite"]}


def _in_queue(jobs: list[str]) -> list[str]:
    """The lines squeue prints for the jobs still pending or running."""
    p = subprocess.run(["squeue", "-h", "-j", ",".join(jobs), "-o", "%i %T"], capture_output=True,
                       text=True, timeout=30)
    return p.stdout.split("\n")[:-1] if p.stdout.strip() else []


def _digests(root: Path) -> dict[str, str]:
    """{path relative to `root`: sha256} of every file under it."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_detach_then_report_gives_the_report_of_a_run_that_waited(cluster, tmp_path):
    waited = cli("run", "--suite", "smoke", "--runner", "slurm", "--quick", "--results",
                 str(tmp_path / "waited"), timeout=600)
    assert waited.returncode == 0, waited.stderr
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--quick", "--detach", "--results",
            str(tmp_path / "detached"), timeout=300)
    assert p.returncode == 0, p.stderr
    assert "detached:" in p.stderr and "reproduce.py status" in p.stderr
    rundir = only_run(tmp_path / "detached")
    run = rundir.load_run()
    assert run["finished"] is None and run["slurm"]["detached"] is True
    assert not (rundir.path / "report.md").exists()
    # `report` only reads: it collects no job (that is `status`'s work) and changes no file. Once the
    # jobs have ended, uncollected (run.json still says pending, not finished), nothing but the report
    # can write in the run: it reads the results the jobs left (in memory), says the jobs were not all
    # collected, and writes only its own files
    jobs = [j["job_id"] for j in run["slurm"]["jobs"]]
    wait_until(lambda: not _in_queue(jobs), 300, f"the detached jobs {jobs} to end", poll=1.0)
    before = _digests(rundir.path)
    r = cli("report", str(rundir.path))
    assert r.returncode == 0, r.stderr
    after = _digests(rundir.path)
    assert {e["status"] for e in rundir.load_run()["cells"]} == {"pending"}  # nothing collected
    assert {k: v for k, v in after.items() if k in before} == before
    assert {k.split("/")[0] for k in set(after) - set(before)} <= {"report.md", "report.html",
                                                                  "report.json", "plots"}
    assert "were not all collected" in (rundir.path / "report.md").read_text()
    s = cli("status", str(rundir.path), "--wait", timeout=600)
    assert s.returncode == 0, s.stdout + s.stderr
    assert all(line.startswith("ok") for line in s.stdout.splitlines()), s.stdout
    r = cli("report", str(rundir.path))
    assert r.returncode == 0, r.stderr
    collected = _digests(rundir.path)
    assert cli("report", str(rundir.path)).returncode == 0
    assert _digests(rundir.path) == collected  # rendered again byte for byte, nothing else touched
    run = rundir.load_run()
    assert run["finished"] and not run.get("incidents"), run.get("incidents")
    for c in rundir.load_cells():
        check_cell_record(c, "local")
    assert _comparable(rundir.path / "report.json") == \
        _comparable(only_run(tmp_path / "waited").path / "report.json")


# -- before anything is submitted -----------------------------------------------------------------
def test_a_results_directory_the_nodes_cannot_see_is_one_line_and_exit_2(cluster, tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    # the driver in a mount namespace of its own, its results on a tmpfs only it sees: as a
    # results directory on a disk local to a login node
    script = (f"mount -t tmpfs none {private} && exec {sys.executable} {REPO / 'reproduce.py'} "
              f"run --suite smoke --runner slurm --quick --results {private / 'r'}")
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                       timeout=400, cwd=REPO)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.startswith("reproduce.py:")]
    assert len(lines) == 1 and "not visible from the Slurm nodes" in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_gpu_cells_ask_for_gres_which_a_cluster_without_gpus_refuses(cluster, tmp_path):
    """--gres=gpu:N goes with a GPU cell (never run on a GPU: this cluster has none, and sbatch
    says so in one line)."""
    from reprokit.catalog import suites
    from reprokit.errors import UserError
    from reprokit.runners.slurm import SlurmOptions, SlurmRunner, Task

    cell = suites.load_suite("smoke").cell(MATMUL)
    rundir = results.RunDir(tmp_path / "run")
    (rundir.path / "jobs").mkdir(parents=True)
    job = rundir.jobs_dir / "smoke-python.json"
    job.write_text("{}")
    runner = SlurmRunner(SlurmOptions(launcher="local"), device="gpu", say=lambda *_: None)
    prepared = {"smoke-python": {"stack": "smoke-python", "python": sys.executable, "env": {}}}
    task = Task(cell, None, {"id": cell.id, "timeout_s": 60}, job, rundir.log_path(cell.id), gpus=2)
    with pytest.raises(UserError, match=r"sbatch refused the smoke-python job array: .*gres"):
        runner.submit(rundir, prepared, [task])


# -- the report -----------------------------------------------------------------------------------
def test_the_report_says_when_nodes_were_shared_and_groups_cells_by_node(cluster, tmp_path):
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--quick", "--slurm-no-exclusive",
            "--results", str(tmp_path), timeout=600)
    assert p.returncode == 0, p.stderr
    rundir = only_run(tmp_path)
    assert all("--exclusive" not in j["sbatch"] for j in rundir.load_run()["slurm"]["jobs"])
    md = (rundir.path / "report.md").read_text()
    assert "nodes shared (--slurm-no-exclusive)" in md, md[:2000]
    assert "did not have their nodes to themselves" in md
    assert "### Nodes" not in md  # one node: named in the runner line
    assert f"1 node: {NODE}" in md
    # a run whose cells ran on two nodes: the report lists the nodes with their cells
    cell = rundir.load_cell(LSTM)
    cell["runner"]["node"] = "node-b"
    rundir.write_cell(cell)
    r = cli("report", str(rundir.path))
    assert r.returncode == 0, r.stderr
    md = (rundir.path / "report.md").read_text()
    assert "### Nodes" in md and "2 nodes" in md
    rows = [ln for ln in md.splitlines() if ln.startswith(("| node-b |", f"| {NODE} |"))]
    assert len(rows) == 2 and LSTM in rows[0] and MATMUL in rows[1], rows
    html = (rundir.path / "report.html").read_text()
    assert 'id="nodes"' in html and 'id="not-exclusive"' in html


def test_a_driver_inside_an_allocation_plans_within_the_jobs_limit(cluster, tmp_path):
    """A driver started inside a Slurm allocation (here `srun --time=2`) without --time-limit
    reads what the job has left from the real squeue, keeps a minute back for the report and plans
    within the rest: source 001's word LM (about 15 minutes here) is left, listed, and the run ends with
    its report inside the job's limit."""
    p = subprocess.run(["srun", "--time=2", "-N", "1", sys.executable, str(REPO / "reproduce.py"), "run",
                        "--suite", "legacy-2017", "--cells", "001/*", "--runner", "local", "--device", "cpu",
                        "--results", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=REPO)
    # its one cell left, the run measured nothing: exit 1, said in one line
    assert p.returncode == 1 and "no cell of the run measured anything" in p.stderr, p.stderr[-3000:]
    assert "--time-limit from the allocation: Slurm job" in p.stderr and "min left (squeue %L)" in p.stderr
    rd = only_run(tmp_path)
    limit = rd.load_run()["options"]["time_limit_s"]
    assert 0 < limit <= 120 - 60
    (e,) = entries(rd).values()
    assert e["status"] == "skipped" and e["reason"].startswith("left by --time-limit")
    assert (rd.path / "report.md").exists()


def test_squeues_time_left_is_read_in_every_form_slurm_prints():
    from reprokit.runners import allocation

    assert allocation.parse_time_left("1:59") == 119
    assert allocation.parse_time_left("2:03:04") == 7384
    assert allocation.parse_time_left("1-00:00:10") == 86410
    assert allocation.parse_time_left("UNLIMITED") is None and allocation.parse_time_left("INVALID") is None
    assert allocation.time_left({})[0] is None  # outside an allocation: no limit


def test_each_stacks_jit_warmup_runs_first_as_its_own_job_and_its_cells_wait_for_it(cluster, tmp_path):
    """Without a JIT warm-up, on a GPU every cell of a legacy stack on the Slurm path would pay the
    PTX JIT at once. Each stack's warm-up is a job of its own and the stack's cells wait
    for it (--dependency=afterany). No GPU here: REPROKIT_JIT_WARMUP=force runs the mechanism for CPU
    cells, as the local runner's tests do (tests/run/test_jit_warmup.py)."""
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--quick", "--cells", MATMUL,
            "--results", str(tmp_path), timeout=600, env={**os.environ, "REPROKIT_JIT_WARMUP": "force"})
    assert p.returncode == 0, p.stderr
    assert "jit warm-up: smoke-python | cpu" in p.stderr and "after JIT warm-up job" in p.stderr, p.stderr
    rundir = only_run(tmp_path)
    run = rundir.load_run()
    (rec,) = run["jit_warmups"].values()
    assert rec["status"] == "ok" and rec["cell_id"] == MATMUL and rec["wall_s"] > 0
    warm, cells = run["slurm"]["jobs"]
    assert warm.get("warmup") is True and warm["tasks"][0]["warmup"] == rec["key"]
    assert cells["after"] == warm["job_id"]
    assert f"--dependency=afterany:{warm['job_id']}" in cells["sbatch"]
    assert (rundir.path / rec["dir"] / f"{MATMUL.replace('/', '__')}.json").is_file()
    res = rundir.load_cell(MATMUL)
    assert res["status"] == "ok" and res["jit_warmup_s"] == rec["wall_s"]
    assert [c.name for c in rundir.cells_dir.glob("*.json")] == [f"{MATMUL.replace('/', '__')}.json"]
    assert {e["cell_id"] for e in run["cells"]} == {MATMUL}


def test_a_detached_runs_jit_warmup_is_recorded_when_status_collects_it(cluster, tmp_path):
    """A detached run's warm-up job ended with nobody following it: `status` re-attached to its cells
    only, so run.json had no `jit_warmups` entry and the cells no jit_warmup_s. It is rebuilt from the
    warm-up's job file and collected too (REPROKIT_JIT_WARMUP=force: no GPU here)."""
    env = {**os.environ, "REPROKIT_JIT_WARMUP": "force"}
    p = cli("run", "--suite", "smoke", "--runner", "slurm", "--quick", "--cells", MATMUL, "--detach",
            "--results", str(tmp_path), timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    rundir = only_run(tmp_path)
    assert not rundir.load_run().get("jit_warmups")
    s = cli("status", str(rundir.path), "--wait", timeout=600, env=env)
    assert s.returncode == 0, s.stdout + s.stderr
    run = rundir.load_run()
    (rec,) = run["jit_warmups"].values()
    assert rec["status"] == "ok" and rec["cell_id"] == MATMUL and rec["wall_s"] > 0
    assert rundir.load_cell(MATMUL)["jit_warmup_s"] == rec["wall_s"]
    assert run["finished"] and {e["cell_id"] for e in run["cells"]} == {MATMUL}
