"""compat.yaml's `binaries:` facts against the audit that read them (reprokit/data/binary_audit.json,
written by `reproduce.py audit-binaries`): every audited binary is evidence V, cites the audit, and
says what it found; every binary with a `fetch` has been audited."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit import validate
from reprokit.plan.compat import load_compat

REPO = Path(__file__).resolve().parents[2]
AUDIT = REPO / "reprokit" / "data" / "binary_audit.json"


def test_every_fetchable_binary_is_audited_and_compat_yaml_says_what_the_audit_found():
    doc = json.loads(AUDIT.read_text())
    assert validate.errors("binary_audit", doc) == []
    binaries = load_compat()["binaries"]
    fetchable = {k for k, v in binaries.items() if v.get("fetch")}
    assert fetchable == set(doc["audits"]), "audit every binary with a fetch: reproduce.py audit-binaries"
    for binary_id, audit in doc["audits"].items():
        entry = binaries[binary_id]
        assert entry["fetch"]["requirement"] == audit["requirement"], binary_id
        assert entry["evidence"] == "V" and "binary_audit.json" in entry["source"], (binary_id, entry)
        assert entry["sass"] == audit["sass"] and entry["ptx"] == audit["ptx"], (binary_id, entry, audit)
        assert "sm_90" in audit["ptx_compile"] or not audit["ptx"], binary_id


def _keep_many(out: str, who: int) -> None:
    from reprokit.commands import audit_binaries

    for i in range(15):
        audit_binaries.keep(Path(out), "images", f"img{who}-{i}:gpu", {
            "image": f"img{who}-{i}", "flavour": "gpu", "wheels": [], "ptx_compile": {}, "passes": {},
            "date": "2026-11-29", "command": "test", "tools": {}})


def test_audits_written_side_by_side_each_keep_their_record(tmp_path):
    """An image's audit and some binaries' may run at once: each record is put into the file as it
    is then (read again under a lock), never into the copy the command read when it started."""
    import multiprocessing

    out = tmp_path / "audit.json"
    procs = [multiprocessing.get_context("spawn").Process(target=_keep_many, args=(str(out), w))
             for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    doc = json.loads(out.read_text())
    assert validate.errors("binary_audit", doc) == [] and len(doc["images"]) == 45
