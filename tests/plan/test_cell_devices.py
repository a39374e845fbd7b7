"""Published numbers of one source map to cells consistently across its frameworks.

The device a cell needs comes from the hardware of the numbers mapped to it (reprokit/catalog/suites.py),
never from the workload: numbers published on one GPU run on the run's device (a CPU run measures them as
context), numbers on N >= 2 GPUs need N GPUs, numbers published on a CPU run on the CPU.
"""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from reprokit.catalog import suites
from reprokit.errors import UserError
from reprokit.plan import plan, preflight

SUITES = [s for s in suites.suite_names() if suites.load_suite(s).sources]


def numbers_by_cell(suite):
    out = defaultdict(list)
    for n in suites.published_for_suite(suite):
        if n["cell"]:
            out[n["cell"]].append(n)
    return out


@pytest.mark.parametrize("name", SUITES)
def test_every_cell_needs_what_its_numbers_hardware_says(name):
    suite = suites.load_suite(name)
    cells = {c.id: c for c in suite.cells}
    for cell_id, nums in numbers_by_cell(suite).items():
        c = cells[cell_id]
        hw = {suites.publication_hardware(n) for n in nums}
        gpus = {count for kind, count in hw if kind == "gpu"}
        if max(gpus, default=0) >= 2:
            assert c.needs_gpus == max(gpus) and c.device is None, cell_id
        elif hw == {("cpu", 1)}:
            assert c.needs_gpus == 0 and c.device == "cpu", cell_id
        else:
            assert c.needs_gpus == 0 and c.device is None, cell_id
        if "gpus" in c.params:  # a workload's own device count must say the same as the numbers
            assert c.params["gpus"] == (0 if hw == {("cpu", 1)} else max(gpus)), cell_id


def test_one_gpu_numbers_are_treated_alike_across_sources_and_frameworks():
    """000/001 (Theano, TensorFlow, PyTorch), 002 (Keras-MXNet, Keras-TF), 003 and 004 (TensorFlow and
    PyTorch): every number published on one GPU maps to a cell a CPU run measures."""
    seen = defaultdict(set)
    for name in SUITES:
        suite = suites.load_suite(name)
        cells = {c.id: c for c in suite.cells}
        for cell_id, nums in numbers_by_cell(suite).items():
            for n in nums:
                if suites.publication_hardware(n) == ("gpu", 1):
                    c = cells[cell_id]
                    seen[(n["provenance"]["source"], c.framework)].add((c.needs_gpus, c.device))
    one_gpu = {n["provenance"]["source"] for name in SUITES
               for n in suites.published_for_suite(suites.load_suite(name))
               if n["cell"] and suites.publication_hardware(n) == ("gpu", 1)}
    assert {k[0] for k in seen} == one_gpu and len(one_gpu) >= 5  # every source with such numbers
    assert ("004", "tensorflow") in seen and ("002", "keras-mxnet") in seen
    assert all(v == {(0, None)} for v in seen.values()), dict(seen)


CPU_HOST = {"cpu": {"model_name": "x86-64 test CPU", "logical_cpus": 2}, "gpus": [], "nvidia": {}}


@pytest.mark.parametrize("name", ["cudnn-lstm-2018", "keras-mxnet-2018"])
def test_on_a_cpu_host_only_multi_gpu_numbers_are_skipped(name):
    suite = suites.load_suite(name)
    verdicts = preflight.cell_verdicts(suite.cells, CPU_HOST, "local")
    nums = numbers_by_cell(suite)
    for c in suite.cells:
        multi = any(suites.publication_hardware(n)[1] >= 2 for n in nums.get(c.id, []))
        if multi:
            assert not verdicts[c.id]["runnable"], c.id
        else:
            gpu_checks = [x for x in verdicts[c.id]["checks"] if "gpu" in x["name"].lower()]
            assert all(x["ok"] for x in gpu_checks), (c.id, verdicts[c.id])


def test_a_cpu_published_cell_runs_on_the_cpu_in_a_gpu_run(tmp_path):
    suite = suites.load_suite("keras-mxnet-2018")
    cpu_cell = suite.cell("002/keras-mxnet/lstm128-unroll/synthetic-b128-g0")
    gpu_cell = suite.cell("002/keras-mxnet/lstm128-unroll/synthetic-b128-g1")
    opts = plan.Options(device="gpu")
    assert plan.job_cell(cpu_cell, suite, opts)["device"] == "cpu"
    assert "device" not in plan.job_cell(gpu_cell, suite, opts)
    assert cpu_cell.gpus_on("gpu") == 0 and gpu_cell.gpus_on("gpu") == 1 and gpu_cell.gpus_on("cpu") == 0
    four = suite.cell("002/keras-mxnet/lstm128-unroll/synthetic-b128-g4")
    assert four.gpus_on("gpu") == 4


def test_numbers_on_different_hardware_in_one_cell_are_a_data_error(monkeypatch):
    nums = [{"cell": "x/1", "environment": {"gpu": "2x Tesla P40"}},
            {"cell": "x/1", "environment": {"gpu": "Tesla P40"}}]
    monkeypatch.setattr(suites, "load_published", lambda src: tuple(nums))
    cell = suites.Cell(id="x/1", source="x", stack="s", framework="f", workload="w", variant=None,
                       params={}, metrics=("m",))
    with pytest.raises(UserError, match="one cell cannot measure them all"):
        suites._hardware_from_numbers("s", ["x"], [cell])


def test_job_schema_accepts_the_cell_device():
    schema = json.loads((Path(suites.__file__).parents[1] / "schemas" / "job.schema.json").read_text())
    assert schema["properties"]["cells"]["items"]["properties"]["device"]["enum"] == ["cpu", "gpu"]
