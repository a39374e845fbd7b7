"""`reproduce.py ledger` (reprokit/ledger/): the committed runs put together, a tampered crate refused,
the store read again without reading any run, nothing private in what it writes, ledger.json against
its schema, the views (claims map, cells, machines, plots) of the real runs, and index.html in a real
headless Chromium.

Inputs (copies under tmp_path; nothing is written into the checkout): docs/sample-run (a CPU run),
the runs of docs/gpu-run (H100), three stacked-lstm-2019 runs of docs/calibration (one AMD Zen 4
machine, two kernels: measured claim ratios, and a history of two earlier runs),
tests/data/runs/smoke-current as a run directory and as the crate `reproduce.py export` makes of it,
and that crate with one sample edited. Host, node and user names are written into the copies' records
(driver host, interpreter paths under /home/<user>) so the privacy check has names to look for besides
the committed `vm` and /root, /tmp paths.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from reprokit import validate
from reprokit.crate import export
from reprokit.ledger import build, claim_map, fields, read, views

REPO = Path(__file__).resolve().parents[2]
SAMPLE = next((REPO / "docs" / "sample-run").glob("*/run.json")).parent
GPU_RUNS = sorted(p.parent for p in (REPO / "docs" / "gpu-run").glob("*/run.json"))
CALIBRATION = [REPO / "docs" / "calibration" / name for name in (
    "20261127T041901Z-stacked-lstm-2019", "20261127T043947Z-stacked-lstm-2019",
    "20261127T102536Z-stacked-lstm-2019")]
ZEN = "AMD Zen 4 (family 25 model 17), 2 cores"
H100 = "NVIDIA H100 80GB HBM3"
H100_UUID = "GPU-6ce85e96-425a-4e9c-25db-c6ee03dbdda4"  # docs/gpu-run's fingerprint
SMOKE = REPO / "tests" / "data" / "runs" / "smoke-current"
SECRETS = ("sample-secret-host", "smoke-secret-host", "alice-secret", "bob-secret")
BOTH = "001-L050"  # PyTorch word LM train_wps: measured on the sample run's CPU and on the H100


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "reproduce.py"), *args], capture_output=True,
                          text=True, timeout=600, cwd=str(REPO), env=os.environ.copy())


def _edit_run(run_dir: Path, host: str | None, user: str) -> None:
    """A host name (None: the one recorded kept) and a home directory written into a run's record,
    where the kit records them."""
    path = run_dir / "run.json"
    doc = json.loads(path.read_text())
    if host:
        doc["driver"] = {**(doc.get("driver") or {"pid": 1, "start_ticks": None}), "host": host}
    doc["host_fingerprint"]["python"]["executable"] = f"/home/{user}/.pyenv/versions/3.11.7/bin/python3"
    path.write_text(json.dumps(doc, indent=1))


def _tampered(crate: Path, out: Path) -> Path:
    """A copy of the crate with one sample of one cell result changed (the zip itself is sound)."""
    done = False
    with zipfile.ZipFile(crate) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if not done and info.filename.startswith("run/cells/") and b'"samples": [' in data:
                i = data.index(b'"samples": [') + len(b'"samples": [')
                j = next(k for k in range(i, len(data)) if data[k:k + 1].isdigit())
                data = data[:j] + (b"7" if data[j:j + 1] != b"7" else b"8") + data[j + 1:]
                done = True
            dst.writestr(info, data)
    assert done
    return out


def _zip_run_digest(crate: Path) -> str:
    """The run digest (read.run_digest) of the run a crate holds, from its members."""
    h = hashlib.sha256()
    with zipfile.ZipFile(crate) as z:
        names = ["run/run.json"] + sorted(
            n for n in z.namelist() if n.startswith("run/cells/") and n.endswith(".json")
            and n.count("/") == 2 and not n.split("/")[-1].startswith("."))
        for n in names:
            data = z.read(n)
            h.update(f"{n.removeprefix('run/')}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    """The inputs and a first build of them by the command line: (root, inputs, out, the process)."""
    from reprokit import results
    from reprokit.report import report

    root = tmp_path_factory.mktemp("ledger")
    inputs = root / "runs"
    runs_cpu, runs_gpu, crates = inputs / "cpu", inputs / "gpu", inputs / "crates"
    shutil.copytree(SAMPLE, runs_cpu / SAMPLE.name)
    _edit_run(runs_cpu / SAMPLE.name, "sample-secret-host", "alice-secret")
    for g in GPU_RUNS:
        shutil.copytree(g, runs_gpu / g.name)
        _edit_run(runs_gpu / g.name, None, "bob-secret")  # their host name `vm` kept
    for c in CALIBRATION:
        shutil.copytree(c, inputs / "calibration" / c.name)
        _edit_run(inputs / "calibration" / c.name, None, "alice-secret")
    smoke = runs_cpu / "smoke-current"
    shutil.copytree(SMOKE, smoke)
    _edit_run(smoke, "smoke-secret-host", "alice-secret")
    report.render(results.RunDir(smoke))  # a crate holds the run's report
    crates.mkdir()
    p = cli("export", str(smoke), "-o", str(crates / "smoke.crate.zip"))
    assert p.returncode == 0, p.stderr
    _tampered(crates / "smoke.crate.zip", crates / "tampered.crate.zip")
    out = root / "out"
    p = cli("ledger", str(inputs), "--out", str(out))
    return root, inputs, out, p


def _doc(out: Path) -> dict:
    return json.loads((out / "ledger.json").read_text())


def test_the_committed_runs_make_one_ledger_and_a_tampered_crate_is_refused_in_one_line(ledger):
    root, inputs, out, p = ledger
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "tampered.crate.zip" in lines[0] and "sha256" in lines[0], p.stderr
    doc = _doc(out)
    b = doc["build"]
    # sample + the gpu-run runs + smoke as a directory + the good crate (the same run) + the tampered
    more = len(GPU_RUNS) + len(CALIBRATION)
    assert b["inputs"] == more + 4 and b["read"] == more + 3 and b["same_run"] == 1
    assert [(r["input"], r["form"]) for r in b["refused"]] == [("crates/tampered.crate.zip", "crate")]
    assert "altered after the export" in b["refused"][0]["reason"]
    assert len(doc["runs"]) == more + 2
    # cpu/ is searched before crates/: the smoke run is stored from its directory, its crate is the same run
    assert {r["form"] for r in doc["runs"]} == {"run directory"}
    # a published number with its CPU and H100 re-measurements side by side
    (n,) = [n for n in doc["numbers"] if n["id"] == BOTH]
    assert n["published"] and n["unit"] == "words/s" and "P100" in n["published_device"]
    assert n["bound"].startswith("at most")  # the roofline bound on the publication's device
    models = {m["device_model"] for m in n["measurements"]}
    assert "NVIDIA H100 80GB HBM3" in models and any("family 6 model 167" in m for m in models)
    h100 = [m for m in n["measurements"] if m["device"] == "gpu"]
    assert all(m["gpu_count"] == 1 and m["ci_low"] <= m["measured"] <= m["ci_high"] for m in h100)
    assert all(m["verdict"] and m["kit_version"] and m["date"] for m in n["measurements"])
    # a claim's status on each device model
    claim = next(c for c in doc["claims"] if len(c["devices"]) >= 2)
    assert all(s["status"] for d in claim["devices"] for s in d["statuses"])


def test_nothing_of_the_tampered_crate_enters_the_store(ledger):
    import sqlite3

    root, inputs, out, _ = ledger
    tampered = inputs / "crates" / "tampered.crate.zip"
    db = sqlite3.connect(out / "ledger.sqlite")
    try:
        digests = {d for (d,) in db.execute("SELECT digest FROM runs")}
        keys = {k for (k,) in db.execute("SELECT key FROM inputs")}
    finally:
        db.close()
    assert _zip_run_digest(tampered) not in digests
    assert _zip_run_digest(inputs / "crates" / "smoke.crate.zip") in digests
    assert "crate:" + export.sha256_file(tampered) not in keys


def test_a_second_build_reads_no_run_and_one_more_run_is_the_only_one_read(ledger, tmp_path, monkeypatch):
    root, inputs, out, _ = ledger
    opened: list[str] = []
    real = read.read
    monkeypatch.setattr(read, "read", lambda item, cache: (opened.append(item.name), real(item, cache))[1])
    again = build.build([inputs], tmp_path / "out", out / "ledger.sqlite")
    assert (again.read, again.same_run) == (0, 0) and again.known == again.inputs - 1
    assert opened == ["crates/tampered.crate.zip"]  # a refused input is checked again, nothing else
    # one run more (and the tampered crate gone): that run is the only input opened
    (inputs / "crates" / "tampered.crate.zip").rename(tmp_path / "tampered.crate.zip")
    try:
        shutil.copytree(REPO / "tests" / "data" / "runs" / "cpu-a", inputs / "cpu" / "cpu-a")
        opened.clear()
        more = build.build([inputs], tmp_path / "out", out / "ledger.sqlite")
        assert opened == ["cpu/cpu-a"] and more.read == 1
        assert more.stored_runs == len(GPU_RUNS) + len(CALIBRATION) + 3
        assert _doc(tmp_path / "out")["build"]["refused"] == []
    finally:
        shutil.rmtree(inputs / "cpu" / "cpu-a", ignore_errors=True)
        (tmp_path / "tampered.crate.zip").rename(inputs / "crates" / "tampered.crate.zip")


def test_no_host_name_user_name_or_absolute_path_reaches_the_views(ledger):
    root, inputs, out, _ = ledger
    for name in ("ledger.json", "index.html"):
        text = (out / name).read_text()
        for secret in (*SECRETS, str(root), "/root", "/home", "/tmp", "/opt/", "/usr/", H100_UUID, "GPU-",
                       "00000000:00:06.0", "c96ab8f8ee7d3be5"):  # a UUID, a PCI address, the host id
            assert secret not in text, (name, secret)
        assert not re.search(r"(?<![\w-])vm(?![\w-])", text), name  # the committed runs' host name
    # the runs' own records do hold them: the check above is not vacuous
    recorded = "".join((p / "run.json").read_text() for p in (inputs / "cpu").iterdir())
    gpu = "".join((p / "run.json").read_text() for p in (inputs / "gpu").iterdir())
    assert all(s in recorded + gpu for s in SECRETS) and "/root/" in recorded and "/tmp/" in gpu
    assert '"host": "vm"' in gpu and H100_UUID in gpu and "00000000:00:06.0" in gpu
    # the machine facts are there, and are facts: the H100's driver, clocks and power limit
    facts = {m["machine"]: m["facts"] for m in _doc(out)["machines"]}
    assert {"580.159.04", 1980, 700.0} <= {v for f in facts.values() for v in f.values()}
    db = (out / "ledger.sqlite").read_bytes()
    assert not any(s.encode() in db for s in (*SECRETS, "/root/", "/home/"))
    machines = {r["machine"] for r in _doc(out)["runs"]}
    assert machines and all(re.fullmatch(r"[0-9a-f]{16}", m) for m in machines)
    host_ids = {json.loads((p / "run.json").read_text())["host_fingerprint"].get("host_id")
                for p in (inputs / "cpu").iterdir()}
    assert not any(h and h in (out / "ledger.json").read_text() for h in host_ids)  # hashed, with a salt


def test_the_views_of_the_committed_runs(ledger):
    """The claims map, the cells, the machines of the real runs: a claim decided on the AMD CPU with its
    measured speed-up, a cell with two earlier runs (its history stated) and none with ten (no
    percentile), a run and its rejudged copy counted once, and the H100 machine's own facts."""
    doc = _doc(ledger[2])
    cols = [(c["class_label"], c["device_model"]) for c in doc["claim_columns"]]
    assert cols[0] == ("GPU", H100) and ("CPU", ZEN) in cols and all(k in ("GPU", "CPU") for k, _ in cols)
    # a claim of the 2019 suite on the AMD CPU: each of the three runs with its measured ratio
    (claim,) = [c for c in doc["claims"] if c["id"] == "c003-order-fine-cpu-forward"]
    (zen,) = [d for d in claim["devices"] if d["device_model"] == ZEN]
    assert zen["device_class"] == "cpu" and len(zen["statuses"]) == len(CALIBRATION)
    measured = [p for s in zen["statuses"] for p in claim_map.pairs_of(zen, s) if p["ratio"] is not None]
    assert len(measured) == len(CALIBRATION)
    assert all(p["ratio_low"] <= p["ratio"] <= p["ratio_high"] and p["published_speedup"] > 1 and
               p["published_on"] and p["device"] == "cpu" and " over " in p["text"] for p in measured)
    assert zen["latest"] and "x [" in zen["latest"] and sum(zen["counts"].values()) == len(CALIBRATION)
    # the cells: three calibration runs of one cell on the AMD CPU
    series = [c for c in doc["cells"] if c["cell"] == "003/pytorch/jit_fine_grained/forward"
              and c["device_model"] == ZEN and c["scale"] == 1]
    assert series and all(c["n_runs"] == len(CALIBRATION) for c in series)
    c = series[0]
    assert c["history"]["stated"] and c["history"]["earlier"] == 2
    assert "earlier runs' intervals" in c["history"]["text"]
    assert c["percentile"]["text"] == "3 runs: fewer than 10, no percentile" and not c["percentile"]["stated"]
    assert c["between_units"]["text"] == "1 unit: no between-unit spread"
    assert c["min"] <= c["median"] <= c["max"]
    assert [r["date"] for r in c["runs"]] == sorted(r["date"] for r in c["runs"])
    # the H100's legacy run and its rejudged copy: one run in a series, two statuses in the map
    word_lm = [c for c in doc["cells"]
               if c["device_model"] == H100 and c["cell"] == "001/pytorch/word_lm/b128-s128-h1024"]
    assert word_lm and all(c["n_runs"] == 1 for c in word_lm)
    assert all(c["history"]["text"] == "fewer than 2 earlier runs (0): no change stated" for c in word_lm)
    # an unstable cell's pairs are runs whose intervals do not overlap
    for u in doc["unstable"]:
        runs = {r["run"]: r for r in doc["cells"][u["index"]]["runs"]}
        disjoint = doc["cells"][u["index"]]["disjoint"]
        pairs = disjoint["pairs"]
        assert u["pair_count"] == disjoint["count"] >= len(pairs) > 0 and u["runs"] == disjoint["runs"]
        assert {r for pair in pairs for r in pair} <= set(u["runs"])
        assert all(runs[a]["ci_high"] < runs[b]["ci_low"] or runs[b]["ci_high"] < runs[a]["ci_low"]
                   for a, b in pairs)
    # the machines: the H100 machine, the sample run's Intel machine, the AMD machine (calibration, smoke)
    by_model = {d["device_model"]: m for m in doc["machines"] for d in m["device_models"]}
    assert len(doc["machines"]) == 3 and {H100, ZEN} <= set(by_model)
    h100 = by_model[H100]["facts"]
    assert (h100["driver_version"], h100["cuda_driver_version"], h100["cudnn"], h100["gpu_name"]) == \
        ("580.159.04", "13.0", "9.19.0", H100)
    assert (h100["gpu_sm_max_mhz"], h100["gpu_mem_max_mhz"], h100["gpu_power_limit_w"],
            h100["cpu_cores"]) == (1980, 2619, 700.0, 16)
    assert h100["os"] == "Ubuntu 24.04.3 LTS" and h100["kernel"] == "6.18.44-fc-v657-gpu"
    assert by_model[ZEN]["facts"]["driver_version"] is None and by_model[ZEN]["facts"]["gpu_count"] == 0
    # the calibration runs ran on two kernels of one machine
    assert {ch["fact"] for ch in by_model[ZEN]["changed"]} == {"kernel"}
    assert all(m["compared"].startswith("No other machine") for m in doc["machines"])  # one of each model
    # the same store draws the same page, plots included, byte for byte (but the build's time)
    from reprokit.ledger import store

    with store.Store(ledger[2] / "ledger.sqlite") as st:  # (another test may have added a run to it)
        first, second = views.document(st, doc["build"]), views.document(st, doc["build"])
    first["built"] = second["built"] = doc["built"]
    assert first == second and views.html(first) == views.html(second)


