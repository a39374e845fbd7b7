"""A run directory is a complete record: the kit's data its verdicts use is copied into
the run when it starts (kit-data/, sha256 in run.json), and `report RUN` renders from it, byte for
byte, after reprokit/data changed and from a copy of the run moved elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import smoke_run

from reprokit import kitdata

REPO = Path(__file__).resolve().parents[2]
REPORTS = ("report.md", "report.html", "report.json")


def cli(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "reprokit.cli", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd or REPO, env={**os.environ, **(env or {})})


def kit_with_changed_data(where: Path) -> Path:
    """A copy of the kit's code whose reprokit/data differs: the efficiency tolerance, the smoke
    suite's description and source 000's title (which their reports show)."""
    shutil.copytree(REPO / "reprokit", where / "reprokit", ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("report_templates", "bench"):
        shutil.copytree(REPO / part, where / part, ignore=shutil.ignore_patterns("__pycache__"))
    data = where / "reprokit" / "data"
    policy = data / "verdict_policy.yaml"
    text = policy.read_text()
    assert "tolerance: 0.25" in text
    policy.write_text(text.replace("tolerance: 0.25", "tolerance: 0.05"))
    smoke = data / "suites" / "smoke.yaml"
    smoke.write_text(smoke.read_text().replace("description:", "description: CHANGED.", 1))
    sources = data / "sources.yaml"  # source 000's title opens the legacy-2017 report
    text = sources.read_text()
    assert 'title: "rnn-benchmarks:' in text
    sources.write_text(text.replace('title: "rnn-benchmarks:', 'title: "CHANGED rnn-benchmarks:', 1))
    return where


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return smoke_run(tmp_path_factory.mktemp("snapshot") / "results")


def test_a_new_run_holds_the_data_it_started_with(smoke):
    import hashlib


    snap = json.loads((smoke / "run.json").read_text())["data_snapshot"]
    assert snap["dir"] == "kit-data" and "suites/smoke.yaml" in snap["files"]
    assert "verdict_policy.yaml" in snap["files"] and "peaks.yaml" in snap["files"]
    for rel, digest in snap["files"].items():
        raw = (smoke / "kit-data" / rel).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == digest == hashlib.sha256(
            (kitdata.PACKAGED / rel).read_bytes()).hexdigest(), rel


def test_report_is_byte_identical_after_the_kits_data_changed_and_from_a_moved_copy(smoke, tmp_path):
    before = {n: (smoke / n).read_bytes() for n in REPORTS}
    kit = kit_with_changed_data(tmp_path / "kit")
    moved = tmp_path / "elsewhere" / "the-run"
    shutil.copytree(smoke, moved, ignore=shutil.ignore_patterns(".lock"))
    for n in REPORTS:
        (moved / n).unlink()
    env = {"PYTHONPATH": str(kit), "REPROKIT_DATA_CACHE": ""}
    where = subprocess.run([sys.executable, "-c", "import reprokit; print(reprokit.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env={**os.environ, **env})
    assert where.stdout.strip() == str(kit / "reprokit" / "__init__.py")
    p = cli("report", str(moved), cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    for n in REPORTS:
        assert (moved / n).read_bytes() == before[n], n
    # the changed data is what a run without a snapshot would have used: the reports would differ
    run = json.loads((moved / "run.json").read_text())
    del run["data_snapshot"]
    (moved / "run.json").write_text(json.dumps(run))
    p = cli("report", str(moved), cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert (moved / "report.md").read_bytes() != before["report.md"]


def test_an_edited_snapshot_is_one_line_exit_2(smoke, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(smoke, copy, ignore=shutil.ignore_patterns(".lock"))
    f = copy / "kit-data" / "verdict_policy.yaml"
    f.write_text(f.read_text().replace("tolerance: 0.25", "tolerance: 0.5"))
    p = cli("report", str(copy))
    assert p.returncode == 2, p.stderr
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith("reproduce.py:")]
    assert "verdict_policy.yaml is not the file this run recorded" in line


def test_the_committed_sample_renders_from_its_own_data_after_the_kits_changed(tmp_path):
    """The sample run holds the data its report read (tools/snapshot_run_data.py): `report` on a
    copy moved elsewhere, by a kit whose data differs, gives the committed report byte for byte."""
    (src,) = [p.parent for p in (REPO / "docs" / "sample-run").glob("*/run.json")]
    assert json.loads((src / "run.json").read_text())["data_snapshot"]["files"]
    kit = kit_with_changed_data(tmp_path / "kit")
    moved = tmp_path / "elsewhere" / src.name
    shutil.copytree(src, moved)
    p = cli("report", str(moved), cwd=tmp_path, env={"PYTHONPATH": str(kit), "REPROKIT_DATA_CACHE": ""})
    assert p.returncode == 0, p.stderr
    for n in REPORTS:
        assert (moved / n).read_bytes() == (src / n).read_bytes(), n
