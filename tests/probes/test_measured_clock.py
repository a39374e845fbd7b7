"""Peaks that are measured: the run's effective clock from a chain of dependent adds,
cross-checked by a chain of dependent multiplies, the theoretical CPU peak from it, and the cores the cell's
framework used.

Why the clock chain is a register-register add and not an add-immediate: on the kit's first GPU host (Intel
Emerald Rapids, a Golden Cove-class P-core) the add-immediate chain `addq $1, %0` read 13.7-17.6 GHz
(docs/gpu-run/session.log; pytest-probes.log: `assert 17.27531098991815 < 8.0`), because those cores add
small immediates at rename with zero latency (data/clock_probe.yaml not_used). The imul cross-check turns
such a reading into no clock with the reason (test_the_gpu_hosts_17_ghz_is_rejected_by_the_cross_check).
"""

import copy
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from reprokit import kitdata
from reprokit.analysis import cpus, devices, verdicts
from reprokit.catalog import suites
from reprokit.probes import cpu_peak
from reprokit.reader import load as reader
from reprokit.reader.frozen import freeze
from tests import models

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "data" / "runs"


def load(name):
    """A stored run as the model (reprokit/reader/load.py) and its cell results by id."""
    run = reader.load(RUNS / name)
    return run, dict(run.results)


def with_cpu_peak(run, **fields):
    """The run with its CPU probe's fields replaced."""
    return dataclasses.replace(run, cpu_peak=freeze({**run.cpu_peak, **fields}))


def test_the_clock_probe_measures_a_clock_from_dependent_adds():
    c = cpu_peak.measure_clock(repeats=50)
    if c["ghz"] is None:  # only where the ISA has no entry or no compiler exists: said why
        pytest.fail(c["reason"])
    entry = next(e for e in kitdata.load("clock_probe")["instructions"] if e["isa"] == c["isa"])
    assert c["ghz"] == pytest.approx(c["adds"] * entry["latency_cycles"] / c["seconds"] / 1e9)
    assert 0.3 < c["ghz"] < 8.0  # a CPU clock, whatever the machine's speed
    assert "dependent" in c["method"] and c["source"] == entry["source"]


def test_the_two_chains_agree_on_this_machine():
    """The real probe here: the add chain and the imul cross-check (another instruction, another latency)
    both ran, read the same clock within the data's tolerance, and the figure kept is the add chain's."""
    doc = kitdata.load("clock_probe")
    c = cpu_peak.measure_clock(repeats=50)
    if c["ghz"] is None:
        pytest.fail(c["reason"])
    roles = [ch["role"] for ch in c["chains"]]
    assert roles == ["clock", "cross_check"]
    clock, check = c["chains"]
    want = {e["role"]: e for e in doc["instructions"] if e["isa"] == c["isa"]}
    for ch in (clock, check):
        e = want[ch["role"]]
        assert (ch["asm"], ch["latency_cycles"], ch["source"]) == (e["asm"], e["latency_cycles"], e["source"])
        assert ch["ghz"] == pytest.approx(ch["ops"] * e["latency_cycles"] / ch["seconds"] / 1e9)
        assert 0.3 < ch["ghz"] < 8.0
    assert c["ghz"] == clock["ghz"] and c["adds"] == clock["ops"] and c["seconds"] == clock["seconds"]
    assert c["agreement"]["tolerance"] == doc["agreement_tolerance"]
    assert c["agreement"]["spread"] == pytest.approx(max(clock["ghz"], check["ghz"])
                                                     / min(clock["ghz"], check["ghz"]) - 1)
    assert c["agreement"]["spread"] <= doc["agreement_tolerance"]
    assert f"cross-checked by '{check['asm']}'" in c["method"]
    json.dumps(c)  # the run record stores it


