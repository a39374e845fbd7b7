"""The ledger's views on synthetic store records: each threshold on both of its sides, each estimator
against a value worked out by hand, and the plots drawn the same twice.

The records are what reprokit/ledger/fields.py keeps of a run (the same keys); the real runs under
docs/ go through the whole build in tests/ledger/test_ledger.py.
"""

from __future__ import annotations

import math
import statistics
from types import SimpleNamespace

import pytest

from reprokit import formats, validate
from reprokit.errors import UserError
from reprokit.ledger import cells, claim_map, fields, machines, plots, stats, views

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
ZEN = "AMD Zen 4 (family 25 model 17), 2 cores"
BUILD = {"inputs": 0, "read": 0, "known": 0, "same_run": 0, "refused": []}


def _digest(i: int) -> str:
    return f"{i:064x}"


def _machine(i: int) -> str:
    return f"{i:016x}"


def _facts(**kw) -> dict:
    return {**{k: None for k in fields.HOST_FACTS}, **kw}


def _run(i: int, *, machine: int = 1, devices: dict | None = None, day: int | None = None, rejudged=False,
         run_id: str | None = None, facts: dict | None = None) -> dict:
    day = i if day is None else day
    return {"digest": _digest(i), "run_id": run_id or f"2026110{day % 10}T00000{i % 10}Z-s{i}",
            "form": "run directory", "suite": "s", "runner": "local", "quick": False, "rejudged": rejudged,
            "kit_version": "0.1.0", "kit_commit": None,
            "started": f"2026-11-{10 + day:02d}T00:00:{i % 60:02d}Z",
            "finished": None, "devices": devices or {"gpu": H100}, "gpu_count": 1,
            "machine": _machine(machine), "host_facts": facts or _facts(),
            "report": "recomputed from the samples", "stored_report_matches": None}


def _row(measured: float, lo: float | None = None, hi: float | None = None, *, number="n1", cell="c/one",
         device="gpu", model=H100, units=("aaaaaaaaaaaaaaaa",), published=1.0) -> dict:
    return {"number_id": number, "source": "000", "table": "t", "row_label": "r", "metric": "time",
            "published": published, "unit": "s", "published_device": "Tesla M40", "bound": None,
            "cell": cell, "stack": "torch", "stack_kind": "original", "hardware": "other class",
            "device": device, "device_model": model, "gpu_count": 1 if device == "gpu" else 0,
            "units": list(units) if device == "gpu" else [], "precision": "fp32", "measured": measured,
            "ci_low": lo, "ci_high": hi, "ci_label": "95 %", "measured_unit": "s", "n": 5,
            "verdict": "REPRODUCED", "scale": 1.0}


class Store:
    """What views.document reads of a store: runs(), rows(), claims()."""

    def __init__(self, runs, rows=(), claims=()):
        self._runs, self._rows, self._claims = list(runs), list(rows), list(claims)

    def runs(self):
        return list(self._runs)

    def rows(self):
        return sorted(self._rows, key=lambda x: (x[1]["number_id"], x[0]))

    def claims(self):
        return sorted(self._claims, key=lambda x: (x[1]["claim_id"], x[0]))


def _series(values, ci=0.01, **row):
    """A store with one series: a run per value, each its own day, intervals of +- ci."""
    runs = [_run(i) for i in range(len(values))]
    rows = [(_digest(i), _row(v, v - ci, v + ci, **row)) for i, v in enumerate(values)]
    return runs, rows


def _cells(runs, rows):
    return cells.cells(rows, {r["digest"]: r for r in runs})


# -- percentiles -------------------------------------------------------------------------------------
def test_a_percentile_is_stated_from_ten_runs_on_and_not_below():
    nine = stats.percentiles([float(v) for v in range(1, 10)])
    assert not nine["stated"] and nine["ranks"] == [None] * 9
    assert nine["text"] == "9 runs: fewer than 10, no percentile"
    ten = stats.percentiles([float(v) for v in range(1, 11)])
    assert ten["stated"] and ten["reference_runs"] == 10 and ten["excluded"] == []
    assert ten["ranks"][0] == 5.0 and ten["ranks"][-1] == 95.0 and ten["ranks"][4] == 45.0  # mid-rank
    # in a series: each run's percentile beside it, none below the threshold
    (c,) = _cells(*_series([float(v) for v in range(1, 11)]))
    assert c["percentile"]["stated"] and [r["percentile"] for r in c["runs"]][:2] == [5.0, 15.0]
    (c,) = _cells(*_series([float(v) for v in range(1, 10)]))
    assert not c["percentile"]["stated"] and all(r["percentile"] is None for r in c["runs"])
    assert "fewer than 10, no percentile" in c["percentile"]["text"]


