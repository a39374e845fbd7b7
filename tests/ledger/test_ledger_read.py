"""How the ledger checks a crate (reprokit/ledger/read.py): the checks of `verify` that bear on the
numbers, with report.json computed again in place of the HTML rendering; what many crates share checked
once per process; new inputs read by several processes give the same ledger as one.

Inputs: tests/data/runs/smoke-current, copied three times with different host fingerprints (three runs
of one kit, one data snapshot), each exported to a crate by the real `reproduce.py export`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from reprokit import validate
from reprokit.crate import checks as crate_checks
from reprokit.ledger import build, read
from tests.ledger.test_ledger import SMOKE, cli


@pytest.fixture(scope="module")
def crates(tmp_path_factory) -> list[Path]:
    from reprokit import results
    from reprokit.report import report

    root = tmp_path_factory.mktemp("ledger-read")
    out = []
    for k in range(3):
        run = root / "runs" / f"smoke-{k}"
        shutil.copytree(SMOKE, run)
        doc = json.loads((run / "run.json").read_text())
        doc["host_fingerprint"]["host_id"] = hashlib.sha256(f"machine-{k}".encode()).hexdigest()[:16]
        (run / "run.json").write_text(json.dumps(doc, indent=1))
        report.render(results.RunDir(run))
        crate = root / "crates" / f"smoke-{k}.crate.zip"
        crate.parent.mkdir(exist_ok=True)
        p = cli("export", str(run), "-o", str(crate))
        assert p.returncode == 0, p.stderr
        out.append(crate)
    return out


def _rewritten(crate: Path, out: Path, member: str, edit) -> Path:
    """A copy of `crate` with `member` changed by `edit` (bytes -> bytes) and its sha256 and size in the
    metadata changed with it: every checksum agrees, the content does not follow from the samples."""
    with zipfile.ZipFile(crate) as src:
        members = {i.filename: (i, src.read(i.filename)) for i in src.infolist()}
    info, data = members[member]
    new = edit(data)
    assert new != data
    meta_info, meta_data = members["ro-crate-metadata.json"]
    meta = json.loads(meta_data)
    rel = member
    (entity,) = [e for e in meta["@graph"] if e.get("@id") == rel]
    entity["sha256"] = hashlib.sha256(new).hexdigest()
    entity["contentSize"] = str(len(new)) if isinstance(entity.get("contentSize"), str) else len(new)
    members[member] = (info, new)
    members["ro-crate-metadata.json"] = (meta_info, json.dumps(meta, indent=1).encode())
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info, data in members.values():
            dst.writestr(info, data)
    return out


def _item(crate: Path) -> read.Input:
    return read.Input(crate, crate.parent, "crate")


def _more_measured(data: bytes) -> bytes:
    doc = json.loads(data)
    status = next(iter(doc["status_counts"]))
    doc["status_counts"][status] += 1  # one cell more measured than the crate's results hold
    return json.dumps(doc, indent=1).encode()


def test_a_report_json_this_kit_exported_altered_with_its_checksums_is_refused(crates, tmp_path):
    forged = _rewritten(crates[0], tmp_path / "forged.crate.zip", "run/report.json", _more_measured)
    with crate_checks.opened(forged, rerender=False) as crate:
        crate_checks.check_files(crate)  # the checksums agree: only the computation can tell
        crate_checks.check_schemas(crate)
    with pytest.raises(read.Refused) as e:
        read.read(_item(forged), read.Cache(tmp_path / "cache"))
    assert ("its report.json differs from the one this kit computes from its run (first in `status_counts`), "
            "and this kit exported it") in str(e.value)
    assert "\n" not in str(e.value)
    got = read.read(_item(crates[0]), read.Cache(tmp_path / "cache2"))  # the original is taken
    assert got.basis == read.RECOMPUTED and got.stored_report_matches is True


def test_another_kit_s_crate_enters_with_its_numbers_computed_again_and_its_own_report_set_beside(
        crates, tmp_path):
    def other_kit(data: bytes) -> bytes:
        meta = json.loads(data)
        (kit,) = [e for e in meta["@graph"] if e.get("@id") == "#kit-export"]
        kit["identifier"] = "git:" + "0" * 40  # exported by another commit of the kit
        return json.dumps(meta, indent=1).encode()

    older = _rewritten(crates[0], tmp_path / "older.crate.zip", "run/report.json", _more_measured)
    with zipfile.ZipFile(older) as z:
        members = {i.filename: (i, z.read(i.filename)) for i in z.infolist()}
    info, meta = members["ro-crate-metadata.json"]
    members["ro-crate-metadata.json"] = (info, other_kit(meta))
    with zipfile.ZipFile(older, "w", zipfile.ZIP_DEFLATED) as dst:
        for info, data in members.values():
            dst.writestr(info, data)
    got = read.read(_item(older), read.Cache(tmp_path / "cache"))
    assert got.stored_report_matches is False and got.basis == read.RECOMPUTED
    with zipfile.ZipFile(older) as z:
        stored = json.loads(z.read("run/report.json"))
    assert got.context["status_counts"] != stored["status_counts"]  # the numbers are this kit's


def test_a_data_file_found_valid_is_not_validated_again_but_a_changed_one_is(crates, tmp_path,
                                                                            monkeypatch):
    checked: list[str] = []
    real = validate.errors
    monkeypatch.setattr(validate, "errors",
                        lambda schema, doc: (checked.append(schema), real(schema, doc))[1])
    cache = read.Cache(tmp_path / "cache")
    read.read(_item(crates[0]), cache)
    first = list(checked)
    assert "run" in first and "cell_result" in first and len(first) > 10
    checked.clear()
    read.read(_item(crates[1]), cache)
    # the second run's data snapshot is the first's: only its own run.json (another fingerprint) is new
    assert checked and "run" in checked and len(checked) < len(first) / 2, (first, checked)
    assert len(cache.snapshots) == 1
    # a data file changed (with its checksums) is validated again and refused by its schema
    forged = _rewritten(crates[2], tmp_path / "bad-data.crate.zip", "kit-data/sources.yaml",
                        lambda d: d + b"\nnot_a_key_the_schema_allows: 1\n")
    with pytest.raises(read.Refused) as e:
        read.read(_item(forged), cache)
    assert "kit-data/sources.yaml does not follow the sources schema" in str(e.value)


def test_several_processes_build_the_ledger_one_process_builds(crates, tmp_path):
    from reprokit.ledger import store

    with store.Store(tmp_path / "one.sqlite"):  # an empty store: its salt made
        pass
    shutil.copyfile(tmp_path / "one.sqlite", tmp_path / "two.sqlite")  # the same salt: the same hashed ids
    one = build.build([crates[0].parent], tmp_path / "one", tmp_path / "one.sqlite", jobs=1)
    two = build.build([crates[0].parent], tmp_path / "two", tmp_path / "two.sqlite", jobs=2)
    assert one.read == two.read == 3 and not one.refused and not two.refused

    def doc(out: Path) -> dict:
        d = json.loads((out / "ledger.json").read_text())
        d.pop("built")
        return d

    assert doc(tmp_path / "one") == doc(tmp_path / "two")
    assert len({r["machine"] for r in doc(tmp_path / "two")["runs"]}) == 3
