"""Joules per step from NVML's total-energy counter over a cell's timed window.

No GPU here: the monitor runs against a fake binding (FakeNVML of test_gpu_state.py, given the energy
counter), whose function names and parameter counts are checked against the installed nvidia-ml-py
(test_the_fake_calls_only_what_the_installed_binding_has_with_its_parameters there, and
tests/probes/test_nvml_api.py for the kit's own calls). NEVER RUN ON A GPU."""

from __future__ import annotations

import inspect
import time

import pynvml
import pytest

from probes.test_gpu_state import UUID_A, UUID_B, FakeNVML
from reprokit.probes import energy, gpu_state

RULE = {"min_window_s": 5, "max_disagreement": 0.05}


class EnergyNVML(FakeNVML):
    """The fake with a total-energy counter: each GPU draws `watts` from t0 on (GPU 1 half as much)."""

    def __init__(self, watts=300.0, counter=True, **kw):
        super().__init__(**kw)
        self.watts, self.counter, self.t0 = watts, counter, time.time()

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.counter:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(1000 * self.watts / (1 + handle[1]) * (time.time() - self.t0)) + 5_000_000  # mJ

    def nvmlDeviceGetPowerUsage(self, handle):
        return int(1000 * self.watts / (1 + handle[1]))  # mW


def test_the_fake_counter_has_the_real_functions_signature():
    real = inspect.signature(pynvml.nvmlDeviceGetTotalEnergyConsumption)
    mine = inspect.signature(EnergyNVML().nvmlDeviceGetTotalEnergyConsumption)
    assert len(real.parameters) == len(mine.parameters)


def _samples(watts, t0=1000.0, seconds=12, counter=True, power_scale=1.0):
    """Readings once a second: the counter at `watts`, the power samples at watts x power_scale."""
    return [[t0 + i, (5e6 + 1000 * watts * i) if counter else None, watts * power_scale]
            for i in range(seconds + 1)]


def _metric(start=1002.0, end=1010.0, steps=400, synced=True, items=64):
    return {"unit": "ms", "samples": [1.0], "raw_seconds": [0.02], "items_per_sample": items,
            "window": {"start_unix": start, "end_unix": end, "steps": steps, "synced": synced}}


def test_joules_per_step_and_per_item_over_the_window():
    got = energy.of_metric(_metric(), {UUID_A: _samples(300.0), UUID_B: _samples(150.0)}, RULE)
    assert got["status"] == "measured" and got["gpus"] == 2
    assert got["joules"] == pytest.approx(450.0 * 8)  # both GPUs, 8 s
    assert got["joules_per_step"] == pytest.approx(3600 / 400)
    assert got["joules_per_item"] == pytest.approx(3600 / 400 / 64)
    assert got["power_joules"] == pytest.approx(3600) and not got["flagged"]


@pytest.mark.parametrize("metric, samples, words", [
    (_metric(start=1002.0, end=1005.0), {UUID_A: _samples(300.0)}, "under the 5 s"),
    (_metric(synced=False), {UUID_A: _samples(300.0)}, "not synchronised"),
    (_metric(), {UUID_A: _samples(300.0, counter=False)}, "no energy counter"),
    (_metric(start=990.0), {UUID_A: _samples(300.0)}, "not read on both sides"),
    ({"unit": "ms", "samples": [1.0], "raw_seconds": [0.1]}, {UUID_A: _samples(300.0)}, "no timed window"),
    (_metric(), {}, "no GPU energy samples"),
])
def test_what_is_not_measured_says_why(metric, samples, words):
    got = energy.of_metric(metric, samples, RULE)
    assert got["status"] == "not_measured" and words in got["reason"] and got["joules_per_step"] is None


def test_a_counter_that_disagrees_with_the_power_samples_is_flagged():
    got = energy.of_metric(_metric(), {UUID_A: _samples(300.0, power_scale=1.2)}, RULE)
    assert got["status"] == "measured" and got["flagged"] and "20.0% apart" in got["reason"]


def _samples_reach(mon, n, limit=60.0):
    """Wait until the monitor holds n readings of GPU A (its sampler thread runs as fast as the
    machine lets it)."""
    end = time.monotonic() + limit
    while len(mon.energy.get(UUID_A, [])) < n:
        assert time.monotonic() < end, f"the monitor took fewer than {n} readings in {limit} s"
        time.sleep(0.01)


