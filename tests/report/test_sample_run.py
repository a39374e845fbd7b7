"""docs/sample-run, docs/readme-run (the README command's run on a fresh clone) and docs/gpu-run (the
first GPU session's runs, rendered on that machine) stay current: re-rendering their stored results
(and the data snapshot each holds, kit-data/) with today's templates and analysis gives exactly the
committed report (Markdown, JSON and HTML).

When this fails after a deliberate change to the report, regenerate the sample with
`python reproduce.py report docs/sample-run/<run>` and commit the result (README, "Sample run").
"""

import shutil
from pathlib import Path

import pytest

from reprokit import results
from reprokit.report import report

DOCS = Path(__file__).resolve().parents[2] / "docs"
SAMPLES = sorted(DOCS.glob("sample-run/*/run.json")) + sorted(DOCS.glob("readme-run/*/run.json")) + \
    sorted(DOCS.glob("gpu-run/*/run.json"))


@pytest.mark.parametrize("run_json", SAMPLES, ids=[p.parent.name for p in SAMPLES])
def test_sample_report_is_current(run_json, tmp_path):
    src = run_json.parent
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    report.render(results.RunDir(dst))  # judged with the data the run holds (kit-data/), as `report` does
    for name in ("report.md", "report.json", "report.html"):
        fresh, committed = (dst / name).read_text(), (src / name).read_text()
        assert fresh == committed, (
            f"{src.relative_to(DOCS.parent)}/{name} is stale: re-render it with "
            f"`python reproduce.py report {src.relative_to(DOCS.parent)}` and commit"
        )


def test_there_is_a_sample():
    assert any("sample-run" in str(p) for p in SAMPLES), "docs/sample-run holds no run"
    assert any("readme-run" in str(p) for p in SAMPLES), "docs/readme-run holds no run"
    assert sum("gpu-run" in str(p) for p in SAMPLES) == 6, \
        "docs/gpu-run should hold the 5 GPU runs and the legacy run judged again (report --rejudge)"


def test_a_report_does_not_depend_on_string_hashing(tmp_path):
    """The same run renders the same under two hash seeds (a tie between two reasons of a table was
    broken by a set's order, which follows PYTHONHASHSEED: docs/gpu-run's stacked-lstm-2019 report
    came out differently from one process to the next)."""
    import os
    import subprocess
    import sys

    src = DOCS / "gpu-run" / "20261126T180107Z-stacked-lstm-2019"
    out = []
    for seed in ("1", "2"):
        dst = tmp_path / seed / src.name
        shutil.copytree(src, dst)
        p = subprocess.run([sys.executable, str(DOCS.parent / "reproduce.py"), "report", str(dst)],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONHASHSEED": seed})
        assert p.returncode == 0, p.stderr
        out.append((dst / "report.md").read_text())
    assert out[0] == out[1]


def test_the_time_limited_readme_run_decides_what_the_three_hour_run_decided():
    """The README command with --time-limit 15m (docs/readme-run/20261127T095252Z, 13 of 37 cells
    measured once, for context) gives every published number and claim the status the 3.4-hour run of
    every cell in 3 processes gave (docs/readme-run/20261126T205102Z): on a CPU nothing of legacy-2017
    depends on a measurement."""
    import json

    runs = sorted((DOCS / "readme-run").glob("*/report.json"))
    old, new = (json.loads(p.read_text()) for p in runs)
    assert "--time-limit" in new["run"]["argv"] and new["plan"]["time_limit_s"] == 900 and new["plan"]["left"]
    verdicts = [{n["id"]: n["verdict"] for n in r["numbers"]} for r in (old, new)]
    claims = [{c["id"]: c["status"] for c in r["claims"]} for r in (old, new)]
    assert verdicts[0] == verdicts[1] and len(verdicts[0]) == 54
    assert claims[0] == claims[1] and len(claims[0]) == 15


def test_the_h100_report_says_why_each_number_is_context(tmp_path):
    """The stored H100 run's 003 report once said "18 with no FLOP model or device peak";
    12 of the 18 have both, and are context because the RTX 2080 Ti's and the H100's peaks are further
    apart than the policy allows. Each reason is now counted under its own words."""
    import json

    src = DOCS / "gpu-run" / "20261126T180107Z-stacked-lstm-2019"
    rows = json.loads((src / "report.json").read_text())["numbers"]
    kept = [r for r in rows if r["verdict"] == "NOT_COMPARABLE"
            and (r.get("analysis") or {}).get("efficiency_is_context")]
    assert kept
    text = (src / "report.md").read_text()
    assert f"{len(kept)} kept as context: the two devices' peaks are more than 1.5x apart" in text
    assert f"{len(kept) + 6} with no FLOP model" not in text
    # the other 6 have no efficiency because the source's JIT defect leaves the FLOP model without the
    # work it describes (its own reason); they were once counted as having no FLOP model or peak
    first = text.split("\n## ")[1]
    causes = {}
    for r in rows:
        if r["verdict"] == "NOT_COMPARABLE":
            causes[r["analysis"]["cause"]] = causes.get(r["analysis"]["cause"], 0) + 1
    assert causes["whose FLOP model does not describe the work its cell did"] == 6
    for cause, n in causes.items():  # every number under its own recorded reason, once
        assert first.count(f"{n} {cause}") == 1, cause
    assert "no FLOP model or device peak" not in first