def test_a_run_beyond_three_sigma_is_left_out_of_the_reference_distribution():
    base = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0, 100.0, 101.0, 99.0, 100.0]
    got = stats.percentiles(base + [1000.0])
    assert got["excluded"] == [10] and got["reference_runs"] == 10 and got["stated"]
    assert got["ranks"][10] == 100.0  # judged against the reference it is not part of
    # ten runs with one of them far out: nine remain, fewer than ten: no percentile
    short = stats.percentiles(base[:9] + [1000.0])
    assert short["excluded"] == [9] and not short["stated"] and "9 in the reference" in short["text"]
    # just inside and just outside 3 standard deviations of the others
    rest = base
    m, s = statistics.fmean(rest), statistics.stdev(rest)
    assert stats.outliers(rest + [m + 2.9 * s]) == [False] * 11
    assert stats.outliers(rest + [m + 3.1 * s])[-1] is True
    (c,) = _cells(*_series(base + [1000.0]))
    assert c["percentile"]["excluded_runs"] == [_digest(10)[:12]] and c["runs"][10]["outlier"]


# -- between units -----------------------------------------------------------------------------------
def test_the_spread_between_units_needs_two_units_and_has_the_value_worked_by_hand():
    one = stats.between_units({"u1": [10.0, 12.0, 11.0]})
    assert not one["stated"] and one["relative_sd"] is None
    assert one["text"] == "1 unit: no between-unit spread"
    two = stats.between_units({"a": [10.0, 12.0], "b": [20.0, 22.0]})
    # unit means 11 and 21, their mean 16, their SD sqrt(50): 0.4419...; ANOVA: MSB 100, MSW 2, n0 2:
    # sigma_b^2 = (100 - 2) / 2 = 49, sigma_b = 7, over the mean of all runs 16: 0.4375
    assert two["stated"] and (two["units"], two["runs"]) == (2, 4)
    assert math.isclose(two["relative_sd"], math.sqrt(50) / 16)
    assert math.isclose(two["random_effects_relative_sd"], 7 / 16)
    # one run per unit: no within-unit term, no random-effects component
    single = stats.between_units({"a": [10.0], "b": [20.0]})
    assert math.isclose(single["relative_sd"], math.sqrt(50) / 15)
    assert single["random_effects_relative_sd"] is None
    # units whose runs differ less than the runs within them: the component is 0, not negative
    noisy = stats.between_units({"a": [10.0, 20.0], "b": [11.0, 21.0]})
    assert noisy["random_effects_relative_sd"] == 0.0


def test_a_unit_is_a_gpu_set_on_a_gpu_row_and_the_machine_on_a_cpu_row():
    runs = [_run(0, machine=1), _run(1, machine=1), _run(2, machine=2), _run(3, machine=2)]
    gpu = [(_digest(0), _row(10.0, units=("a" * 16,))), (_digest(1), _row(12.0, units=("b" * 16,))),
           (_digest(2), _row(20.0, units=("a" * 16,))), (_digest(3), _row(22.0, units=("b" * 16,)))]
    (c,) = _cells(runs, gpu)
    # the GPUs, not the machines, are the units: a = {10, 20}, b = {12, 22}
    assert [r["unit"] for r in c["runs"]] == ["a" * 16, "b" * 16, "a" * 16, "b" * 16]
    assert math.isclose(c["between_units"]["relative_sd"], statistics.stdev([15.0, 17.0]) / 16)
    cpu = [(d, {**r, "device": "cpu", "device_model": ZEN, "units": []}) for d, r in gpu]
    (c,) = _cells(runs, cpu)
    assert [r["unit"] for r in c["runs"]] == [_machine(1)] * 2 + [_machine(2)] * 2
    assert math.isclose(c["between_units"]["relative_sd"], math.sqrt(50) / 16)
    (c,) = _cells(runs[:2], cpu[:2])
    assert c["between_units"]["text"] == "1 unit: no between-unit spread"


