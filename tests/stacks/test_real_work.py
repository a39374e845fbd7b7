"""A check that the timed steps did real work (bench/real_work.py, used by
bench/harness.py `measure`). The check's rules on their own, then PyTorch source 000's cell through the
real harness and torch: as it is (both checks pass and are recorded), and patched to skip its backward
pass (torch.Tensor.backward a no-op, installed by a sitecustomize module), which fails its cell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stacks.test_workloads_000 import _cell, _run_cells, assert_training_was_skipped

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import real_work  # noqa: E402  (bench module, stdlib only)


def test_training_must_move_the_weights():
    w = [1.0]
    check = real_work.Check("train", state=lambda: w[0])
    before = check.before()
    w[0] = 1.5
    assert check.check(before, None)["ok"]
    still = real_work.Check("train", state=lambda: 2.0)
    got = still.check(still.before(), None)
    assert not got["ok"] and "the weights did not change" in got["reason"]
    nan = real_work.Check("train", state=lambda: float("nan"))
    assert not nan.check(nan.before(), None)["ok"]
    # weights that were finite and became NaN: the training diverged (Adam at the published lr 1.0
    # did, once, in 003's TensorFlow cuDNN stand-in), which is not "no update was applied"
    diverged = real_work.Check("train", state=lambda: w[0])
    before = diverged.before()
    w[0] = float("nan")
    got = diverged.check(before, None)
    assert not got["ok"] and "became non-finite" in got["reason"] and "diverged" in got["reason"]
    assert "no update was applied" not in got["reason"]


def test_the_last_timed_output_must_match_an_untimed_reference():
    ok = real_work.Check("forward", output=lambda r: r, reference=lambda: 10.0)
    assert ok.check(None, 10.005)["ok"]  # within 1e-3 relative
    stale = ok.check(None, 9.0)
    assert not stale["ok"] and "differs from the untimed reference" in stale["reason"]
    assert not ok.check(None, None)["ok"]  # nothing was returned by the timed steps
    with pytest.raises(ValueError):
        real_work.Check("forward", output=lambda r: r)  # a reference is needed


@pytest.fixture(scope="module")
def torch_cells(tmp_path_factory):
    pytest.importorskip("torch")
    plain = _run_cells(tmp_path_factory.mktemp("plain"), sys.executable,
                       [_cell("000/pytorch/nn_lstm/tiny", "s000_pytorch", "nn_lstm")])
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(
        "import torch\n"
        "torch.Tensor.backward = lambda self, *a, **k: None  # the patch: no backward pass\n")
    skipped = _run_cells(tmp_path_factory.mktemp("skipped"), sys.executable,
                         [_cell("000/pytorch/nn_lstm/tiny", "s000_pytorch", "nn_lstm")],
                         env={"PYTHONPATH": str(site)})
    return plain["000/pytorch/nn_lstm/tiny"], skipped["000/pytorch/nn_lstm/tiny"]


def test_a_real_cell_records_both_checks(torch_cells):
    r, _ = torch_cells
    assert r["status"] == "ok", r.get("reason")
    m = r["metrics"]
    fwd, train = m["forward_time_per_example"]["real_work"], m["train_time_per_example"]["real_work"]
    assert fwd["ok"] and fwd["phase"] == "forward"
    assert fwd["checks"][0]["timed"] == fwd["checks"][0]["reference"]
    assert train["ok"] and train["checks"][0]["before"] != train["checks"][0]["after"]
    json.dumps(r, allow_nan=False)


def test_a_workload_that_skips_its_backward_pass_fails_its_check(torch_cells):
    _, r = torch_cells
    assert_training_was_skipped(r)
