"""The sources' claims (data/claims.yaml) and their checker."""

from pathlib import Path

import pytest

from reprokit import results, suites
from reprokit.analysis import claims, stats

RUNS = Path(__file__).resolve().parent / "data" / "runs"


def run_obs(name):
    rd = results.RunDir(RUNS / name)
    return claims.observations_from_cells(rd.load_cells(), rd.load_run())


def by_id(res):
    return {r["id"]: r for r in res}


def test_claims_file_validates_and_names_real_cells():
    doc = claims.load_claims()
    published_cells = {n["cell"] for n in suites.all_sources_published()}
    ids = [c["id"] for c in doc["claims"]]
    assert len(ids) == len(set(ids))
    for c in doc["claims"]:
        assert c["text"] and c["reference"]
        for better, worse in claims._pairs_of(c):
            for side in (better, worse):
                assert side["cell"] in published_cells, (c["id"], side["cell"])


def test_every_000_table_column_and_001_claim_has_an_entry():
    doc = claims.load_claims()
    ids = {c["id"] for c in doc["claims"]}
    for s, h in (("30", "512"), ("30", "1024"), ("100", "512"), ("100", "1024")):
        for col in ("train", "forward", "compile"):
            assert f"c000-{col}-s{s}-h{h}" in ids
    assert {"c001-train-by-gpu", "c001-eval-by-gpu", "c001-titanx-fastest-eval"} <= ids


def test_table_claims_agree_with_the_published_tables():
    obs = claims.observations_from_published(suites.all_sources_published())
    res = claims.check_claims(obs)
    for r in res:
        if r["origin"] == "table":
            assert r["status"] == "HOLDS", (r["id"], r["reason"])
    got = by_id(res)
    assert got["c001-titanx-fastest-eval"]["status"] == "HOLDS"
    assert got["c004-cudnn-2x-basic"]["status"] == "HOLDS"
    # the source's own tables contradict this prose claim (seed_workloads.md 4.3 item 2)
    assert got["c003-jit-beats-cudnn"]["status"] == "REVERSED"


def test_claims_on_stored_run_hold_reverse_inconclusive():
    got = by_id(claims.check_claims(run_obs("m40-same"), sources=["000"]))
    assert got["c000-compile-s30-h512"]["status"] == "HOLDS"  # single samples, > 10 % apart
    assert got["c000-train-s30-h512"]["status"] == "REVERSED"  # fused measured slower than basic
    assert got["c000-forward-s30-h512"]["status"] == "INCONCLUSIVE"  # fused vs basic overlap
    rev = next(p for p in got["c000-train-s30-h512"]["pairs"] if p["status"] == "REVERSED")
    assert "fused_lstm" in rev["better"] and "basic_lstm" in rev["worse"] and rev["speedup"][1] < 1
    assert got["c000-train-s30-h1024"]["status"] == "NOT_RUN"
    assert "no observation" in got["c000-train-s30-h1024"]["reason"]


def test_gpu_qualified_claims_need_those_gpus():
    got = by_id(claims.check_claims(run_obs("cpu-a"), sources=["001"]))
    for cid in ("c001-train-by-gpu", "c001-eval-by-gpu", "c001-titanx-fastest-eval"):
        assert got[cid]["status"] == "NOT_RUN"
    assert "Tesla P100-SXM2-16GB" in got["c001-train-by-gpu"]["reason"]


def obs(cell, median, spread=0.01, unit="words/s", n=30):
    xs = [median * (1 + spread * ((i % 7) - 3) / 3) for i in range(n)]
    return {
        "cell_id": cell,
        "metric": "m",
        "unit": unit,
        "device": "gpu",
        "hw": None,
        "label": "test",
        "exact": False,
        "summary": stats.summarize(xs),
        "origin": "test",
    }


@pytest.mark.parametrize(
    "a,b,status",
    [
        (210, 100, "HOLDS"),  # 2.1x claimed 2.0x +- 10 %
        (150, 100, "DIFFERS"),  # faster, but far from 2x
        (80, 100, "REVERSED"),  # slower
        (220, 100, "INCONCLUSIVE"),  # interval crosses the upper edge 2.2
    ],
)
def test_ratio_claims(a, b, status):
    claim = {
        "id": "c999-test",
        "source": "999",
        "kind": "ratio",
        "origin": "prose",
        "text": "t",
        "reference": "r",
        "metric": "m",
        "better": "A",
        "worse": "B",
        "ratio": 2.0,
    }
    r = claims.check_claim(claim, [obs("A", a), obs("B", b)])
    assert r["status"] == status, r["reason"]
    assert r["claimed_range"] == pytest.approx([1.8, 2.2])


def test_time_units_compare_in_the_right_direction():
    claim = {
        "id": "c999-t",
        "source": "999",
        "kind": "order",
        "origin": "table",
        "text": "t",
        "reference": "r",
        "metric": "m",
        "order": ["A", "B"],
    }
    fast = obs("A", 10.0, unit="ms")
    slow = obs("B", 0.02, unit="s")  # 20 ms: converted before comparing
    assert claims.check_claim(claim, [fast, slow])["status"] == "HOLDS"
    assert claims.check_claim(claim, [obs("A", 30.0, unit="ms"), slow])["status"] == "REVERSED"