# -- history -----------------------------------------------------------------------------------------
def _hist(values_cis):
    return stats.history([{"measured": m, "ci_low": lo, "ci_high": hi} for m, lo, hi in values_cis])


def test_a_change_is_stated_only_against_two_earlier_runs():
    one_earlier = _hist([(10.0, 9.0, 11.0), (20.0, 19.0, 21.0)])
    assert not one_earlier["stated"] and one_earlier["change"] is None
    assert one_earlier["text"] == "fewer than 2 earlier runs (1): no change stated"
    inside = _hist([(10.0, 9.0, 11.0), (10.5, 9.5, 12.0), (11.5, 11.0, 12.5)])
    assert inside["stated"] and inside["change"] is False and inside["range"] == [9.0, 12.0]
    outside = _hist([(10.0, 9.0, 11.0), (10.5, 9.5, 12.0), (13.0, 12.5, 13.5)])
    assert outside["stated"] and outside["change"] is True
    assert math.isclose(outside["change_pct"], 100 * (13.0 - 10.25) / 10.25)
    assert "outside the range [9, 12]" in outside["text"] and "+26.8 %" in outside["text"]
    # the change is against the median of the earlier medians (10.5 here; their mean is 10.83)
    three = _hist([(10.0, 9.0, 11.0), (10.5, 9.5, 12.0), (12.0, 11.5, 12.2), (8.5, 8.0, 8.9)])
    assert three["change"] is True and math.isclose(three["change_pct"], 100 * (8.5 - 10.5) / 10.5)
    assert "-19.0 %" in three["text"] and "range [9, 12.2]" in three["text"]
    # in a series the runs are taken oldest first, whatever order the store gives them in
    runs = [_run(0, day=3), _run(1, day=1), _run(2, day=2)]
    rows = [(_digest(0), _row(13.0, 12.5, 13.5)), (_digest(1), _row(10.0, 9.0, 11.0)),
            (_digest(2), _row(10.5, 9.5, 12.0))]
    (c,) = _cells(runs, rows)
    assert c["history"]["change"] is True and c["runs"][-1]["measured"] == 13.0


def test_a_rejudged_copy_of_a_run_is_not_a_second_run():
    runs = [_run(0), _run(1, rejudged=True, run_id=_run(0)["run_id"]), _run(2)]
    rows = [(_digest(i), _row(v, v - 0.1, v + 0.1)) for i, v in enumerate((10.0, 10.0, 11.0))]
    (c,) = _cells(runs, rows)
    assert c["n_runs"] == 2 and [r["run"] for r in c["runs"]] == [_digest(0)[:12], _digest(2)[:12]]
    assert c["history"]["earlier"] == 1


# -- unstable ----------------------------------------------------------------------------------------
def test_runs_whose_intervals_do_not_overlap_make_the_cell_unstable():
    runs = [_run(0), _run(1), _run(2)]
    rows = [(_digest(0), _row(10.0, 9.0, 11.0)), (_digest(1), _row(10.5, 10.8, 11.5)),
            (_digest(2), _row(14.0, 13.0, 15.0))]
    entries = _cells(runs, rows)
    (u,) = cells.unstable(entries)
    assert entries[0]["disjoint"] == {"count": 2, "runs": [_digest(i)[:12] for i in range(3)],
                                      "pairs": [[_digest(0)[:12], _digest(2)[:12]],
                                                [_digest(1)[:12], _digest(2)[:12]]]}
    assert u["pair_count"] == 2
    assert u["runs"] == [_digest(i)[:12] for i in range(3)]
    assert u["index"] == 0 and u["cell"] == "c/one"
    calm = [(_digest(0), _row(10.0, 9.0, 11.0)), (_digest(1), _row(10.5, 10.8, 11.5)),
            (_digest(2), _row(11.0, 10.9, 12.0))]
    assert cells.unstable(_cells(runs, calm)) == []
    # a run without an interval takes no part
    assert stats.disjoint_pairs([{"ci_low": None, "ci_high": None, "measured": 100.0},
                                 {"ci_low": 1.0, "ci_high": 2.0, "measured": 1.5}]) == []


