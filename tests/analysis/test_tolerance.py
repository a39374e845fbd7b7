"""The same-model tolerance, derived per number with a source for each term (reprokit/analysis/tolerance.py,
reprokit/data/unit_variation.yaml)."""

import pytest

from reprokit import kitdata
from reprokit.analysis import claims, devices, tolerance, verdicts
from reprokit.catalog import suites
from tests import models
from tests.analysis.test_verdicts import load


def test_the_rounding_is_half_the_last_printed_digit():
    assert tolerance.rounding(0.1889) == 0.5e-4 and tolerance.rounding(12.0) == 0.5
    assert tolerance.rounding(1500) == 0.5 and tolerance.rounding(2.5e-05) == 0.5e-6


def test_a_gpu_figure_gets_its_rounding_and_the_sourced_between_unit_term():
    tol = tolerance.for_number({"value": 3.6}, {}, "gpu")
    rounding, unit = tol.terms
    assert rounding.name == "rounding" and rounding.value == pytest.approx(0.05 / 3.6)
    assert unit.name == "between_unit" and unit.value == 0.08 and unit.verified and unit.kind == "gpu"
    assert "2208.11035" in unit.source and "8% (max" in unit.source
    assert tol.value == pytest.approx(0.05 / 3.6 + 0.08)
    assert tol.text() == "± 9.39 % (rounding 1.39 % + between units 8 %)"


def test_the_cpu_term_is_marked_as_the_kits_own_choice():
    (_, unit) = tolerance.for_number({"value": 101.4}, {}, "cpu").terms
    entry = kitdata.load("unit_variation")["classes"]["cpu"]
    assert not unit.verified and entry["source"] is None and "kit's own choice" in entry["why"]
    assert "(unverified)" in tolerance.for_number({"value": 101.4}, {}, "cpu").text()


def test_a_stated_tolerance_adds_and_a_flat_one_replaces():
    stated = tolerance.for_number({"value": 10.0}, {"stated_tolerance": {"value": 0.03, "where": "sec. 4"}},
                                  "gpu")
    assert [t.name for t in stated.terms] == ["rounding", "between_unit", "stated"]
    assert stated.value == pytest.approx(0.05 + 0.08 + 0.03)
    flat = tolerance.for_number({"value": 10.0}, {"tolerance": 0.1}, "gpu")
    assert flat.flat and flat.value == 0.1 and flat.text() == "± 10 % (flat, unsourced)"


def test_no_shipped_source_sets_a_flat_tolerance():
    assert all("tolerance" not in s for s in suites.load_sources().values())


@pytest.mark.parametrize("ratio,verdict", [(1.06, "REPRODUCED"), (1.12, "DEVIATES_HIGHER")])
def test_a_same_model_verdict_uses_the_derived_band_and_names_its_terms(ratio, verdict):
    """15360 MB on one V100 (002-L061): the band is ± (rounding + 8 %), so 6 % above is REPRODUCED and
    12 % above DEVIATES; the reason names the terms."""
    run = load("v100-other")
    n = next(n for n in suites.load_published("002") if n["id"] == "002-L061")
    cell = models.cell({"cell_id": n["cell"], "status": "ok", "device": "gpu", "params": {"gpus": 1},
            "implementation": {"framework": "tensorflow", "framework_version": "1.8.0", "substitutes": []},
            "metrics": {"gpu_memory": {"unit": "MB",
                                       "samples": [15360 * ratio * (1 + i / 10000) for i in range(6)],
                                       "processes": [2, 2, 2]}}})
    v = verdicts.verdict(n, cell, run)
    assert v["verdict"] == verdict, v["reason"]
    assert "(rounding 0.00326 % + between units 8 %)" in v["reason"]
    assert [t["term"] for t in v["tolerance_terms"]] == ["rounding", "between_unit"]


def _obs(units, device="cpu"):
    return {"exact": False, "units": units, "device": device}


def test_a_cell_names_the_units_it_ran_on():
    local = models.cell({"cell_id": "c", "status": "ok", "device": "cpu", "metrics": {}})
    assert devices.units(local) == ("this host",)
    slurm = models.cell({"cell_id": "c", "status": "ok", "device": "cpu", "metrics": {},
                         "runner": {"name": "slurm", "node": "rknode1", "nodes": ["rknode3", "rknode1"]}})
    assert devices.units(slurm) == ("rknode1", "rknode3")


def test_a_claims_ratio_across_two_units_says_it_does_not_cancel_the_unit_term():
    assert claims._units_note(_obs(("this host",)), _obs(("this host",))) == ""
    note = claims._units_note(_obs(("rknode1",)), _obs(("rknode2",)))
    assert "different units (rknode1 / rknode2)" in note and "± 8 % between units" in note
    assert "unverified" in note  # the CPU term is the kit's own choice
    assert claims._units_note({**_obs(("rknode1",)), "exact": True}, _obs(("rknode2",))) == ""
