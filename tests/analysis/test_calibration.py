"""scripts/bench_rerun_coverage.py --calibrate / --design: which runs it makes and what it
reports (the runs themselves are stubbed here: the benchmark takes an hour; its figures are measured with
the real kit on the project's machine)."""

import argparse
import importlib.util
import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tests" / "data" / "runs"


def script():
    path = REPO / "scripts" / "bench_rerun_coverage.py"
    spec = importlib.util.spec_from_file_location("bench_rerun_coverage", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_old_design_asks_for_one_process_and_the_new_for_the_default(tmp_path, monkeypatch):
    mod = script()
    calls = []

    def fake_call(cmd, cwd=None):
        calls.append(cmd)
        d = tmp_path / f"run{len(calls)}"
        shutil.copytree(RUNS / ("cpu-a" if len(calls) % 2 else "cpu-b"), d)
        return 0

    monkeypatch.setattr(mod.subprocess, "call", fake_call)
    res = mod.calibrate(argparse.Namespace(results=str(tmp_path), quick=True))
    assert len(calls) == 8  # 2 designs x 2 suites x 2 runs back to back
    old, new = calls[:4], calls[4:]
    assert all(c[c.index("--repeat") + 1] == "1" for c in old)
    assert all("--repeat" not in c for c in new)
    assert {tuple(c[c.index("--cells") + 1:c.index("--cells") + 3]) for c in old if "legacy-2017" in c} == \
        {("000/pytorch/*", "000/tensorflow/*")}
    assert any("stacked-lstm-2019" in c and "003/pytorch/*" in c for c in new)
    for design in ("old", "new"):
        s = res[design]["summary"]
        assert s["pairs"] == 18 and 0 < s["coverage"] <= 1  # 9 metrics per suite pair, pooled
        assert res[design]["wall_s"] == [2 * 3600.0, 2 * 3600.0]
    json.dumps(res)  # plain data