# -- machines ----------------------------------------------------------------------------------------
def test_each_machine_says_what_differs_from_other_machines_of_its_device_model():
    a = _facts(driver_version="550.54.15", gpu_name=H100, gpu_power_limit_w=700.0, kernel="6.8.0")
    b = _facts(driver_version="580.159.04", gpu_name=H100, gpu_power_limit_w=700.0, kernel=None)
    c = _facts(driver_version="535.1", gpu_name=A100, gpu_power_limit_w=400.0, kernel="6.8.0")
    runs = [_run(0, machine=1, facts={**a, "driver_version": "545.0"}), _run(1, machine=1, facts=a),
            _run(2, machine=2, facts=b), _run(3, machine=3, devices={"gpu": A100}, facts=c)]
    by = {m["machine"]: m for m in machines.machines(runs)}
    one, two, three = by[_machine(1)], by[_machine(2)], by[_machine(3)]
    assert one["facts"]["driver_version"] == "550.54.15"  # the latest run's
    assert one["changed"] == [{"fact": "driver_version", "label": "NVIDIA driver",
                               "values": ["545.0", "550.54.15"]}]
    assert [(d["fact"], d["value"], d["others"]) for d in one["differs"]] == \
        [("driver_version", "550.54.15", [{"value": "580.159.04", "machines": 1, "examples": [_machine(2)]}])]
    assert one["same_model_machines"] == 1 and "NVIDIA driver" in one["compared"]
    # a fact one of them did not record (the kernel) is not a difference; the A100 is not compared
    assert [d["fact"] for d in two["differs"]] == ["driver_version"]
    assert three["differs"] == [] and three["same_model_machines"] == 0
    assert three["compared"].startswith("No other machine")
    # the same facts: nothing differs
    same = machines.machines([_run(0, machine=1, facts=a), _run(1, machine=2, facts=a)])
    assert all(m["differs"] == [] and m["compared"].startswith("The same recorded facts") for m in same)


XEON = "Intel(R) Xeon(R) Platinum 8480+ @ 2.00GHz"


def test_the_host_facts_are_taken_by_allow_list_only():
    gpu = {"name": H100, "uuid": "GPU-6ce85e96-425a-4e9c-25db-c6ee03dbdda4", "pci_bus_id": "00000000:00:06.0",
           "serial": "1650123456789", "driver_version": "580.159.04",
           "clocks": {"sm_max_mhz": 1980, "sm_applications_mhz": 1980, "mem_max_mhz": 2619,
                      "mem_applications_mhz": 2619}, "power_limit_w": 700.0, "enforced_power_limit_w": 700.0}
    other = {**gpu, "uuid": "GPU-2", "clocks": {**gpu["clocks"], "sm_applications_mhz": 1755}}
    host = {"host_id": "c96ab8f8ee7d3be5", "hostname": "secret-node", "user": "alice",
            "os": {"name": "Linux", "release": "6.8.0-x", "distro": {"PRETTY_NAME": "Ubuntu 24.04.3 LTS"}},
            "kernel": {"release": "6.8.0-x"}, "cpu": {"model_name": XEON, "logical_cores": 192},
            "nvidia": {"driver_version": "580.159.04", "cuda_driver_version": "13.0"},
            "python": {"executable": "/home/alice/bin/python"}, "gpus": [gpu, other]}
    cell = SimpleNamespace(stack_fingerprint={"cuda_libraries": {
        "cudnn": {"version_str": "9.19.0", "library": "/opt/x/libcudnn.so.9"},
        "cuda_runtime": {"version_str": "13.0"}}})
    run = SimpleNamespace(host=host, machine=SimpleNamespace(gpus=[gpu, other]), results={"c": cell})
    got = fields.host_facts(run)
    assert set(got) == set(fields.HOST_FACTS)
    assert got == {"driver_version": "580.159.04", "cuda_driver_version": "13.0", "cuda_runtime": "13.0",
                   "cudnn": "9.19.0", "gpu_name": H100, "gpu_count": 2, "gpu_sm_max_mhz": 1980,
                   "gpu_sm_applications_mhz": "1980 / 1755", "gpu_mem_max_mhz": 2619,
                   "gpu_mem_applications_mhz": 2619, "gpu_power_limit_w": 700.0,
                   "gpu_enforced_power_limit_w": 700.0, "cpu_model": XEON, "cpu_cores": 192,
                   "os": "Ubuntu 24.04.3 LTS", "kernel": "6.8.0-x"}
    text = repr(got)
    assert not any(s in text for s in ("GPU-6ce8", "00:06.0", "1650123456789", "secret-node", "alice",
                                       "/opt"))
    # nothing recorded: every fact null, the GPU count 0
    bare = fields.host_facts(SimpleNamespace(host={}, machine=SimpleNamespace(gpus=[]), results={}))
    assert bare == {**{k: None for k in fields.HOST_FACTS}, "gpu_count": 0}