def test_a_store_whose_records_lack_a_field_still_renders(ledger, tmp_path):
    """A store kept by a kit that recorded fewer fields: what a record lacks reads as null."""
    import sqlite3

    store = tmp_path / "old.sqlite"
    shutil.copy(ledger[2] / "ledger.sqlite", store)
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE rows SET doc = json_remove(doc, '$.bound', '$.precision', '$.scale')")
        db.execute("UPDATE runs SET doc = json_remove(doc, '$.rejudged', '$.stored_report_matches', "
                   "'$.host_facts')")
        db.execute("UPDATE claims SET doc = json_remove(doc, '$.checked')")
    db.close()
    done = build.build([tmp_path / "none"], tmp_path / "out", store)
    doc = _doc(tmp_path / "out")
    assert done.stored_runs == len(doc["runs"]) > 0 and validate.errors("ledger", doc) == []
    assert all(n["bound"] is None for n in doc["numbers"])
    # no facts recorded: every fact null; the claims' pairs not known, their class the run's device kind
    assert all(v is None for m in doc["machines"] for k, v in m["facts"].items() if k != "gpu_count")
    assert all(s["pairs"] == [] for c in doc["claims"] for d in c["devices"] for s in d["statuses"])
    assert {d["device_class"] for c in doc["claims"] for d in c["devices"]} == {"cpu", "gpu"}
    assert doc["cells"] and "<svg" in (tmp_path / "out" / "index.html").read_text()


