"""Formats that last: every stored run of every version loads into the model and renders; a document of
a newer version is refused in one line; the steps between versions are the only place an old shape is
known (reprokit/formats/)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import files, formats
from reprokit.errors import UserError
from reprokit.formats import run as run_format
from reprokit.formats.chain import Format
from reprokit.reader.load import load
from reprokit.reader.status import Skip, Stop
from reprokit.report import report

REPO = Path(__file__).resolve().parents[2]
# every run the repository keeps: the oldest sample run, the README runs, the calibration runs, the
# H100 runs, the synthetic test runs; each with the version its run.json was stamped with
STORED = sorted(p.parent for p in [*REPO.glob("docs/**/run.json"), *REPO.glob("tests/data/runs/*/run.json")])


def _stamped(rundir: Path) -> int:
    return json.loads((rundir / "run.json").read_text())["schema_version"]


def test_the_stored_runs_cover_every_version_kits_stamped():
    """Kits before versions were stamped wrote 1 for every era of the run record; the current version
    has a fixture of its own (a smoke run this kit wrote)."""
    stamped = {_stamped(d) for d in STORED}
    assert stamped == {1, formats.version("run")}, stamped


@pytest.mark.parametrize("rundir", STORED, ids=[str(p.relative_to(REPO)) for p in STORED])
def test_every_stored_run_loads_upgraded(rundir):
    run = load(rundir)
    assert run.doc["schema_version"] == formats.version("run")
    assert run.results and all(c.doc["schema_version"] == formats.version("cell_result")
                               for c in run.results.values())
    assert {e.cell_id for e in run.entries} >= set(run.results)
    # the stored files are only read
    assert _stamped(rundir) in (1, formats.version("run"))


UNREPORTED = [d for d in STORED if not (d / "report.md").exists()]


@pytest.mark.slow
@pytest.mark.parametrize("rundir", UNREPORTED, ids=[str(p.relative_to(REPO)) for p in UNREPORTED])
def test_every_stored_run_renders(rundir, tmp_path):
    """Both templates render every stored run: those without a committed report here (the committed
    reports are held to today's rendering byte for byte by tests/report/test_sample_run.py)."""
    copy = tmp_path / rundir.name
    shutil.copytree(rundir, copy)
    from reprokit import results

    paths = report.render(results.RunDir(copy))
    assert [p.name for p in paths] == ["report.md", "report.html", "report.json"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_a_newer_run_is_one_line_naming_both_versions(tmp_path):
    src = REPO / "tests" / "data" / "runs" / "cpu-a"
    run = tmp_path / "cpu-a"
    shutil.copytree(src, run)
    doc = json.loads((run / "run.json").read_text())
    newer = formats.version("run") + 1
    (run / "run.json").write_text(json.dumps({**doc, "schema_version": newer, "a_field_of_the_future": 1}))
    p = subprocess.run([sys.executable, "-m", "reprokit.cli", "report", str(run)], capture_output=True,
                       text=True, cwd=REPO, timeout=300)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"format version {newer}" in p.stderr and f"versions 1 to {newer - 1}" in p.stderr
    assert not (run / "report.md").exists()


def test_a_newer_cell_result_is_listed_invalid_with_both_versions(tmp_path):
    src = REPO / "tests" / "data" / "runs" / "cpu-a"
    run = tmp_path / "cpu-a"
    shutil.copytree(src, run)
    victim = sorted((run / "cells").glob("*.json"))[0]
    doc = json.loads(victim.read_text())
    victim.write_text(json.dumps({**doc, "schema_version": formats.version("cell_result") + 1}))
    loaded = load(run)
    (entry,) = [e for e in loaded.entries if e.status == "invalid"]
    assert "written by a newer kit" in entry.reason and doc["cell_id"] == entry.cell_id


def test_an_upgrade_leaves_the_stored_document_alone():
    doc = json.loads((REPO / "tests" / "data" / "runs" / "m40-same" / "run.json").read_text())
    before = json.dumps(doc, sort_keys=True)
    up = formats.upgrade("run", doc, "run.json")
    assert json.dumps(doc, sort_keys=True) == before and up["schema_version"] == formats.version("run")
    assert formats.upgrade("run", up, "run.json") == up  # the current version is read as it is


def test_read_json_upgrades_then_validates(tmp_path):
    doc = json.loads((REPO / "tests" / "data" / "runs" / "m40-same" / "run.json").read_text())
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc))
    assert files.read_json(p, "run")["schema_version"] == formats.version("run")
    p.write_text(json.dumps({**doc, "schema_version": 99}))
    with pytest.raises(UserError, match="format version 99, written by a newer kit"):
        files.read_json(p, "run")