# -- claims map --------------------------------------------------------------------------------------
def _claim(status, checked=None, devices=(H100,)):
    doc = {"claim_id": "c1", "source": "000", "text": "A < B", "status": status, "devices": list(devices)}
    if checked is not None:
        doc["checked"] = checked
    return doc


def _pair(status, ratio=None, lo=None, hi=None, device=None):
    return {"better_cell": "000/tf/a/x", "worse_cell": "000/tf/b/x", "status": status,
            "published_speedup": 1.46, "published_on": ["Tesla M40 24GB"], "ratio": ratio, "ratio_low": lo,
            "ratio_high": hi, "interval": "95 % bootstrap" if ratio else None, "device": device}


def test_the_claims_map_puts_each_device_model_under_its_class_with_the_ratio_intervals():
    runs = [_run(0, devices={"gpu": H100}), _run(1, devices={"cpu": ZEN}, machine=2),
            _run(2, devices={"gpu": H100}), _run(3, devices={"gpu": A100}, machine=3)]
    stored = [
        (_digest(0), _claim("HOLDS", [{"device_class": "gpu", "device_model": H100, "status": "HOLDS",
                                       "pairs": [_pair("HOLDS", 1.52, 1.41, 1.63, "gpu")]}])),
        (_digest(1), _claim("NOT_TESTABLE_HERE", [{"device_class": "cpu", "device_model": ZEN,
                                                   "status": "NOT_TESTABLE_HERE",
                                                   "pairs": [_pair("NOT_TESTABLE_HERE")]}], devices=(ZEN,))),
        (_digest(2), _claim("REVERSED", [{"device_class": "gpu", "device_model": H100, "status": "REVERSED",
                                          "pairs": [_pair("REVERSED", 0.8, 0.75, 0.86, "gpu")]}])),
        (_digest(3), _claim("INCONCLUSIVE", devices=(A100,))),  # a record kept before `checked`
    ]
    claims, columns = claim_map.claims(stored, {r["digest"]: r for r in runs})
    assert [(c["class_label"], c["device_model"]) for c in columns] == \
        [("GPU", A100), ("GPU", H100), ("CPU", ZEN)]
    (c,) = claims
    by = {d["device_model"]: d for d in c["devices"]}
    assert by[H100]["counts"] == {"REVERSED": 1, "HOLDS": 1}
    assert by[H100]["summary"] == "REVERSED x1, HOLDS x1"
    assert [s["status"] for s in by[H100]["statuses"]] == ["HOLDS", "REVERSED"]  # oldest first
    assert claim_map.pairs_of(by[H100], by[H100]["statuses"][0])[0]["text"] == \
        "tf/a/x over tf/b/x: HOLDS 1.52x [1.41, 1.63] (published 1.46x on Tesla M40 24GB)"
    # the pair defined once, each run's measurement of it by index
    assert by[H100]["pairs"] == [{"better_cell": "000/tf/a/x", "worse_cell": "000/tf/b/x",
                                  "published_speedup": 1.46, "published_on": ["Tesla M40 24GB"]}]
    assert [s["pairs"][0]["pair"] for s in by[H100]["statuses"]] == [0, 0]
    assert by[H100]["statuses"][1] == {"run": _digest(2)[:12], "status": "REVERSED", "pairs": [
        {"pair": 0, "status": "REVERSED", "ratio": 0.8, "ratio_low": 0.75, "ratio_high": 0.86,
         "interval": "95 % bootstrap", "device": "gpu"}]}
    assert by[H100]["latest"].endswith("REVERSED 0.8x [0.75, 0.86] (published 1.46x on Tesla M40 24GB)")
    assert by[ZEN]["device_class"] == "cpu" and by[ZEN]["latest"] is None
    assert "not measured" in claim_map.pairs_of(by[ZEN], by[ZEN]["statuses"][0])[0]["text"]
    assert by[A100]["device_class"] == "gpu" and by[A100]["statuses"][0]["pairs"] == []
    # the page's map: one row, the cells aligned to the columns
    doc = views.document(Store(runs, [], stored), BUILD)
    layout = views.claims_map(doc)
    assert [(g["label"], g["span"]) for g in layout["groups"]] == [("GPU", 2), ("CPU", 1)]
    assert [cell["device_model"] for cell in layout["rows"][0]["cells"]] == [A100, H100, ZEN]