def test_a_chain_faster_than_its_stated_latency_gives_no_clock():
    """The real probe with the cross-check's latency stated as 1 cycle instead of its true 3 (x86_64) or 2
    (aarch64): that chain then reads a clock several times too low, as an eliminated chain reads one too
    high, and the probe keeps no clock, naming both figures."""
    doc = copy.deepcopy(kitdata.load("clock_probe"))
    isa = cpu_peak.measure_clock(repeats=2, doc={**doc, "instructions": []})["isa"]
    for e in doc["instructions"]:
        if e["isa"] == isa and e["role"] == "cross_check":
            assert e["latency_cycles"] >= 2
            e["latency_cycles"] = 1
    c = cpu_peak.measure_clock(repeats=20, doc=doc)
    assert c["ghz"] is None and c["method"] is None
    clock, check = c["chains"]
    assert c["agreement"]["spread"] > doc["agreement_tolerance"]
    assert f"{clock['ghz']:.3g} GHz" in c["reason"] and f"{check['ghz']:.3g} GHz" in c["reason"]
    assert clock["asm"] in c["reason"] and check["asm"] in c["reason"]


def test_the_gpu_hosts_17_ghz_is_rejected_by_the_cross_check():
    """Pure logic on the GPU host's figure: the add-immediate chain read 17.28 GHz
    (docs/gpu-run/pytest-probes.log); an imul chain there runs at the core's clock (3.8 GHz here is an
    assumed figure: the host's imul chain was never timed). More than the tolerance apart: no clock,
    the reason names both figures."""
    tol = kitdata.load("clock_probe")["agreement_tolerance"]
    chains = [{"asm": "addq $1, %0", "latency_cycles": 1, "ghz": 17.27531098991815},
              {"asm": "imulq %0, %0", "latency_cycles": 3, "ghz": 3.8}]
    why = cpu_peak.disagreement(chains, tol)
    assert why is not None and "17.3 GHz" in why and "3.8 GHz" in why
    assert "'addq $1, %0' (1 cycle each)" in why and "'imulq %0, %0' (3 cycles each)" in why
    assert f"{100 * tol:g} %" in why
    # within the tolerance: no reason; just beyond it: a reason; the spread is symmetric
    assert cpu_peak.disagreement([{**chains[0], "ghz": 3.8 * (1 + tol * 0.99)}, chains[1]], tol) is None
    assert cpu_peak.disagreement([{**chains[0], "ghz": 3.8 * (1 + tol * 1.01)}, chains[1]], tol)
    assert cpu_peak.disagreement([{**chains[0], "ghz": 3.8 / (1 + tol * 1.01)}, chains[1]], tol)
    assert cpu_peak.clock_spread(2.0, 3.0) == cpu_peak.clock_spread(3.0, 2.0) == pytest.approx(0.5)
    assert cpu_peak.clock_spread(0.0, 3.0) == float("inf")


def test_every_isa_has_a_clock_chain_and_a_cross_check_with_sources():
    doc = kitdata.load("clock_probe")
    assert doc["schema_version"] == 2
    isas = {e["isa"] for e in doc["instructions"]}
    assert isas >= {"x86_64", "aarch64"}
    tol = doc["agreement_tolerance"]
    for isa in isas:
        mine = [e for e in doc["instructions"] if e["isa"] == isa]
        assert sorted(e["role"] for e in mine) == ["clock", "cross_check"], isa
        clock = next(e for e in mine if e["role"] == "clock")
        check = next(e for e in mine if e["role"] == "cross_check")
        assert mine[0] is clock  # measure_clock's first entry per ISA is the clock chain
        assert clock["latency_cycles"] == 1 and check["latency_cycles"] > 1
        assert clock["asm"].split()[0] != check["asm"].split()[0]  # another instruction
        for e in mine:
            assert len(e["source"]) > 40 and isinstance(e["verified"], bool)
            # no immediate operand: an add-immediate is what Golden Cove's renamer eliminates
            assert "$" not in e["asm"] and "#" not in e["asm"], e["asm"]
        # one cycle off the cross-check's latency must read as a disagreement
        assert check["latency_cycles"] / (check["latency_cycles"] - 1) - 1 > tol
        assert check["latency_cycles"] / (check["latency_cycles"] + 1) < 1 / (1 + tol)
    assert 0 < tol < 0.5 and "Golden Cove" in doc["agreement_tolerance_why"]
    rejected = {(e["isa"], e["asm"]): e for e in doc["not_used"]}
    imm = rejected[("x86_64", "addq $1, %0")]
    assert "79363816" in imm["source"] and "Golden Cove" in imm["why"] and imm["verified"] is False


