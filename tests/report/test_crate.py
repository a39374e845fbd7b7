"""A run as an RO-Crate a reviewer verifies offline (reprokit/crate/, docs/CRATE.md).

The round trip with real parts: a smoke run made by the CLI with the local runner, exported by the
CLI, verified by the CLI in an empty directory by a copy of the kit that has no reprokit/data at all
(so the data can only come from the crate), tampered (one sample changed, one file removed, the
file truncated, a change made consistent with its checksum) and verified again; the committed
sample run exported, its report re-rendered from the crate byte for byte, and roc-validator (the
Process Run Crate reference validator, installed with the test extra) run on it for real, offline:
no test here needs the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import smoke_run

from reprokit import formats, kitdata, results
from reprokit.catalog import suites
from reprokit.crate import METADATA, profile
from reprokit.errors import UserError
from reprokit.report import report, reproduction

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "docs" / "sample-run").glob("*/run.json"))


def cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reprokit.cli", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd or REPO, env={**os.environ, **(env or {})})


def kit_without_data(where: Path) -> Path:
    """A copy of the kit's code (reprokit/ without reprokit/data, report_templates/, bench/): what a
    reviewer's machine has that is not the checkout's data. Imported first through PYTHONPATH."""
    shutil.copytree(REPO / "reprokit", where / "reprokit",
                    ignore=lambda d, names: [n for n in names if n == "__pycache__"
                                             or (Path(d) == REPO / "reprokit" and n == "data")])
    for part in ("report_templates", "bench"):
        shutil.copytree(REPO / part, where / part, ignore=shutil.ignore_patterns("__pycache__"))
    return where


def rewrite(crate: Path, out: Path, change=None, drop: str | None = None, meta=None) -> Path:
    """A copy of the crate with member `drop` left out, members passed through `change(name, bytes)`
    and the metadata through `meta(dict)`."""
    with zipfile.ZipFile(crate) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == drop:
                continue
            data = src.read(info.filename)
            if change:
                data = change(info.filename, data)
            if meta and info.filename == METADATA:
                data = json.dumps(meta(json.loads(data))).encode()
            dst.writestr(info.filename, data)
    return out


def one_line(p: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


# -- a smoke run, exported ------------------------------------------------------------------------
@pytest.fixture(scope="module", name="smoke")
def smoke_crate(tmp_path_factory):  # also used by test_crate_safety.py
    root = tmp_path_factory.mktemp("crate-smoke")
    run = smoke_run(root / "results")
    crate = root / "smoke.crate.zip"
    p = cli("export", str(run), "-o", str(crate))
    assert p.returncode == 0, p.stderr
    assert crate.is_file()
    return run, crate


def test_verify_in_an_empty_directory_without_the_kits_data(smoke, tmp_path):
    run, crate = smoke
    kit = kit_without_data(tmp_path / "kit")
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    shutil.copy(crate, empty / crate.name)
    env = {"PYTHONPATH": str(kit), "REPROKIT_DATA_CACHE": ""}
    where = subprocess.run([sys.executable, "-c", "import reprokit, reprokit.kitdata as k; "
                            "print(reprokit.__file__); print(k.PACKAGED.is_dir())"], capture_output=True,
                           text=True, cwd=empty, env={**os.environ, **env})
    assert where.stdout.split() == [str(kit / "reprokit" / "__init__.py"), "False"], where
    p = cli("verify", crate.name, cwd=empty, env=env)
    assert p.returncode == 0, p.stderr + p.stdout
    assert "report: re-rendered from the crate's files alone, byte-identical" in p.stdout
    assert "roc-validator process-run-crate-0.5 passed" in p.stdout
    assert sorted(q.name for q in empty.iterdir()) == [crate.name]  # nothing written beside it


def test_report_renders_from_the_crate_alone_byte_identical(smoke, tmp_path):
    run, crate = smoke
    kit = kit_without_data(tmp_path / "kit")
    out = tmp_path / "rendered"
    p = cli("report", str(crate), "--out", str(out), cwd=tmp_path,
            env={"PYTHONPATH": str(kit), "REPROKIT_DATA_CACHE": ""})
    assert p.returncode == 0, p.stderr
    for name in ("report.md", "report.html", "report.json"):
        assert (out / name).read_bytes() == (run / name).read_bytes(), name


def test_the_crate_describes_every_file_and_each_cell_process(smoke):
    run, crate = smoke
    with zipfile.ZipFile(crate) as z:
        meta = json.loads(z.read(METADATA))
        names = set(z.namelist())
    by_id = {e["@id"]: e for e in meta["@graph"]}
    run_files = {f"run/{p.relative_to(run).as_posix()}" for p in run.rglob("*") if p.is_file()
                 and not any(part.startswith(".") for part in p.relative_to(run).parts)}
    assert run_files <= names
    assert "kit-data/suites/smoke.yaml" in names and "kit-data/stacks.yaml" in names
    for rel in run_files:
        assert by_id[rel]["sha256"] and by_id[rel]["contentSize"]
    actions = [e for e in meta["@graph"] if e["@type"] == "CreateAction" and e["@id"].startswith("#cell-")]
    assert len(actions) == len(list((run / "cells").glob("*.json"))) == 2
    lstm = by_id["#cell-smoke__pytorch__nn_lstm__b8-s5-h32"]
    assert lstm["object"] == {"@id": "run/jobs/torch-0.1.json"}
    assert {"@id": "run/cells/smoke__pytorch__nn_lstm__b8-s5-h32.json"} in lstm["result"]
    assert lstm["actionStatus"]["@id"].endswith("CompletedActionStatus") and lstm["startTime"]
    stack = by_id[lstm["instrument"]["@id"]]
    assert stack["@type"] == "SoftwareApplication"
    cell = json.loads((run / "cells" / "smoke__pytorch__nn_lstm__b8-s5-h32.json").read_text())
    needs = stack["softwareRequirements"]  # the interpreter and packages, with their versions
    needs = {(by_id[n["@id"]]["name"], by_id[n["@id"]].get("softwareVersion"))
             for n in (needs if isinstance(needs, list) else [needs])}
    assert ("Python", cell["stack_fingerprint"]["python"]["version"]) in needs
    for req in (cell.get("environment") or {}).get("chosen", {}).get("requirements") or []:
        assert tuple(req.split("==")) in needs, (req, needs)
    assert by_id["./"]["conformsTo"] == {"@id": "https://w3id.org/ro/wfrun/process/0.5"}
    assert by_id["#kit-run"]["description"].startswith("the kit that made the run: reprokit ")
    assert by_id["#kit-run"].get("identifier", "git:").startswith("git:")  # none outside a checkout
    assert "host" in by_id["#host"]["name"]


def test_one_sample_changed_fails_with_one_line_naming_the_file(smoke, tmp_path):
    _, crate = smoke
    target = "run/cells/smoke__python__matmul__n24.json"

    def change(name, data):
        if name != target:
            return data
        doc = json.loads(data)
        doc["metrics"]["matmul_time"]["samples"][0] *= 1.5
        return json.dumps(doc, indent=1).encode()

    bad = rewrite(crate, tmp_path / "tampered.zip", change=change)
    p = cli("verify", str(bad))
    assert p.returncode == 1, p.stderr
    line = one_line(p)
    assert target in line and ("sha256 differs" in line or "bytes, the crate records" in line), line


def test_the_crate_states_its_format_and_a_newer_one_is_one_line(smoke, tmp_path):
    _, crate = smoke
    with zipfile.ZipFile(crate) as z:
        root = next(e for e in json.loads(z.read(METADATA))["@graph"] if e["@id"] == "./")
    assert root["version"] == str(formats.version("crate"))

    def newer(meta):
        for e in meta["@graph"]:
            if e["@id"] == "./":
                e["version"] = str(formats.version("crate") + 1)
        return meta

    p = cli("verify", str(rewrite(crate, tmp_path / "newer.zip", meta=newer)))
    assert p.returncode == 2, p.stderr
    line = one_line(p)
    assert f"format version {formats.version('crate') + 1}, written by a newer kit" in line, line


def test_a_change_made_consistent_with_its_checksum_fails_at_the_report(smoke, tmp_path):
    _, crate = smoke
    target = "run/cells/smoke__python__matmul__n24.json"
    new = {}

    def change(name, data):
        if name != target:
            return data
        doc = json.loads(data)
        doc["metrics"]["matmul_time"]["samples"] = [2 * s for s in doc["metrics"]["matmul_time"]["samples"]]
        new["bytes"] = json.dumps(doc, indent=1).encode()
        return new["bytes"]

    def meta(doc):
        import hashlib
        for e in doc["@graph"]:
            if e["@id"] == target:
                e["sha256"] = hashlib.sha256(new["bytes"]).hexdigest()
                e["contentSize"] = str(len(new["bytes"]))
        return doc

    bad = rewrite(crate, tmp_path / "consistent.zip", change=change, meta=meta)
    p = cli("verify", str(bad))
    assert p.returncode == 1, p.stderr
    assert "the report re-rendered from the crate differs from the crate's: report." in one_line(p)


def test_one_file_missing_fails_with_one_line_naming_it(smoke, tmp_path):
    _, crate = smoke
    gone = "run/logs/smoke__python__matmul__n24.log"
    p = cli("verify", str(rewrite(crate, tmp_path / "incomplete.zip", drop=gone)))
    assert p.returncode == 1, p.stderr
    line = one_line(p)
    assert gone in line and "missing" in line, line


def test_a_truncated_crate_fails_with_exit_1(smoke, tmp_path):
    _, crate = smoke
    cut = tmp_path / "truncated.zip"
    cut.write_bytes(crate.read_bytes()[: crate.stat().st_size // 2])
    p = cli("verify", str(cut))
    assert p.returncode == 1, p.stderr
    assert "truncated or damaged" in one_line(p)


@pytest.mark.parametrize("what", ["text", "zip without metadata"])
def test_a_file_that_is_not_a_crate_is_exit_2(tmp_path, what):
    f = tmp_path / "thing.zip"
    if what == "text":
        f.write_text("not a crate\n")
    else:
        with zipfile.ZipFile(f, "w") as z:
            z.writestr("run/run.json", "{}")
    p = cli("verify", str(f))
    assert p.returncode == 2, p.stderr
    assert "is not an RO-Crate" in one_line(p)


def test_export_refuses_a_report_older_than_its_results(smoke, tmp_path):
    run, _ = smoke
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    md = copy / "report.md"
    md.write_text(md.read_text() + "edited by hand\n")
    p = cli("export", str(copy), "-o", str(tmp_path / "x.zip"))
    assert p.returncode == 2, p.stderr
    assert "report.md differs" in one_line(p) and "reproduce.py report" in p.stderr
    assert not (tmp_path / "x.zip").exists()


# -- the committed sample run -----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("run_json", SAMPLES, ids=[p.parent.name for p in SAMPLES])
def test_the_sample_run_exports_and_verifies_with_roc_validator(run_json, tmp_path):
    run = tmp_path / run_json.parent.name
    shutil.copytree(run_json.parent, run)
    # today's rendering (tests/report/test_sample_run.py holds the committed one to it)
    report.render(results.RunDir(run))
    crate = tmp_path / "sample.crate.zip"
    p = cli("export", str(run), "-o", str(crate))
    assert p.returncode == 0, p.stderr
    # verified by the CLI in an empty directory, by a copy of the kit without reprokit/data
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    shutil.copy(crate, empty / crate.name)
    p = cli("verify", crate.name, cwd=empty,
            env={"PYTHONPATH": str(kit_without_data(tmp_path / "kit")), "REPROKIT_DATA_CACHE": ""})
    assert p.returncode == 0, p.stderr + p.stdout
    assert "report: re-rendered from the crate's files alone, byte-identical" in p.stdout
    roc = profile.roc_validator(crate)  # the real validator, offline: roc-validator is in the test extra
    assert roc is not None, "roc-validator is not installed: pip install -e '.[test]'"
    assert roc["failures"] == [], roc["failures"]
    out = tmp_path / "from-crate"
    p = cli("report", str(crate), "--out", str(out))
    assert p.returncode == 0, p.stderr
    for name in ("report.md", "report.html", "report.json"):
        assert (out / name).read_bytes() == (run / name).read_bytes(), name
    with zipfile.ZipFile(crate) as z:
        names = set(z.namelist())
    for rel in ("published/000.yaml", "sources.yaml", "claims.yaml", "peaks.yaml", "cpus.yaml",
                "standins.yaml", "flops.yaml", "verdict_policy.yaml", "suites/legacy-2017.yaml"):
        assert f"kit-data/{rel}" in names, rel


# -- pieces -------------------------------------------------------------------------------------------
def test_kit_checks_name_a_broken_action():
    meta = {"@context": "https://w3id.org/ro/crate/1.1/context", "@graph": [
        {"@id": METADATA, "@type": "CreativeWork", "about": {"@id": "./"},
         "conformsTo": {"@id": "https://w3id.org/ro/crate/1.1"}},
        {"@id": "./", "@type": "Dataset", "name": "n", "description": "d", "datePublished": "2026-01-01",
         "conformsTo": {"@id": "https://w3id.org/ro/wfrun/process/0.5"}, "mentions": {"@id": "#a"}},
        {"@id": "#a", "@type": "CreateAction", "instrument": {"@id": "#gone"},
         "actionStatus": {"@id": "http://schema.org/FailedActionStatus"}, "startTime": "yesterday"}]}
    out = profile.own_checks(meta)
    assert "action #a instrument #gone is not an entity of the crate" in out
    assert "action #a startTime 'yesterday' is not an ISO 8601 time" in out
    assert "action #a failed but has no error" in out
    meta["@graph"][2].update(instrument={"@id": "./"}, startTime="2026-01-01T00:00:00Z", error="boom")
    assert profile.own_checks(meta) == []


def test_a_snapshot_is_read_alone_and_the_kits_data_is_untouched(tmp_path):
    real = suites.load_sources()
    (tmp_path / "suites").mkdir()
    shutil.copy(kitdata.PACKAGED / "suites" / "smoke.yaml", tmp_path / "suites" / "smoke.yaml")
    reads: list[str] = []
    with kitdata.using(kitdata.KitData(tmp_path, reads)):
        assert suites.suite_names() == ["smoke"]
        with pytest.raises(UserError, match="sources.yaml is missing from the data snapshot"):
            suites.load_sources()
    assert reads == ["sources.yaml"]
    assert suites.load_sources() is real and "legacy-2017" in suites.suite_names()


@pytest.mark.parametrize("stack, hw, want", [
    ({"same": True}, {"same_model": True, "same_class": True}, ("original", "original")),
    ({"same": False}, {"same_model": False, "same_class": True}, ("substitute", "same class")),
    ({"same": False}, {"same_model": None, "same_class": False}, ("substitute", "other class")),
    (None, None, (None, None)),
])
def test_reproduction_kind(stack, hw, want):
    k = reproduction.kind({"stack": stack, "hardware": hw}, measured=True)
    assert (k["stack"], k["hardware"]) == want
    assert k["acm"] == "replication" and k["code"] == "kit"  # every workload is the kit's own code
    assert reproduction.kind({"stack": stack, "hardware": hw}, measured=False) is None


def test_the_report_shows_the_kind_beside_the_verdict():
    run = SAMPLES[0].parent
    rows = json.loads((run / "report.json").read_text())["numbers"]
    measured = [r for r in rows if r["measured"] is not None]
    assert measured and all(r["reproduction"]["acm"] == "replication" for r in measured)
    assert all(r["reproduction"] is None for r in rows if r["measured"] is None)
    md = (run / "report.md").read_text()
    assert f"| {measured[0]['verdict']} | {measured[0]['reproduction']['label']} |" in md
    assert "| verdict | kind (ACM) | reason |" in md


# -- a run in a container: the image tied to its actions by ID, checked against the engine's store --
@pytest.mark.docker
@pytest.mark.slow
def test_a_docker_run_exported_with_its_image_names_it_by_id_and_verifies(smoke_image, tmp_path):
    env = {"REPROKIT_IMAGE_LOCK": os.environ["REPROKIT_IMAGE_LOCK"]}  # set by the image_lock fixture
    p = cli("run", "--suite", "smoke", "--runner", "docker", "--quick", "--cells", "smoke/python/*",
            "--results", str(tmp_path / "results"), env=env)
    assert p.returncode == 0, p.stderr
    (run,) = [d for d in (tmp_path / "results").iterdir() if (d / "run.json").exists()]
    crate = tmp_path / "docker.crate.zip"
    p = cli("export", str(run), "-o", str(crate), "--with-images", env=env)
    assert p.returncode == 0, p.stderr
    with zipfile.ZipFile(crate) as z:
        meta = json.loads(z.read(METADATA))
        by_id = {e["@id"]: e for e in meta["@graph"]}
        manifest = json.loads(tarfile.open(fileobj=z.open("images/images.tar")).extractfile(
            "reprokit-archive.json").read())
    act = by_id["#cell-smoke__python__matmul__n24"]
    image = by_id[act["containerImage"]["@id"]]
    assert image["@type"] == "ContainerImage"
    assert "sha256:" + image["sha256"] == smoke_image["image_id"]
    assert act["object"]["@id"].startswith("run/jobs/smoke-python")  # the job file that asked for it
    assert image["subjectOf"] == {"@id": "images/images.tar"}
    assert "https://w3id.org/ro/terms/workflow-run/context" in meta["@context"]
    assert [im["image_id"] for im in manifest["images"]] == [smoke_image["image_id"]]
    p = cli("verify", str(crate))
    assert p.returncode == 0, p.stderr
    assert "images: images/images.tar holds 1 image(s), every one the actions name" in p.stdout, p.stdout
    assert f"sha256:{image['sha256'][:12]}: in the local store" in p.stdout, p.stdout


def test_with_images_refuses_a_run_without_containers(smoke, tmp_path):
    run, _ = smoke
    p = cli("export", str(run), "-o", str(tmp_path / "x.zip"), "--with-images")
    assert p.returncode == 2, p.stderr
    assert "no cell of" in one_line(p) and "ran in a container image" in p.stderr


def test_a_data_file_against_its_schema_even_with_its_checksum_rewritten(smoke, tmp_path):
    import hashlib

    _, crate = smoke
    target, new = "kit-data/verdict_policy.yaml", b"schema_version: 1\nefficiency: 3\n"

    def meta(doc):
        for e in doc["@graph"]:
            if e["@id"] == target:
                e["sha256"], e["contentSize"] = hashlib.sha256(new).hexdigest(), str(len(new))
        return doc

    bad = rewrite(crate, tmp_path / "data.zip", change=lambda n, d: new if n == target else d, meta=meta)
    p = cli("verify", str(bad))
    assert p.returncode == 1, p.stderr
    assert one_line(p).startswith(f"reproduce.py: error: {target} does not follow the verdict_policy schema")


def test_report_from_a_crate_with_a_file_missing_writes_nothing(smoke, tmp_path):
    _, crate = smoke
    gone = "run/cells/smoke__python__matmul__n24.json"
    bad = rewrite(crate, tmp_path / "incomplete.zip", drop=gone)
    p = cli("report", str(bad), "--out", str(tmp_path / "out"))
    assert p.returncode == 1, p.stderr
    assert gone in one_line(p)
    assert not (tmp_path / "out").exists()
