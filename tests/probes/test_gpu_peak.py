"""Every GPU run measures its GPUs' fp32 and TF32 GEMM rate once
(reprokit/probes/gpu_peak.py, run.json `gpu_peak`) and the report shows it beside the datasheet peak, as
`cpu_peak` for the CPU.

No GPU exists here: the arithmetic is tested as pure functions, the probe's skipped paths run for real
(torch not importable; torch that sees no CUDA device), and the test marked `gpu` measures a real GPU
where there is one (skipped here, saying so).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import files, formats, results, validate
from reprokit.analysis import flops
from reprokit.probes import gpu_peak
from reprokit.report import report, run_health
from reprokit.run import execute
from reprokit.run.record import write_run
from tests import models

REPO = Path(__file__).resolve().parents[2]


def test_the_rate_is_2n3_over_the_fastest_repetition():
    assert gpu_peak.tflops(1000, 2e-3) == pytest.approx(1.0)  # 2e9 FLOP in 2 ms
    assert gpu_peak.tflops(8192, 0.01) == pytest.approx(2 * 8192**3 / 0.01 / 1e12)
    best, per = gpu_peak.best_rate({1024: [0.004, 0.002, 0.003], 2048: [0.010, 0.020]})
    assert per == {1024: pytest.approx(2 * 1024**3 / 0.002 / 1e12),
                   2048: pytest.approx(2 * 2048**3 / 0.010 / 1e12)}
    assert best == 2048  # 1.72 TFLOP/s against 1.07
    with pytest.raises(ValueError):
        gpu_peak.tflops(1024, 0.0)
    with pytest.raises(ValueError):
        gpu_peak.best_rate({1024: []})


def test_the_probe_without_torch_says_so():
    """`python -S`: no site-packages, so no torch; the module itself needs only the standard library."""
    out = subprocess.run([sys.executable, "-S", "-m", "reprokit.probes.gpu_peak"], cwd=REPO,
                         capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc == {"skipped": "no CUDA framework on this host: torch is not importable "
                              "(No module named 'torch')"}


def test_the_probe_with_a_torch_that_sees_no_cuda_device_is_skipped():
    """The real child process with the host's torch, every device hidden (CUDA_VISIBLE_DEVICES empty),
    so the skipped path runs here and on a GPU machine alike."""
    import torch

    peak = gpu_peak.probe(env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout_s=300)
    why = "a CPU build" if torch.version.cuda is None else "no GPU or driver"
    assert peak == {"skipped": f"torch {torch.__version__} sees no CUDA device (torch.version.cuda = "
                               f"{torch.version.cuda}: {why})"}
    assert gpu_peak.summary(peak).startswith("skipped: torch ")


def test_a_failing_probe_is_an_error_not_an_exception(tmp_path):
    assert gpu_peak.probe(python=str(tmp_path / "no-such-python"))["error"].startswith(
        "the GPU GEMM probe could not start")
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Traceback: boom' >&2\nexit 3\n")
    fake.chmod(0o755)
    assert gpu_peak.probe(python=str(fake)) == {"error": "the GPU GEMM probe exited 3: Traceback: boom"}


def test_the_driver_measures_only_on_a_gpu_run_with_a_gpu(monkeypatch):
    said = []
    calls = []
    monkeypatch.setattr(gpu_peak, "probe", lambda: calls.append(1) or {"skipped": "stub"})
    no_gpu = {"gpus": [], "nvidia": {"available": False, "reason": "no NVIDIA driver: x"}}
    assert execute._gpu_peak("cpu", "local", no_gpu, said.append) == {"skipped": "a CPU run (device cpu)"}
    assert execute._gpu_peak("auto", "local", no_gpu, said.append) == {
        "skipped": "NVML finds no GPU on this host (no NVIDIA driver: x)"}
    assert execute._gpu_peak("gpu", "slurm", {"gpus": [{"name": "H100"}]}, said.append)["skipped"].startswith(
        "the Slurm runner measures each node's GPUs on the node")
    assert calls == []
    h100 = {"gpus": [{"name": "H100"}]}
    assert execute._gpu_peak("gpu", "docker", h100, said.append) == {"skipped": "stub"}
    assert calls == [1] and said[-1] == "gpu peak probe: skipped: stub"
    assert validate.errors("run", {"gpu_peak": {"skipped": "x"}}) == validate.errors("run", {})


MEASURED = {"gpus": [{"index": 0, "uuid": "GPU-1", "name": "NVIDIA H100 80GB HBM3",
                      "compute_capability": "9.0", "fp32_tflops": 51.0, "tf32_tflops": 370.0, "size": 8192},
                     {"index": 1, "uuid": "GPU-2", "name": "Tesla V100-SXM2-16GB",
                      "compute_capability": "7.0", "fp32_tflops": 14.0, "tf32_tflops": None, "size": 8192,
                      "tf32_reason": "compute capability 7.0 has no TF32"}],
            "method": "measured: best of 10 torch float32 mm", "torch": "2.13.0", "cuda": "12.8",
            "measured": "2026-11-26T12:00:00Z"}


def test_the_measured_rate_is_shown_beside_the_datasheet_peak():
    s = run_health.gpu_peak_summary(models.run(gpu_peak=MEASURED))
    h100, v100 = s["gpus"]
    sheet = flops.find_gpu("NVIDIA H100 80GB HBM3")
    assert h100["datasheet_fp32_tflops"] == sheet["fp32_tflops"]
    assert h100["fp32_fraction"] == pytest.approx(51.0 / sheet["fp32_tflops"])
    assert h100["text"].startswith(f"fp32 51 TFLOP/s ({51.0 / sheet['fp32_tflops']:.0%} of the datasheet's")
    assert f"datasheet: peaks.yaml {sheet['entry']}" in h100["text"]
    if sheet.get("tf32_tensor_tflops"):
        assert h100["tf32_fraction"] == pytest.approx(370.0 / sheet["tf32_tensor_tflops"])
    assert v100["tf32_tflops"] is None and v100["text"].endswith("compute capability 7.0 has no TF32")
    assert run_health.gpu_peak_summary(models.run(gpu_peak={"skipped": "a CPU run (device cpu)"})) == {
        "measured": False, "text": "skipped: a CPU run (device cpu)", "gpus": [], "method": None}
    assert run_health.gpu_peak_summary(models.run()) is None  # a run made before gpu_peak: nothing shown


def test_the_report_shows_the_gemm_probe_of_a_gpu_host(tmp_path):
    rundir = results.RunDir(tmp_path / "r")
    rundir.path.mkdir()
    host = {"gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}],
            "nvidia": {"available": True, "driver_version": "580.95.05"}}
    run = {"schema_version": formats.version("run"), "kind": "run", "run_id": "r", "suite": "smoke",
           "argv": ["test"], "runner": "local", "protocol": "budget", "quick": True, "repeat": 1,
           "started": "2026-11-26T00:00:00Z", "finished": "2026-11-26T00:01:00Z", "wall_s": 60.0,
           "host_fingerprint": host, "kit": files.kit_info(), "stacks": {}, "current": None,
           "cpu_peak": None, "gpu_peak": MEASURED, "cells": []}
    write_run(rundir, run)
    report.render(rundir)
    md = (rundir.path / "report.md").read_text()
    assert "| GPU 0 GEMM probe (context) | fp32 51 TFLOP/s (" in md
    assert "| GPU 1 GEMM probe (context) | fp32 14 TFLOP/s" in md
    assert "| GPU GEMM method | measured: best of 10 torch float32 mm |" in md
    assert "GPU 0 GEMM probe (context)</th><td>fp32 51 TFLOP/s" in (rundir.path / "report.html").read_text()
    run["gpu_peak"] = {"skipped": "torch 2.13.0+cpu sees no CUDA device"}
    write_run(rundir, run)
    report.render(rundir)
    assert "| GPU GEMM probe (context) | not measured: skipped: torch 2.13.0+cpu sees no CUDA device |" in \
        (rundir.path / "report.md").read_text()


# -- on a real GPU (skipped elsewhere; tests/conftest.py) --------------------------------------------
@pytest.mark.gpu
def test_the_probe_measures_every_visible_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} here has no CUDA (a CPU build): nothing to measure with")
    peak = gpu_peak.probe()
    assert "gpus" in peak, peak
    assert len(peak["gpus"]) == torch.cuda.device_count()
    for g in peak["gpus"]:
        assert g.get("error") is None, g["error"]
        assert g["uuid"].startswith(("GPU-", "MIG-")) and g["name"]
        assert g["fp32_tflops"] > 0.5 and g["size"] in gpu_peak.DEFAULT_SIZES
        sheet = flops.find_gpu(g["name"])
        if sheet:  # an achieved rate above the datasheet peak means broken timing (or a wrong entry)
            assert g["fp32_tflops"] <= 1.1 * sheet["fp32_tflops"], (g, sheet["entry"])
        if tuple(int(x) for x in g["compute_capability"].split(".")) >= gpu_peak.tf32_min_cc():
            assert g["tf32_tflops"] > g["fp32_tflops"], g  # tensor cores: TF32 is faster
            assert g["precision_fp32"]["torch.backends.cuda.matmul.allow_tf32"] is False
            assert g["precision_tf32"]["torch.backends.cuda.matmul.allow_tf32"] is True
        else:
            assert g["tf32_tflops"] is None


def test_the_sm_clock_is_read_while_the_gemms_run():
    """A rate alone does not say the clock the peak probe ran at. The clock is read from
    NVML (the device matched by UUID) while queued products run. Pure logic with stand-ins for torch
    and NVML (no GPU here); the NVML names are checked against nvidia-ml-py by test_nvml_api.py."""
    events = []

    class Cuda:
        @staticmethod
        def synchronize(_device):
            events.append("sync")

    class Torch:
        float32 = "float32"
        cuda = Cuda

        @staticmethod
        def randn(*_a, **_k):
            return "t"

        @staticmethod
        def empty(*_a, **_k):
            return "t"

        @staticmethod
        def mm(*_a, **_k):
            events.append("mm")

    class Nvml:
        NVML_CLOCK_SM = 1
        readings = iter([1755, 1980, 1980, 1965, 1980])

        def nvmlInit(self):
            pass

        def nvmlShutdown(self):
            pass

        def nvmlDeviceGetCount(self):
            return 2

        def nvmlDeviceGetHandleByIndex(self, i):
            return i

        def nvmlDeviceGetUUID(self, h):
            return [b"GPU-aaa", b"GPU-bbb"][h]

        def nvmlDeviceGetClockInfo(self, h, kind):
            assert h == 1 and kind == 1
            events.append("read")
            return next(self.readings)

        def nvmlDeviceGetMaxClockInfo(self, h, kind):
            return 1980

    got = gpu_peak.sm_clock_during(Torch, "cuda:1", "GPU-bbb", products=3, nvml=Nvml())
    assert got["sm_clock_mhz"] == 1980 and got["max_sm_clock_mhz"] == 1980
    assert got["readings"] == [1755, 1980, 1980, 1965, 1980]
    # read after the products were queued and before the queue was drained
    assert events == ["sync", "mm", "mm", "mm", "read", "read", "read", "read", "read", "sync"]
    assert "error" in gpu_peak.sm_clock_during(Torch, "cuda:0", "GPU-zzz", nvml=Nvml())
