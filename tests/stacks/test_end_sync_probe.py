"""Defect d003-no-final-sync measured (bench/workloads/s003_pytorch.py): the device tail a timer without
a final synchronisation leaves out, and the launch-queue probe that bounds it.

These GPU paths have never run on a GPU. Here they run against a simulated device (pure logic, on a
virtual clock, so nothing depends on this machine's speed): a FIFO of kernels with a bounded launch
queue, where a launch blocks while the queue is full, as a CUDA stream's does. What it checks is the
probe's reading of that model; whether a real GPU behaves so is left to the first GPU run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import timing  # noqa: E402  (bench module, stdlib only)
from workloads import s003_pytorch as w  # noqa: E402


class SimulatedGPU:
    """One stream: kernels run one after another; at most `queue` launched and unfinished; `now` is
    the host's virtual clock."""

    def __init__(self, queue: int, cycle_s: float = 5e-10):
        self.queue, self.cycle_s, self.now, self.pending = queue, cycle_s, 0.0, []

    def launch(self, seconds: float) -> None:
        self.pending = [f for f in self.pending if f > self.now]
        if len(self.pending) >= self.queue:  # the launch blocks until the oldest kernel ends
            self.now = self.pending.pop(0)
        start = max([self.now] + self.pending[-1:])
        self.pending.append(start + seconds)

    def synchronize(self) -> None:
        self.now = max([self.now] + self.pending)
        self.pending = []

    def _sleep(self, cycles: int) -> None:
        self.launch(cycles * self.cycle_s)

    def step(self, host_s: float, kernels: int, device_s: float):
        def one():
            self.now += host_s
            for _ in range(kernels):
                self.launch(device_s / kernels)
        return one


@pytest.fixture
def gpu(monkeypatch):
    def make(queue):
        g = SimulatedGPU(queue)
        monkeypatch.setattr(timing, "clock", lambda: g.now)
        torch = type("torch", (), {})()
        torch.cuda = g
        return g, torch
    return make


@pytest.mark.parametrize("kernels,expect", [(300, 3), (100, 10), (1, None)])
def test_the_probe_counts_the_batches_the_launch_queue_holds(gpu, kernels, expect):
    """1024 launches queued at most; the holding kernel takes one: 1023 // kernels per batch whole
    batches fit before a launch blocks; with 1 kernel per batch more than the probe's 200 fit."""
    g, torch = gpu(1024)
    step = g.step(host_s=1e-4, kernels=kernels, device_s=3e-3)
    assert w._launch_queue_batches(torch, step) == expect
    assert g.pending == []  # it ends synchronised


def test_the_tail_is_the_work_still_queued_when_the_loop_stops(gpu):
    """Device-bound (3 ms of device work per batch launched in 0.1 ms): after 50 batches the host
    waits on a full queue, so about queue / kernels batches of device work are left: the tail."""
    g, torch = gpu(1024)
    step = g.step(host_s=1e-4, kernels=300, device_s=3e-3)
    t0 = timing.clock()
    for _ in range(50):
        step()
    elapsed = timing.clock() - t0
    tail = w._end_sync_tail(torch)
    assert elapsed + tail == pytest.approx(1e-4 + 50 * 3e-3)  # the first launch, then the device
    assert 3 * 3e-3 <= tail <= 4 * 3e-3  # 3 whole batches queued, part of a fourth


def test_host_bound_loops_leave_almost_no_tail(gpu):
    g, torch = gpu(1024)
    step = g.step(host_s=5e-3, kernels=300, device_s=1e-3)
    for _ in range(50):
        step()
    assert w._end_sync_tail(torch) == pytest.approx(1e-3)  # only the last batch's device work


@pytest.mark.gpu
def test_on_a_real_gpu_a_held_device_blocks_the_launches_within_the_probe():
    """The model above on the real thing (the gpu-marked tests of a GPU session): torch.cuda._sleep
    holds the device, 20 small kernels make a 'batch', and a launch blocks before 200 batches (4,000
    kernels) are queued. Skipped without a GPU, which is not passed."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    a = torch.ones(256, 256, device="cuda")

    def step():
        for _ in range(20):
            a.mul_(1.0)

    queued = w._launch_queue_batches(torch, step)
    assert queued is not None and 1 <= queued < w.QUEUE_PROBE_MAX, queued
    for _ in range(50):
        step()
    assert w._end_sync_tail(torch) >= 0.0


def test_the_cell_records_the_end_synced_figures_and_the_probe(gpu):
    """Through the real harness's recording (bench/harness.py CellContext): Avg with the sync the
    original lacks = its Avg + tail / 50, seq/s from it, and extra.end_sync with the probe."""
    import harness

    g, torch = gpu(1024)
    step = g.step(host_s=1e-4, kernels=300, device_s=3e-3)
    ctx = harness.CellContext({"device": "gpu", "params": {}}, {})
    ctx.metrics["time_per_batch"] = {"unit": "s", "as_published": {
        "value": 1e-4, "planned": {"iterations_per_segment": 50, "segments": 1}}}
    w._record_end_synced(ctx, torch, step, 128, tail=0.01)
    m = ctx.metrics["time_per_batch_end_synced"]
    assert m["samples"] == [pytest.approx(1e-4 + 0.01 / 50)] and m["unit"] == "s"
    assert ctx.metrics["seq_per_s_end_synced"]["samples"] == [pytest.approx(128 / (1e-4 + 0.01 / 50))]
    assert ctx.extra["end_sync"]["launch_queue_batches"] == 3
    assert ctx.extra["end_sync"]["tail_s"] == 0.01 and ctx.extra["end_sync"]["planned_batches"] == 50
