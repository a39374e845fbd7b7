"""What a run can decide before it runs (reprokit/analysis/decidability.py): the verdict and
claim rules applied to the plan's devices give each number and claim its decidability, and each cell
its role. Counts come from the data, never typed in."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.analysis import decidability, devices, roofline
from reprokit.catalog import suites

# the host of a committed CPU run (docs/calibration): a 2-core AMD Zen 4 VM, no GPU
CPU_HOST = json.loads((Path(__file__).resolve().parents[2] / "docs" / "calibration"
                       / "20261127T041901Z-stacked-lstm-2019" / "run.json").read_text())["host_fingerprint"]


def _gpu_host(name: str) -> dict:
    return {**CPU_HOST, "gpus": [{"index": 0, "name": name, "uuid": "GPU-0"}]}


def _cells(name: str) -> tuple:
    s = suites.load_suite(name)
    return s, [c for c in s.cells if c.implemented]


def test_on_a_cpu_nothing_of_legacy_2017_decides_and_every_cell_is_context():
    s, cells = _cells("legacy-2017")
    d = decidability.judge(s, cells, "cpu", CPU_HOST)
    numbers = suites.published_for_suite(s)
    impossible = [n for n in numbers
                  if (roofline.bound(n, devices.publication_device(n)) or {}).get("tier") == "IMPLAUSIBLE"]
    assert impossible, "source 001's published rates exceed their devices' bounds"
    cans = [n["can"] for n in d["numbers"]]
    assert len(cans) == len(numbers) and cans.count("impossible") == len(impossible)
    assert cans.count("other_class") == len(numbers) - len(impossible)  # all GPU-published
    assert all(c["can"] == "other_class" for c in d["claims"]) and d["claims"]
    assert {r["role"] for r in d["cells"].values()} == {"context"} and len(d["cells"]) == len(cells)
    assert d["text"].startswith(f"on this CPU 0 of {len(numbers)} numbers and 0 of {len(d['claims'])} "
                                "claims can be decided")
    assert f"the {len(cells)} cells are measured for context" in d["text"]


def test_on_a_cpu_the_cpu_claims_of_003_decide_and_their_cells_do_too():
    s, cells = _cells("stacked-lstm-2019")
    d = decidability.judge(s, cells, "cpu", CPU_HOST)
    deciding = [c for c in d["claims"] if c["can"] == "decides"]
    assert deciding and all("cpu" in c["claim_id"] or "tf-graph" in c["claim_id"] or "eager" in c["claim_id"]
                            or "pytorch" in c["claim_id"] for c in deciding)
    assert not any(c["claim_id"].endswith("gpu-train") for c in deciding)  # GPU claims: other class
    roles = d["cells"]
    fed = {side for c in deciding for p in c["pairs"] if p["can"] == "decides"
           for side in (p["better"], p["worse"])}
    assert fed and {cid for cid, r in roles.items() if r["role"] == "decides"} == fed & set(roles)
    # the CPU rows (a 6-core Haswell) are context: the two CPUs' peaks are further apart than the policy
    cpu_rows = [n for n in d["numbers"] if n["can"] == "context"]
    assert cpu_rows and all("apart" in n["why"] or "FLOP model" in n["why"] for n in cpu_rows)


def test_on_the_published_gpu_its_numbers_decide_and_on_another_gpu_only_claims_do():
    s, cells = _cells("stacked-lstm-2019")
    same = decidability.judge(s, cells, "gpu", _gpu_host("NVIDIA GeForce RTX 2080 Ti"))
    gpu_rows = [n for n in same["numbers"] if n["can"] == "decides"]
    assert gpu_rows and all("same device model" in n["why"] for n in gpu_rows)
    other = decidability.judge(s, cells, "gpu", _gpu_host("NVIDIA H100 80GB HBM3"))
    assert not [n for n in other["numbers"] if n["can"] == "decides" and "same device model" in n["why"]]
    gpu_claims = [c for c in other["claims"] if c["can"] == "decides" and "gpu" in c["claim_id"]]
    assert gpu_claims, "a GPU claim compares two cells on one GPU: testable on any GPU"
    assert "on this GPU (NVIDIA H100 80GB HBM3)" in other["text"]


def test_a_number_whose_cell_is_not_planned_says_so():
    s, cells = _cells("legacy-2017")
    d = decidability.judge(s, [c for c in cells if c.source == "001"], "gpu", _gpu_host("Tesla M40 24GB"))
    theano = [n for n in d["numbers"] if n["cell"] and n["cell"].startswith("000/theano/fastlstm")]
    assert theano and all(n["can"] == "not_planned" and "not part of this run" in n["why"] for n in theano)
    assert set(d["cells"]) == {c.id for c in cells if c.source == "001"}  # roles for the planned cells only


def test_on_the_stored_h100_the_003_pytorch_claims_decide_and_its_numbers_are_context():
    """The first GPU run's host (docs/gpu-run, one H100): the report said none of 003's 126 numbers can be
    tested there, and that holds (the RTX 2080 Ti's and the H100's peaks are further apart than the
    policy allows), but the source's own GPU claims compare two cells on one GPU: they decide."""
    gpu_run = Path(__file__).resolve().parents[2] / "docs" / "gpu-run" / "20261126T180107Z-stacked-lstm-2019"
    host = json.loads((gpu_run / "run.json").read_text())["host_fingerprint"]
    s, cells = _cells("stacked-lstm-2019")
    torch = [c for c in cells if c.id.startswith("003/pytorch/")]
    d = decidability.judge(s, torch, "gpu", host)
    assert not [n for n in d["numbers"] if n["can"] == "decides"]
    assert all("apart" in n["why"] or "FLOP model" in n["why"] for n in d["numbers"] if n["can"] == "context")
    deciding = {c["claim_id"] for c in d["claims"] if c["can"] == "decides"}
    assert deciding and all("cpu" not in c for c in deciding)
    assert d["text"].startswith("on this GPU (NVIDIA H100 80GB HBM3) 0 of ")
    assert any(r["role"] == "decides" for r in d["cells"].values())