def test_a_store_of_version_1_is_read_again_from_its_inputs_with_its_salt(ledger, tmp_path):
    """Version 1 kept crates' numbers as their own reports said them: its step drops the records, keeps
    the salt, and the next build reads every input again."""
    import sqlite3

    root, inputs, out, _ = ledger
    old = tmp_path / "v1.sqlite"
    shutil.copy(out / "ledger.sqlite", old)
    db = sqlite3.connect(old)
    with db:
        db.execute("PRAGMA user_version = 1")
        salt = db.execute("SELECT value FROM meta WHERE key = 'salt'").fetchone()[0]
    db.close()
    done = build.build([inputs], tmp_path / "out", old)
    assert done.known == 0 and done.read == done.inputs - len(done.refused) > 0
    db = sqlite3.connect(old)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
        assert db.execute("SELECT value FROM meta WHERE key = 'salt'").fetchone()[0] == salt
    finally:
        db.close()
    machines = {r["machine"] for r in _doc(tmp_path / "out")["runs"]}
    assert machines <= {r["machine"] for r in _doc(out)["runs"]}  # the same salt: the same hashed ids


def test_ledger_json_follows_its_schema_and_the_schema_is_strict(ledger):
    doc = _doc(ledger[2])
    assert validate.errors("ledger", doc) == []
    assert validate.errors("ledger", {**doc, "host": "x"})
    bad = json.loads(json.dumps(doc))
    bad["runs"][0]["hostname"] = "x"
    assert validate.errors("ledger", bad)


