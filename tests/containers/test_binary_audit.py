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