def test_the_monitor_reads_the_counter_and_the_result_gets_its_energy(monkeypatch):
    """The monitor with the fake binding, a timed window inside it, then gpu_state.attach as the
    executors call it (the window rule shortened so the test takes a second, not five)."""
    monkeypatch.setattr(energy, "rule", lambda: {"min_window_s": 0.3, "max_disagreement": 0.05})
    fake = EnergyNVML(watts=400.0)
    mon = gpu_state.Monitor(interval_s=0.05, nvml=fake)
    _samples_reach(mon, 3)  # readings before the window, inside it and after it, however slow the machine
    start = time.time()
    time.sleep(1.0)
    _samples_reach(mon, len(mon.energy[UUID_A]) + 3)
    end = time.time()
    _samples_reach(mon, len(mon.energy[UUID_A]) + 2)
    raw = mon.stop()
    assert len(raw["energy"][UUID_A]) >= 8 and raw["energy"][UUID_A][0][1] is not None
    result = {"status": "ok", "device": "gpu", "gpus": [{"uuid": UUID_A}],
              "metrics": {"t": _metric(start=start, end=end, steps=50, items=1)}}
    gpu_state.attach(result, {"gpu_state": raw})
    e = result["energy"]["t"]
    assert e["status"] == "measured" and e["gpus"] == 1  # the cell's GPU only
    assert e["joules"] == pytest.approx(400.0 * (end - start), rel=0.02)
    assert e["joules_per_step"] == pytest.approx(e["joules"] / 50)
    assert set(result["gpu_state"]["energy_samples"]) == {UUID_A}


def test_a_gpu_without_a_counter_and_a_cpu_cell(monkeypatch):
    monkeypatch.setattr(energy, "rule", lambda: {"min_window_s": 0.01, "max_disagreement": 0.05})
    fake = EnergyNVML(counter=False)
    mon = gpu_state.Monitor(interval_s=0.05, nvml=fake)
    _samples_reach(mon, 4)
    raw = mon.stop()
    result = {"status": "ok", "device": "gpu", "gpus": [{"uuid": UUID_A}],
              "metrics": {"t": _metric(start=raw["energy"][UUID_A][0][0], end=raw["energy"][UUID_A][-1][0])}}
    gpu_state.attach(result, {"gpu_state": raw})
    assert result["energy"]["t"]["status"] == "not_measured"
    assert "no energy counter" in result["energy"]["t"]["reason"]
    cpu = {"status": "ok", "device": "cpu", "metrics": {"t": _metric()}}
    gpu_state.attach(cpu, {"gpu_state": raw})
    assert "energy" not in cpu


def test_processes_add_up():
    a = energy.of_metric(_metric(), {UUID_A: _samples(300.0)}, RULE)
    b = energy.of_metric(_metric(steps=200), {UUID_A: _samples(300.0)}, RULE)
    merged = energy.merge([{"t": a}, {"t": b}, {"t": energy.of_metric(_metric(synced=False), {}, RULE)}])["t"]
    assert merged["joules"] == pytest.approx(4800) and merged["steps"] == 600
    assert merged["joules_per_step"] == pytest.approx(8.0)
    assert merged["reason"] == "1 of 3 processes not measured"


def test_the_report_shows_each_gpu_cells_energy(tmp_path):
    """A stored H100 cell given an energy record (synthetic: no GPU run has measured one yet) shows in
    the report's energy table; a CPU run's report has none."""
    import json
    import shutil
    from pathlib import Path

    from reprokit import results
    from reprokit.report.report import render

    src = Path(__file__).resolve().parents[2] / "docs" / "gpu-run" / "20261126T180107Z-stacked-lstm-2019"
    rd = results.RunDir(shutil.copytree(src, tmp_path / src.name))
    cell = rd.load_cell("003/pytorch/eager_cudnn/train")
    cell["energy"] = {"time_per_batch": energy.of_metric(_metric(), {UUID_A: _samples(300.0)}, RULE),
                      "seq_per_s": energy.of_metric(_metric(end=1003.0), {UUID_A: _samples(300.0)}, RULE)}
    rd.write_cell(cell)
    render(rd)
    rows = json.loads((rd.path / "report.json").read_text())["energy"]
    assert [(r["metric"], r["status"]) for r in rows] == [("seq_per_s", "not_measured"),
                                                          ("time_per_batch", "measured")]
    md = (rd.path / "report.md").read_text()
    assert "## Energy per step (GPU cells)" in md
    assert "This path had never run on a GPU when" in md  # until a GPU run has measured one
    assert "| 003/pytorch/eager_cudnn/train | time_per_batch | 6 |" in md