def test_older_runs_snapshots_of_the_probes_data_stay_valid():
    """The runs stored before the cross-check (schema_version 1, one add-immediate chain per ISA) still
    validate against the schema, so their data snapshots keep loading."""
    from reprokit import validate

    snaps = sorted((ROOT / "docs").glob("*/*/kit-data/clock_probe.yaml"))
    assert snaps, "no stored run carries the probe's data"
    import yaml
    for p in snaps:
        doc = yaml.safe_load(p.read_text())
        assert validate.errors("clock_probe", doc) == [], p
    old = yaml.safe_load(snaps[0].read_text())
    assert old["schema_version"] == 1
    new = copy.deepcopy(kitdata.load("clock_probe"))
    del new["agreement_tolerance"]
    assert validate.errors("clock_probe", new)  # version 2 needs its tolerance


def test_the_gemm_probe_carries_the_clock():
    g = cpu_peak.measure(sizes=(64,), repeats=2)
    assert g["gflops"] > 0 and g["clock"]["ghz"] and "dependent" in g["clock"]["method"]
    assert [ch["role"] for ch in g["clock"]["chains"]] == ["clock", "cross_check"]


def test_a_measured_clock_makes_the_peak():
    run, _ = load("cpu-a")  # Zen 3, 8 cores, 2.45 GHz reported, 32 fp32 FLOP/cycle
    clock = {"ghz": 3.5, "method": "measured: test"}
    c = cpus.host_cpu(run.host, clock=clock)
    assert c["clock_ghz"] == 3.5 and c["clock_measured"] is True
    assert c["peak_tflops"] == pytest.approx(8 * 3.5 * 32 / 1000)
    assert "measured: test; reported 2.45 GHz" in c["derivation"]
    reported = cpus.host_cpu(run.host)
    assert reported["clock_ghz"] == 2.45 and reported["clock_measured"] is False


def test_a_clock_the_chains_disagree_on_builds_no_peak_from_it():
    """A clock dict with ghz None (the two chains disagreed: the GPU host's case) is not used: the peak is
    the one of the reported clock, as with no clock at all, nothing raises, and the derivation says why."""
    run, _ = load("cpu-a")
    chains = [{"role": "clock", "asm": "addq $1, %0", "latency_cycles": 1, "ghz": 17.3},
              {"role": "cross_check", "asm": "imulq %0, %0", "latency_cycles": 3, "ghz": 3.8}]
    bad = {"ghz": None, "method": None, "reason": cpu_peak.disagreement(chains, 0.1), "chains": chains,
           "agreement": {"tolerance": 0.1, "spread": 17.3 / 3.8 - 1}}
    c = cpus.host_cpu(run.host, clock=bad)
    plain = cpus.host_cpu(run.host)
    assert c["peak_tflops"] == plain["peak_tflops"] and c["cores"] == plain["cores"]
    assert c["clock_ghz"] == 2.45 and c["clock_measured"] is False
    # the report says why the measured clock was not used (both chains' figures), beside the reported one
    assert c["clock_source"] == f"{plain['clock_source']}; measured clock not used: {bad['reason']}"
    assert "17.3" in c["derivation"] and "17.3" not in plain["derivation"]


