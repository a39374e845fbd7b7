"""Cost data used: the ETA of a designed run from the per-cell costs, and the load
warning as a count of loaded cells and what the load did to their intervals."""

import io
import random
from types import SimpleNamespace

import pytest

from reprokit.catalog import suites
from reprokit.plan import design
from reprokit.plan.design import default_options
from reprokit.plan.plan import Options, make_plan
from reprokit.report import run_health
from reprokit.run.progress import Progress, design_times
from tests import models


def test_a_designed_runs_eta_comes_from_the_cells_recorded_costs_from_the_start():
    s = suites.load_suite("legacy-2017")
    d = default_options(make_plan(s, Options()), "local").design
    times = design_times(d)
    assert times and all(t == d["cells"][cid]["process_s"] for cid, t in times.items())
    c = d["cells"]["001/pytorch/word_lm/b128-s128-h1024"]
    costs = design.costs("legacy-2017", "local", False, "budget")[0]["001/pytorch/word_lm/b128-s128-h1024"]
    assert c["process_s"] > costs["start_s"]  # start-up plus warm-up and iterations x iteration cost
    units = [(SimpleNamespace(id=cid, workload=cid.split("/")[2]), p) for cid in times
             for p in range(1, d["processes"] + 1)]
    p = Progress(units, say=[].append, stream=io.StringIO(), history=times, repeat=d["processes"])
    assert p.eta() == pytest.approx(sum(times.values()) * d["processes"])  # known before a cell ends


def _cell(cid, load, spread, rng):
    xs = [1.0 + spread * rng.gauss(0, 1) for _ in range(12)]
    return {"cell_id": cid, "status": "ok", "load_avg": {"before": [load], "after": [load]},
            "metrics": {"t": {"unit": "s", "samples": xs, "raw_seconds": xs, "processes": [4, 4, 4]}}}


def test_the_load_warning_counts_the_loaded_cells_and_says_what_load_did_to_their_intervals():
    rng = random.Random(3)
    cells = [_cell(f"quiet{i}", 1.0, 0.01, rng) for i in range(6)] + \
            [_cell(f"busy{i}", 6.0, 0.08, rng) for i in range(3)]
    host = {"cpu": {"usable_cores": 2}}
    load = run_health.machine_load(models.run(host=host, cells=cells))
    e = load["effect"]
    assert e["loaded_cells"] == 3 and e["cells"] == 9
    assert e["loaded_half_width_median"] > 3 * e["other_half_width_median"]
    assert e["text"].startswith("3 of 9 cells ran with the 1-minute load above 3: their intervals' median "
                                "half-width was")
    assert "busy0" not in e["text"]  # a count and an effect, not a paragraph of cell ids
    quiet = run_health.machine_load(models.run(host=host, cells=cells[:6]))
    assert quiet["effect"] is None and quiet["warning"] is False