def test_the_page_escapes_what_it_shows():
    hostile = "<script>x</script>"
    facts = {k: None for k in fields.HOST_FACTS} | {"cpu_model": hostile}
    doc = {"runs": [{"digest": "0" * 12, "started": "2026-11-29T00:00:00Z", "rejudged": False, "run_id": "r",
                     "suite": hostile, "kit_version": "0", "kit_commit": None, "devices": {}, "gpu_count": 0,
                     "machine": None, "form": "crate", "report": "r"}],
           "kit_version": "0", "built": "now", "rules": views.RULES,
           "claim_columns": [{"device_class": "gpu", "class_label": "GPU", "device_model": "<b>gpu</b>"}],
           "claims": [{"id": "c", "source": "0", "text": hostile, "devices": [
               {"device_class": "gpu", "device_model": "<b>gpu</b>", "counts": {"HOLDS": 1},
                "summary": "HOLDS x1", "latest": hostile,
                "pairs": [{"better_cell": hostile, "worse_cell": "w", "published_speedup": 1.5,
                           "published_on": [hostile]}],
                "statuses": [{"run": "0" * 12, "status": "HOLDS", "pairs": [
                    {"pair": 0, "status": hostile, "ratio": 1.2, "ratio_low": 1.1, "ratio_high": 1.3,
                     "interval": "95 %", "device": "gpu"}]}]}]}],
           "cells": [], "unstable": [],
           "machines": [{"machine": "0" * 16, "device_models": [], "runs": [], "first": None, "last": None,
                         "facts": facts, "changed": [], "same_model_machines": 0, "differs": [],
                         "compared": hostile}],
           "build": {"inputs": 1, "read": 0, "known": 0, "same_run": 0,
                     "refused": [{"input": "<script>x</script>", "form": "crate", "reason": "<img src=x>"}]},
           "numbers": [{"id": "n<b>", "source": "0", "table": "t", "row_label": "<script>alert(1)</script>",
                        "metric": "m", "published": 1.0, "unit": "s", "published_device": "d",
                        "bound": "<b>at most</b>",
                        "measurements": [{"run": "0" * 12, "run_id": "r", "rejudged": True,
                                          "kit_version": "0", "date": "d", "machine": None,
                                          "device": "cpu", "device_model": "<i>cpu</i>", "gpu_count": 0,
                                          "units": [], "cell": "c", "stack": "s", "stack_kind": "original",
                                          "hardware": "h", "precision": None, "measured": 1.0, "ci_low": None,
                                          "ci_high": None, "ci_label": "none", "measured_unit": "s", "n": 1,
                                          "verdict": "V"}]}]}
    page = views.html(doc)
    assert page.count("<svg") == 1  # the number's plot, its labels escaped by the serialiser
    assert "<script" not in page and "<img" not in page and "<i>" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x&gt;" in page
    assert "None" not in page  # a value not recorded is a dash