def test_the_peak_counts_the_threads_the_framework_used():
    run, _ = load("cpu-a")
    c = cpus.host_cpu(run.host, threads={"count": 2, "source": "test"})
    assert c["cores"] == 2 and c["peak_tflops"] == pytest.approx(2 * 2.45 * 32 / 1000)
    assert "used 2 threads (test), so 2 cores counted" in c["derivation"]
    # from an older result's stack fingerprint (torch num_threads)
    cell = models.cell(device="cpu", stack_fingerprint={"framework": {"num_threads": 1}})
    d = devices.measured_device(cell, run.machine)
    assert d["cores"] == 1 and d["threads_used"] == 1
    no_count = models.cell(stack_fingerprint={"framework": {"threads": {"intra_op": 0}}})
    assert devices.cell_threads(no_count) is None


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
    fast = with_cpu_peak(run, gflops=900.0)
    assert verdicts.verdict(n, cells[n["cell"]], fast)["verdict"] == "INCONCLUSIVE"
    measured = with_cpu_peak(fast, clock={"ghz": 3.6, "method": "measured: test"})
    v = verdicts.verdict(n, cells[n["cell"]], measured)
    assert v["verdict"].startswith("EFFICIENCY_") and v["verdict"] != "INCONCLUSIVE", v["reason"]
    meas = v["hardware"]["measured"]
    assert meas["clock_measured"] and not meas.get("peak_is_lower_bound")
    assert "measured: test" in meas["peak_source"]
    # a clock the two chains disagreed on (ghz None) is no clock: the lower-bound peak, INCONCLUSIVE
    untrusted = with_cpu_peak(fast, clock={
        "ghz": None, "method": None, "reason": "the clock is not measured: 'addq $1, %0' reads 17.3 GHz"})
    u = verdicts.verdict(n, cells[n["cell"]], untrusted)
    assert u["verdict"] == "INCONCLUSIVE" and "lower bound" in u["reason"]
    assert u["hardware"]["measured"]["clock_measured"] is False


def test_the_run_driver_says_why_a_clock_was_not_kept(monkeypatch):
    """reprokit/run/execute._cpu_peak with the real GEMM probes and a clock the chains disagreed on
    (measure_clock replaced by that result): the run goes on, its log line gives the reason with both
    figures, and the peak it stores carries the clock dict with both chains."""
    from reprokit.run import execute

    chains = [{"role": "clock", "asm": "addq %0, %0", "latency_cycles": 1, "ghz": 17.3},
              {"role": "cross_check", "asm": "imulq %0, %0", "latency_cycles": 3, "ghz": 3.8}]
    bad = {"ghz": None, "method": None, "reason": cpu_peak.disagreement(chains, 0.1), "chains": chains}
    monkeypatch.setattr(cpu_peak, "measure_clock", lambda: bad)
    said = []
    peak = execute._cpu_peak(said.append)
    assert peak["gflops"] > 0 and peak["clock"] is bad
    line = next(s for s in said if s.startswith("cpu peak probe:"))
    assert f"clock not measured: {bad['reason']}" in line and "17.3 GHz" in line and "3.8 GHz" in line


def test_a_cut_short_cached_probe_program_is_rebuilt_not_trusted(tmp_path, monkeypatch):
    """A full HOME left a 0-byte clock-probe program under its final name (a move across file systems
    copies), and every later run said "clock not measured" until it was deleted by hand. So the
    program is built beside its final name and renamed whole, and a cached one is checked before use."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    isa = cpu_peak.measure_clock(repeats=1)["isa"]
    entry = next(e for e in kitdata.load("clock_probe")["instructions"]
                 if e.get("role", "clock") == "clock" and e["isa"] == isa)
    exe, why = cpu_peak._clock_binary(entry["asm"], 64)
    assert exe, why
    built = Path(exe)
    assert cpu_peak._usable(built)
    good = built.read_bytes()
    built.write_bytes(b"")  # what the full disk left
    again, why = cpu_peak._clock_binary(entry["asm"], 64)
    assert again == exe, why
    assert built.read_bytes() == good  # rebuilt, whole
    assert not [p for p in built.parent.iterdir() if p.name.startswith(".tmp-")]