# -- the steps -------------------------------------------------------------------------------------
SENTENCES = [
    Skip("planned", limit_s=900.0, needs_s=312.0),
    Skip("planned", limit_s=600.0),
    Skip("before_start", limit_s=900.0, left_s=41.0, needs_s=300.0),
    Skip("before_start", limit_s=90.0, left_s=0.0),
    Skip("while_running", left_s=120.0, needs_s=1200.0, ran_s=121.0),
]


@pytest.mark.parametrize("skip", SENTENCES, ids=[s.when for s in SENTENCES])
def test_an_old_time_limit_sentence_reads_back_as_its_skip(skip):
    """The kits of versions 4 and 5 wrote only the sentence; today's words are made from the record,
    so reading the old sentence back gives a record whose words are the sentence again."""
    back = Skip.from_doc(run_format.skip_from_reason(skip.reason()))
    assert back.reason() == skip.reason()
    assert back.when == skip.when and back.needs_s == skip.needs_s


def test_a_merged_cells_sentence_reads_back_too():
    text = "process 2 of 3: " + SENTENCES[2].reason()
    assert Skip.from_doc(run_format.skip_from_reason(text)) == SENTENCES[2]
    assert run_format.skip_from_reason("preflight: no GPU") is None


@pytest.mark.parametrize("stop", [Stop("decided", 3), Stop("cap", 6, ("003-L1 overlaps", "c003-x")),
                                  Stop("time_limit", 2)], ids=["decided", "cap", "time_limit"])
def test_an_old_stop_sentence_reads_back_as_its_stop(stop):
    assert Stop.from_doc(run_format.stop_from_text(stop.text())) == stop


def test_the_step_to_6_structures_what_it_can_and_keeps_the_rest():
    doc = {"schema_version": 1, "design": {"processes": 3, "cells": {"a": {"processes": 6, "stopped":
           Stop("decided", 4).text()}}},
           "slurm": {"options": {"exclusive": False}, "jobs": [{"job_id": "1", "sbatch": ["--exclusive"]},
                                                                {"job_id": "2"}]},
           "cells": [{"cell_id": "a", "status": "skipped", "reason": SENTENCES[0].reason()},
                     {"cell_id": "b", "status": "skipped", "reason": "preflight: no GPU"}]}
    up = formats.upgrade("run", doc, "x")
    assert up["design"]["kind"] == "fixed"
    assert up["design"]["cells"]["a"]["stop"] == {"by": "decided", "after": 4, "open": []}
    assert [j["exclusive"] for j in up["slurm"]["jobs"]] == [True, False]
    assert up["cells"][0]["skip"]["when"] == "planned" and "skip" not in up["cells"][1]


def test_every_version_has_its_history_and_its_step():
    for fmt in formats.FORMATS.values():
        assert sorted(fmt.history) == list(range(1, fmt.current + 1)), fmt.name
        assert sorted(fmt.steps) == list(range(2, fmt.current + 1)), fmt.name
    with pytest.raises(ValueError, match="need a history line"):
        Format("x", {1: "first", 2: "second"})


def test_a_rejudged_object_becomes_a_chain_of_one():
    """Run version 7: `rejudged` is the list of rejudges, oldest first; the one object of a copy
    written before (the committed rejudged H100 run, stamped 1) is wrapped, not lost."""
    rundir = REPO / "docs" / "gpu-run" / "20261126T175757Z-legacy-2017-rejudged"
    doc = json.loads((rundir / "run.json").read_text())
    assert isinstance(doc["rejudged"], dict)
    up = formats.upgrade("run", doc, "run.json")
    assert up["schema_version"] == formats.version("run") and up["rejudged"] == [doc["rejudged"]]
    assert formats.upgrade("run", {**doc, "schema_version": 6}, "run.json")["rejudged"] == [doc["rejudged"]]
    run = load(rundir)
    (r,) = run.rejudged
    assert r.copied_from == doc["rejudged"]["from"] and r.had_snapshot


def test_a_run_of_version_7_recorded_no_history_and_says_so():
    """Run version 8: `history` (this host's earlier runs when the run started). A run of version 7 has
    none: upgraded it still has none, and its re-run intervals have no between-run term (not the same
    as a host with no earlier runs, whose history is empty and takes the device class's default)."""
    from reprokit.analysis import run_level

    rundir = REPO / "docs" / "calibration" / "20261127T124512Z-stacked-lstm-2019"
    doc = json.loads((rundir / "run.json").read_text())
    up = formats.upgrade("run", doc, "run.json")
    assert up["schema_version"] == formats.version("run") and "history" not in up
    assert load(rundir).history is None and run_level.term(None, "cpu").basis == "not_recorded"
    assert run_level.term({"runs": [], "cells": {}}, "cpu").basis == "default"
