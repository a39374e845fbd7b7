"""The driver's successor and the reaper of reprokit/containers/engine.py, with the real Docker engine
(without them, after SIGKILL of the driver a Docker cell's exited container stayed listed until the
next resume). The successor, a watcher each Docker driver starts, removes its driver's containers as they
end once the driver is dead; every command that talks to the engine first removes the exited
containers of dead drivers of this host (for when the successor died too); both save a container's
output as its cell's log. The driver-level test (a real run SIGKILLed mid-cell) is tests/run/test_faults.py
test_docker_a_killed_driver_leaves_a_container_that_stops_itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprokit import results
from reprokit.containers import engine
from reprokit.probes import processes
from reprokit.run import lifecycle

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def client():
    from conftest import docker_client

    return docker_client()


def dead_pid() -> int:
    """The pid of a process that has ended (and was waited for)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def labels(run_dir: Path, cell: str, pid: int, host: str | None = None) -> dict:
    return {"reprokit.run": run_dir.name, "reprokit.run_dir": str(run_dir), "reprokit.cell": cell,
            "reprokit.stack": "smoke-python", "reprokit.driver.pid": str(pid),
            "reprokit.driver.host": host or processes.host_name(),
            "reprokit.driver.start": processes.process_start_ticks(pid) or ""}


def a_run(tmp_path: Path) -> Path:
    run = tmp_path / "20261126T000000Z-smoke"
    (run / "cells").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run.name}))
    return run


def container(client, image: str, lab: dict, script: str, start: bool = True):
    c = client.containers.create(image, ["python3", "-c", script], labels=lab, network_mode="none")
    if start:
        c.start()
        if "sleep" not in script:
            c.wait(timeout=120)
        else:  # running for sure before the test goes on (CI once saw this one gone: say why if so)
            end = time.monotonic() + 60
            c.reload()
            while c.status != "running" and time.monotonic() < end:
                time.sleep(0.2)
                c.reload()
            assert c.status == "running", (c.status, c.attrs.get("State"), c.logs()[-2000:])
    return c


def exists(client, c) -> bool:
    import docker

    try:
        client.containers.get(c.id)
        return True
    except docker.errors.NotFound:
        return False


def test_the_next_command_removes_exited_containers_of_dead_drivers_only(client, smoke_image, tmp_path,
                                                                        capfd):
    image = smoke_image["image_id"]
    run = a_run(tmp_path)
    dead = dead_pid()
    made = []
    try:
        exited = container(client, image, labels(run, "smoke/a", dead), "print('the cell said this')")
        never = container(client, image, labels(run, "smoke/b", dead), "pass", start=False)
        running = container(client, image, labels(run, "smoke/c", dead), "import time; time.sleep(300)")
        live = container(client, image, labels(run, "smoke/d", lifecycle.os.getpid()), "pass")
        other = container(client, image, labels(run, "smoke/e", dead, host="another-host"), "pass")
        made = [exited, never, running, live, other]
        capfd.readouterr()
        engine.client()  # what every command that talks to the engine calls first
        err = capfd.readouterr().err
        assert not exists(client, exited) and not exists(client, never)
        assert exists(client, running), ("a running cell of a dead driver may still write its result",
                                         err)
        assert exists(client, live) and exists(client, other)
        lines = [x for x in err.splitlines() if "removed exited container" in x]
        assert len(lines) == 2 and all(f"dead driver (pid {dead})" in x for x in lines), err
        log = results.RunDir(run).log_path("smoke/a")
        assert log.read_text().strip() == "the cell said this"
        assert f"its output is the cell's log {log}" in err
        assert not results.RunDir(run).log_path("smoke/c").exists()
        # once the running one has ended, the next command removes it too
        running.kill()
        running.wait(timeout=60)
        engine.client()
        assert not exists(client, running)
    finally:
        for c in made:
            try:
                c.remove(force=True)
            except Exception:
                pass


def test_a_log_the_driver_wrote_is_kept(client, smoke_image, tmp_path):
    run = a_run(tmp_path)
    log = results.RunDir(run).log_path("smoke/a", 2)
    log.parent.mkdir(parents=True)
    log.write_text("the driver's copy\n")
    lab = {**labels(run, "smoke/a", dead_pid()), "reprokit.process": "2"}
    c = container(client, smoke_image["image_id"], lab, "print('late')")
    try:
        assert c.name in engine.reap_exited(client)
        assert log.read_text() == "the driver's copy\n"
    finally:
        if exists(client, c):
            c.remove(force=True)


def test_the_reaper_never_costs_a_command_its_engine(monkeypatch):
    """An engine whose container listing fails: the reaper gives up silently, the client is returned."""

    class Containers:
        def list(self, **kw):
            raise RuntimeError("listing refused")

    class Client:
        containers = Containers()

        def ping(self):
            return True

    monkeypatch.setattr(engine, "_connect", lambda timeout: Client())
    assert isinstance(engine.client(), Client)


def test_the_drivers_successor_removes_its_containers_once_it_is_dead(client, smoke_image, tmp_path):
    """A real process as the driver: while it lives its ended container stays (it may still read it);
    once it is killed, the successor removes the container without any command, saving its log."""
    run = a_run(tmp_path)
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    watcher = None
    c = container(client, smoke_image["image_id"], labels(run, "smoke/a", driver.pid),
                  "print('after my driver')")
    try:
        watcher = engine.start_watch(driver.pid, processes.process_start_ticks(driver.pid))
        assert watcher is not None
        assert engine.start_watch(driver.pid, None) is None  # one successor per driver
        time.sleep(3 * engine.WATCH_POLL_S)
        assert exists(client, c) and watcher.poll() is None, "removed while its driver lives"
        driver.kill()
        driver.wait()
        end = time.monotonic() + 60
        while exists(client, c) and time.monotonic() < end:
            time.sleep(0.2)
        assert not exists(client, c), "the successor did not remove its dead driver's container"
        assert watcher.wait(timeout=60) == 0  # and it ends: nothing of its driver is left
        assert results.RunDir(run).log_path("smoke/a").read_text().strip() == "after my driver"
    finally:
        driver.kill()
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
        if exists(client, c):
            c.remove(force=True)


def test_the_successor_waits_for_a_running_container_to_end(client, smoke_image, tmp_path):
    run = a_run(tmp_path)
    dead = dead_pid()
    running = container(client, smoke_image["image_id"], labels(run, "smoke/a", dead),
                        "import time; time.sleep(300)")
    try:
        assert engine.watch(dead, None, give_up_s=2) == []  # it gives up, the container untouched
        assert exists(client, running)
        running.kill()
        running.wait(timeout=60)
        assert engine.watch(dead, None, give_up_s=60) == [running.name]
    finally:
        if exists(client, running):
            running.remove(force=True)
