"""The design by role's sequential cells, in a real run of the local runner on this CPU:
the two PyTorch cells of one of source 003's CPU claim pairs decide, so each runs 3 to 6 processes,
looked at after each from the third, and stops once the pair is decided (or at 6, undecided, saying
what it would need). Whatever the noise does, the record must agree with itself: the processes the
design says, the process files and the merged result, the claim's status and the reason."""

from __future__ import annotations

import json

from reprokit import cli
from reprokit.reader.status import Stop

CELLS = ["003/pytorch/jit_static/forward", "003/pytorch/eager_static/forward"]


def test_a_deciding_pair_runs_until_it_is_decided(tmp_path, capsys):
    code = cli.main(["run", "--suite", "stacked-lstm-2019", "--cells", *CELLS, "--quick", "--runner", "local",
                     "--device", "cpu", "--results", str(tmp_path)])
    assert code == 0
    (rd,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    run = json.loads((rd / "run.json").read_text())
    d = run["design"]
    assert d["kind"] == "auto" and "2 deciding cell(s) in 3 to 6 processes" in d["text"]
    assert "of 17 claims can be decided" in d["judgment"] and "2 of the 2 cells decide" in d["judgment"]
    report = json.loads((rd / "report.json").read_text())
    (claim,) = [c for c in report["claims"] if c["id"] == "c003-jit-no-gain-on-cpu"]
    (pair,) = [p for p in claim["pairs"] if p["better_cell"] == CELLS[0]]
    for cid in CELLS:
        e = d["cells"][cid]
        assert e["sequential"] and e["first_look"] == 3 and e["confidence"] == 1 - 0.05 / 4
        k = e["processes"]
        stop = Stop.from_doc(e["stop"])  # the run.json records why it stopped as data
        assert 3 <= k <= 6 and stop.after == k
        files = sorted(p.name for p in (rd / "cells").glob(cid.replace("/", "__") + ".p*.json"))
        assert len(files) == k, files
        merged = json.loads((rd / "cells" / (cid.replace("/", "__") + ".json")).read_text())
        assert merged["status"] == "ok" and len(merged["processes"]) == k
        if k < 6:  # stopped early: only because what it feeds was decided
            assert stop.by == "decided" and stop.text().startswith(f"decided after {k} processes")
            assert pair["status"] in ("HOLDS", "REVERSED", "DIFFERS")
        elif pair["status"] == "INCONCLUSIVE":
            assert stop.by == "cap" and any("would need" in x for x in stop.open)
            assert stop.text().startswith("undecided after 6 processes")
    # the claim was decided on the per-look confidence, and says so
    decided = pair["status"] in ("HOLDS", "REVERSED", "DIFFERS")
    assert "98.75 % hierarchical bootstrap" in pair["speedup_interval"]["label"] or not decided
    err = capsys.readouterr().err
    assert "2 of the 2 cells decide" in err