def test_a_claim_looked_at_on_two_device_kinds_in_one_run_has_a_status_on_each():
    claim = {"id": "c1", "status": "REVERSED", "pairs": [
        {"better_cell": "a", "worse_cell": "b", "status": "HOLDS", "speedup": [1.2, 1.4],
         "speedup_median": 1.3, "speedup_interval": {"label": "95 %"}, "better_value": {"on": H100},
         "worse_value": {"on": H100}},
        {"better_cell": "a", "worse_cell": "b", "status": "REVERSED", "speedup": [0.5, 0.7],
         "speedup_median": 0.6, "speedup_interval": {"label": "95 %"}, "better_value": {"on": ZEN},
         "worse_value": {"on": ZEN}},
        {"better_cell": "c", "worse_cell": "d", "status": "NOT_RUN"}]}
    got = fields._checked(claim, ["cpu", "gpu"], {"cpu": ZEN, "gpu": H100})
    assert [(w["device_class"], w["status"], [p["status"] for p in w["pairs"]]) for w in got] == [
        ("cpu", "REVERSED", ["REVERSED", "NOT_RUN"]), ("gpu", "NOT_RUN", ["HOLDS", "NOT_RUN"])]
    assert got[1]["pairs"][0]["ratio"] == 1.3 and got[1]["pairs"][0]["ratio_low"] == 1.2
    # a side's `on` is the model the report names: its kind is the run's device kind of that model
    assert fields._kind_of(ZEN, {"cpu": ZEN, "gpu": H100}) == "cpu"
    assert fields._kind_of("x", {"cpu": ZEN}) is None


# -- the document, the page and the plots ------------------------------------------------------------
def _store_with_everything():
    runs = [_run(i, machine=1 + i % 2) for i in range(4)] + [_run(4, devices={"cpu": ZEN}, machine=3)]
    rows = [(_digest(i), _row(v, v * 0.95, v * 1.05)) for i, v in enumerate((1.0, 1.1, 0.9, 3.0))]
    rows.append((_digest(4), _row(40.0, 38.0, 42.0, device="cpu", model=ZEN)))
    stored = [(_digest(0), _claim("HOLDS", [{"device_class": "gpu", "device_model": H100, "status": "HOLDS",
                                            "pairs": [_pair("HOLDS", 1.5, 1.4, 1.6, "gpu")]}]))]
    return Store(runs, rows, stored)


def test_the_document_follows_the_schema_and_the_same_store_gives_the_same_page():
    st = _store_with_everything()
    first, second = views.document(st, BUILD), views.document(st, BUILD)
    assert validate.errors("ledger", first) == []
    assert {**first, "built": "x"} == {**second, "built": "x"}
    first["built"] = second["built"] = "2026-11-29T00:00:00Z"
    page = views.html(first)
    assert page == views.html(second)  # the plots too, byte for byte
    assert page.count("<svg") == 1 and "<script" not in page and "data:" not in page
    assert 'id="n-n1"' in page and 'class="claims-map"' in page and 'class="machine-facts"' in page
    sections = ("claims", "numbers", "cells", "unstable", "machines", "runs")
    order = [page.index(f'<h2 id="{s}"') for s in sections]
    assert order == sorted(order)


