"""Peaks that are measured (issue 21 item 4): the run's effective clock from a chain of dependent adds,
the theoretical CPU peak from it, and the cores the cell's framework used."""

import sys
from pathlib import Path

import pytest

from reprokit import files, results
from reprokit.analysis import cpus, devices, verdicts
from reprokit.catalog import suites
from reprokit.probes import cpu_peak

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "data" / "runs"


def load(name):
    rd = results.RunDir(RUNS / name)
    return rd.load_run(), {c["cell_id"]: c for c in rd.load_cells()}


def test_the_clock_probe_measures_a_clock_from_dependent_adds():
    c = cpu_peak.measure_clock(repeats=50)
    if c["ghz"] is None:  # only where the ISA has no entry or no compiler exists: said why
        pytest.fail(c["reason"])
    entry = next(e for e in files.load_data("clock_probe")["instructions"] if e["isa"] == c["isa"])
    assert c["ghz"] == pytest.approx(c["adds"] * entry["latency_cycles"] / c["seconds"] / 1e9)
    assert 0.3 < c["ghz"] < 8.0  # a CPU clock, whatever the machine's speed
    assert "dependent" in c["method"] and c["source"] == entry["source"]


def test_the_gemm_probe_carries_the_clock():
    g = cpu_peak.measure(sizes=(64,), repeats=2)
    assert g["gflops"] > 0 and g["clock"]["ghz"] and "dependent" in g["clock"]["method"]


def test_a_measured_clock_makes_the_peak():
    run, _ = load("cpu-a")  # Zen 3, 8 cores, 2.45 GHz reported, 32 fp32 FLOP/cycle
    clock = {"ghz": 3.5, "method": "measured: test"}
    c = cpus.host_cpu(run["host_fingerprint"], clock=clock)
    assert c["clock_ghz"] == 3.5 and c["clock_measured"] is True
    assert c["peak_tflops"] == pytest.approx(8 * 3.5 * 32 / 1000)
    assert "measured: test; reported 2.45 GHz" in c["derivation"]
    reported = cpus.host_cpu(run["host_fingerprint"])
    assert reported["clock_ghz"] == 2.45 and reported["clock_measured"] is False


def test_the_peak_counts_the_threads_the_framework_used():
    run, _ = load("cpu-a")
    c = cpus.host_cpu(run["host_fingerprint"], threads={"count": 2, "source": "test"})
    assert c["cores"] == 2 and c["peak_tflops"] == pytest.approx(2 * 2.45 * 32 / 1000)
    assert "used 2 threads (test), so 2 cores counted" in c["derivation"]
    # from an older result's stack fingerprint (torch num_threads)
    cell = {"device": "cpu", "stack_fingerprint": {"framework": {"num_threads": 1}}}
    d = devices.measured_device(cell, run)
    assert d["cores"] == 1 and d["threads_used"] == 1
    assert devices.cell_threads({"stack_fingerprint": {"framework": {"threads": {"intra_op": 0}}}}) is None


def test_the_harness_records_the_threads_a_real_torch_used():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "bench"))
    import harness
    import stack_fingerprint

    fp = stack_fingerprint.collect("torch")
    t = harness._threads(fp)
    assert t == {"count": torch.get_num_threads(), "source": "torch.get_num_threads() after the cell ran"}


def test_a_measured_clock_turns_a_lower_bound_peak_into_decided_verdicts():
    """cpu-a's GEMM rate of 900 GFLOP/s beats 8 cores x 2.45 GHz (reported) x 32: the peak is only a lower
    bound and HIGHER/SIMILAR efficiency cannot be concluded. With the clock measured at 3.6 GHz the
    theoretical peak (922 GFLOP/s) is known, above the GEMM rate, and the verdict is decided."""
    run, cells = load("cpu-a")
    nums = {n["id"]: n for n in suites.load_published("003")}
    n = nums["003-L377"]
    fast = {**run, "cpu_peak": {**run["cpu_peak"], "gflops": 900.0}}
    assert verdicts.verdict(n, cells[n["cell"]], fast)["verdict"] == "INCONCLUSIVE"
    measured = {**fast, "cpu_peak": {**fast["cpu_peak"], "clock": {"ghz": 3.6, "method": "measured: test"}}}
    v = verdicts.verdict(n, cells[n["cell"]], measured)
    assert v["verdict"].startswith("EFFICIENCY_") and v["verdict"] != "INCONCLUSIVE", v["reason"]
    meas = v["hardware"]["measured"]
    assert meas["clock_measured"] and not meas.get("peak_is_lower_bound")
    assert "measured: test" in meas["peak_source"]