def test_nothing_left_is_exit_1_and_a_missing_folder_is_exit_2(ledger, tmp_path):
    root, inputs, _, _ = ledger
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(inputs / "crates" / "tampered.crate.zip", only)
    p = cli("ledger", str(only), "--out", str(tmp_path / "out"))
    assert p.returncode == 1, p.stderr
    assert sum(ln.startswith("ledger: refused") for ln in p.stderr.splitlines()) == 1
    assert _doc(tmp_path / "out")["runs"] == [] and len(_doc(tmp_path / "out")["build"]["refused"]) == 1
    # the good crate on its own: verified, stored from the crate, its numbers computed again from its samples
    shutil.copy(inputs / "crates" / "smoke.crate.zip", only)
    p = cli("ledger", str(only), "--out", str(tmp_path / "out"))
    refusals = [ln for ln in p.stderr.splitlines() if ln.startswith("ledger: refused")]
    assert p.returncode == 0 and len(refusals) == 1, p.stderr
    (run,) = _doc(tmp_path / "out")["runs"]
    assert (run["form"], run["report"], run["suite"]) == ("crate", "recomputed from the samples", "smoke")
    p = cli("ledger", str(tmp_path / "nope"), "--out", str(tmp_path / "out2"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "does not exist" in p.stderr
    assert not (tmp_path / "out2").exists()
    # a --store that is not a ledger's store, or one of a newer kit: one line, exit 2, nothing written
    import sqlite3

    (tmp_path / "notes.txt").write_text("not a database")
    newer = tmp_path / "newer.sqlite"
    db = sqlite3.connect(newer)
    db.execute("PRAGMA user_version = 99")
    db.close()
    for store, said in ((tmp_path / "notes.txt", "not an SQLite file"), (newer, "format version 99")):
        p = cli("ledger", str(only), "--out", str(tmp_path / "out3"), "--store", str(store))
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and said in p.stderr, p.stderr
    assert (tmp_path / "notes.txt").read_text() == "not a database" and not (tmp_path / "out3").exists()


@pytest.mark.browser
def test_the_page_in_a_real_browser(ledger, tmp_path):
    """index.html in headless Chromium (tests/report/test_browser.py's browser and helpers): it loads
    without errors, fetches nothing but itself, and shows the summary, the runs, the number measured
    on a CPU and on the H100 side by side, and a claim's statuses by device model."""
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright Python package is missing")
    from playwright.sync_api import sync_playwright
    from report.test_browser import ARGS, CHROMIUM, open_report, visible_box

    page_file = ledger[2] / "index.html"
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(tmp_path / "profile"), executable_path=str(CHROMIUM),
                                                   headless=True, args=ARGS,
                                                   viewport={"width": 1280, "height": 900})
        try:
            page, errors, page_errors, requests = open_report(ctx, page_file.as_uri())
            assert errors == [] and page_errors == []
            assert requests == [page_file.as_uri()], requests  # self-contained: nothing else is fetched
            assert page.evaluate("document.querySelectorAll('script, img, iframe, link').length") == 0
            assert visible_box(page, "#summary") and visible_box(page, "table.runs")
            assert "1 refused" in page.inner_text("#summary")
            assert "crates/tampered.crate.zip" in page.inner_text("table.refused")
            row = page.inner_text(f"#n-{BOTH} table.measurements")
            assert "NVIDIA H100 80GB HBM3" in row and "family 6 model 167" in row and "IMPLAUSIBLE" in row
            assert visible_box(page, f"#n-{BOTH} table.measurements")
            # the claims map: rows of claims, columns of device models under their class
            assert page.locator("table.claims-map tr[id^='c-']").count() >= 15
            head = page.inner_text("table.claims-map tr:first-child") + page.inner_text(
                "table.claims-map tr:nth-child(2)")
            assert "GPU" in head and "CPU" in head and "NVIDIA H100 80GB HBM3" in head and ZEN in head
            claim = page.inner_text("#c-c003-order-fine-cpu-forward")
            assert "latest run" in claim and "x [" in claim and "published" in claim
            # a plot in a number's section, drawn inline
            assert visible_box(page, f"#n-{BOTH} svg")
            assert page.locator("section.number svg").count() == page.locator("section.number").count()
            # the cells, the machines
            assert visible_box(page, "table.cells") and "no change stated" in page.inner_text("table.cells")
            assert page.locator("section.machine table.machine-facts").count() == 3
            assert any("580.159.04" in t for t in page.locator("section.machine").all_inner_texts())
            page.screenshot(path=str(tmp_path / "ledger.png"), full_page=True)
            assert (tmp_path / "ledger.png").stat().st_size > 10_000
        finally:
            ctx.close()


def test_inputs_are_named_without_the_folders_given(tmp_path):
    """An input's name in ledger.json is its path under the folder given (a home folder's name is a
    user name): `x`, or `DIR<k>/x` when several folders were given."""
    home = tmp_path / "home" / "alice-secret"
    (home / "runs" / "r1").mkdir(parents=True)
    (home / "runs" / "r1" / "run.json").write_text("{}")
    (home / "runs" / "r1" / "cells").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "c.zip").write_bytes(b"PK")
    assert [(i.name, i.form) for i in read.find([home])] == [("runs/r1", "run directory")]
    assert [i.name for i in read.find([home, tmp_path / "other"])] == ["DIR1/runs/r1", "DIR2/c.zip"]
    assert [i.name for i in read.find([home / "runs" / "r1"])] == ["."]


def test_machines_of_one_host_name_but_other_hardware_are_not_one_machine():
    """Every machine of the project is named `vm`, so the fingerprint's host id (a hash of the name)
    is the same on the H100 machine and the CPU machines: the ledger's machine id adds the hardware."""
    from reprokit.ledger.fields import unit_id
    from reprokit.probes.fingerprint import machine_identity

    def fp(cpu, gpus=()):
        return {"host_id": "same", "cpu": cpu, "gpus": list(gpus)}

    zen = {"vendor": "AuthenticAMD", "family": "25", "model": "17", "model_name": "AMD EPYC",
           "logical_cores": 2}
    xeon = {"vendor": "GenuineIntel", "family": "6", "model": "207", "model_name": "Xeon",
            "logical_cores": 16}
    salt = b"s"
    zen_id = unit_id(salt, machine_identity(fp(zen)))
    assert zen_id != unit_id(salt, machine_identity(fp(xeon, [{"uuid": "GPU-1"}])))
    assert zen_id == unit_id(salt, machine_identity(fp(dict(zen))))