def test_a_plot_is_deterministic_and_uses_a_log_axis_only_past_ten_fold():
    doc = views.document(_store_with_everything(), BUILD)
    (n,) = doc["numbers"]
    svg = plots.number_svg(n, "p0-n1")
    assert svg == plots.number_svg(n, "p0-n1") and svg.startswith("<svg")
    assert "<script" not in svg.lower() and "Date" not in svg
    assert "(log)" in svg  # 0.9 .. 42 spans more than 10x
    assert plots.number_svg(n, "p1-n1") != svg  # ids prefixed per plot
    narrow = {**n, "published": 1.0, "measurements": [m for m in n["measurements"] if m["device"] == "gpu"]}
    assert "(log)" not in plots.number_svg(narrow, "p0")  # 0.855 .. 3.15: under 10x
    assert plots.uses_log([1.0, 10.5]) and not plots.uses_log([1.0, 10.0])
    # each run once: a rejudged copy of a run is not drawn again
    twice = [{**m, "rejudged": True, "run": "f" * 12} for m in narrow["measurements"]]
    assert len(plots.drawn(narrow["measurements"] + twice)) == len(narrow["measurements"])
    assert plots.number_svg({**n, "measurements": []}, "p") is None


def test_a_version_1_ledger_is_refused_with_the_way_to_build_it_again():
    assert formats.version("ledger") == 3
    assert validate.schema("ledger")["properties"]["schema_version"]["const"] == 3
    with pytest.raises(UserError, match="build it again"):
        formats.upgrade("ledger", {"schema_version": 1, "kind": "ledger"}, "old/ledger.json")


def test_a_version_2_ledgers_machine_differences_are_grouped_by_value():
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    old = {"schema_version": 2, "kind": "ledger", "machines": [{"machine": a, "differs": [
        {"device_model": H100, "fact": "kernel", "label": "kernel release", "value": "6.8",
         "others": [{"machine": c, "value": "6.9"}, {"machine": b, "value": "6.9"},
                    {"machine": "d" * 16, "value": "7.0"}]}]}]}
    old["claims"] = [{"id": "c", "source": "0", "text": "t", "devices": [
        {"device_class": "gpu", "device_model": H100, "counts": {"HOLDS": 2}, "summary": "HOLDS x2",
         "latest": None, "statuses": [
             {"run": "0" * 12, "run_id": "r0", "date": "d", "rejudged": False, "status": "HOLDS",
              "pairs": [{**_pair("HOLDS", 1.5, 1.4, 1.6, "gpu"), "text": "x"}]},
             {"run": "1" * 12, "run_id": "r1", "date": "d", "rejudged": True, "status": "HOLDS",
              "pairs": [{**_pair("HOLDS", 1.3, 1.2, 1.4, "gpu"), "text": "y"}]}]}]}]
    old["unstable"] = [{"index": 0, "runs": [{"run": "0" * 12, "measured": 1.0}, {"run": "1" * 12}],
                        "pairs": [["0" * 12, "1" * 12]]}]
    new = formats.upgrade("ledger", old, "old/ledger.json")
    assert new["schema_version"] == 3 and new["unstable"][0]["runs"] == ["0" * 12, "1" * 12]
    assert new["unstable"][0]["pair_count"] == 1 and "pairs" not in new["unstable"][0]
    (dev,) = new["claims"][0]["devices"]
    assert len(dev["pairs"]) == 1 and [s["pairs"][0]["ratio"] for s in dev["statuses"]] == [1.5, 1.3]
    assert dev["statuses"][1] == {"run": "1" * 12, "status": "HOLDS", "pairs": [
        {"pair": 0, "status": "HOLDS", "ratio": 1.3, "ratio_low": 1.2, "ratio_high": 1.4,
         "interval": "95 % bootstrap", "device": "gpu"}]}
    assert new["machines"][0]["differs"][0]["others"] == [
        {"value": "6.9", "machines": 2, "examples": [b, c]},
        {"value": "7.0", "machines": 1, "examples": ["d" * 16]}]


