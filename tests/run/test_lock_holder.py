"""A run directory copied with its .lock names the copy's old writer; the resume
refused while another holds the lock named that stale record. Only a live holder is named."""

from __future__ import annotations

import fcntl
import json
import os

import pytest

from reprokit.errors import UserError
from reprokit.probes.processes import host_name
from reprokit.run import lifecycle


def test_a_stale_record_copied_with_the_run_is_not_named(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    lock = run / lifecycle.LOCK_NAME
    # the copy's record: a process that is not running here (pid 2**22 + 1 is above pid_max's default)
    lock.write_text(json.dumps({"pid": 2**22 + 1, "host": host_name(), "started": "2026-11-01T00:00:00Z"}))
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live holder that has not written its own record yet
    try:
        with pytest.raises(UserError) as e:
            lifecycle.acquire(run)
        assert "another process" in str(e.value) and str(2**22 + 1) not in str(e.value)
        os.pwrite(fd, (json.dumps({"pid": os.getpid(), "host": host_name()}) + "\n").encode(), 0)
        os.ftruncate(fd, len(json.dumps({"pid": os.getpid(), "host": host_name()})) + 1)
        with pytest.raises(UserError) as e:
            lifecycle.acquire(run)
        assert f"pid {os.getpid()}" in str(e.value)
    finally:
        os.close(fd)