def test_many_machines_of_one_model_are_compared_in_bounded_entries():
    runs = [_run(i, machine=i, facts=_facts(driver_version=f"5{i % 3}0.0", gpu_name=H100)) for i in range(40)]
    got = machines.machines(runs)
    assert all(m["same_model_machines"] == 39 for m in got)
    for m in got:
        (d,) = m["differs"]
        assert sorted(o["machines"] for o in d["others"]) in ([13, 13], [13, 14])
        assert all(1 <= len(o["examples"]) <= machines.EXAMPLES for o in d["others"])


def _many(n_runs: int):
    """A store of n_runs runs on their own machines, each measuring one number (its value varying)."""
    runs = [_run(i, machine=i, day=i % 18, facts=_facts(driver_version=f"5{i % 3}0.0", gpu_name=H100))
            for i in range(n_runs)]
    rows = [(_digest(i), _row(1.0 + 0.01 * (i % 7), 0.99, 1.1)) for i in range(n_runs)]
    return Store(runs, rows)


def test_the_page_stays_bounded_while_ledger_json_keeps_every_run():
    small, big = (views.document(_many(k), BUILD) for k in (60, 200))  # both past every cap
    assert len(big["runs"]) == 200 and len(big["numbers"][0]["measurements"]) == 200
    page_small, page_big = views.html(small), views.html(big)
    assert len(page_big) < 1.05 * len(page_small)
    assert page_big.count('<tr id="run-') == views.RUNS_MAX and "The latest 50 of 200 runs" in page_big
    assert page_big.count('<section class="machine"') == views.MACHINES_MAX
    assert "510.0 on 67 machines (" in page_big  # another driver on the other machines of its model
    assert "and 190 more in ledger.json" in page_big  # the number's H100 measurements past the latest 10
    pg = views.page(big)["numbers"]["n1"]["models"][0]
    assert (pg["runs"], len(pg["latest"]), pg["more"]) == (200, views.LATEST, 190)
    # the plot draws the 200 runs as one box: a few dozen elements, as many as for 20 runs drawn as a box
    (n,) = big["numbers"]
    d = plots.data(n)
    assert d["points"]["original"] == [] and len(d["boxes"]["original"]) == 1
    assert len(plots.render(d, "p")) < 2 * len(plots.number_svg(small["numbers"][0], "p"))


class Cache:
    def __init__(self):
        self.kept: dict[str, str] = {}

    def plots(self, keys):
        return {k: self.kept[k] for k in keys if k in self.kept}

    def keep_plots(self, used):
        self.kept = dict(used)


def test_a_plot_is_rendered_again_only_when_what_it_draws_changed(tmp_path, monkeypatch):
    cache, rendered = Cache(), []
    real = plots.render
    monkeypatch.setattr(plots, "render", lambda d, prefix: (rendered.append(prefix), real(d, prefix))[1])
    st = _store_with_everything()
    doc = views.document(st, BUILD)
    views.write(doc, tmp_path / "a", cache)
    assert len(rendered) == 1 and len(cache.kept) == 1
    first = (tmp_path / "a" / "index.html").read_text()
    rendered.clear()
    views.write(views.document(st, BUILD), tmp_path / "b", cache)
    assert rendered == [] and (tmp_path / "b" / "index.html").read_text().count("<svg") == 1
    assert views.html(doc) == first  # the cached plot is the plot drawn again
    # a run more of that number: its plot is drawn again, and the old one pruned
    rendered.clear()
    before = set(cache.kept)
    runs, rows = list(st._runs), list(st._rows)
    runs.append(_run(50, machine=7))
    rows.append((_digest(50), _row(1.2, 1.1, 1.3)))
    views.write(views.document(Store(runs, rows, st._claims), BUILD), tmp_path / "c", cache)
    assert len(rendered) == 1 and len(cache.kept) == 1 and set(cache.kept) != before


def test_write_validates_the_ends_of_long_lists_at_every_depth():
    doc = {"a": list(range(100)), "b": [{"c": list(range(41))}], "d": list(range(40))}
    cut = views.sampled(doc)
    assert cut["a"] == list(range(20)) + list(range(80, 100)) and cut["d"] == list(range(40))
    assert cut["b"][0]["c"] == list(range(20)) + list(range(21, 41))
    assert doc["a"] == list(range(100))  # the document itself is not cut
