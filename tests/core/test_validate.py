"""The two validators of one schema agree: jsonschema_rs's "valid" is jsonschema's (reprokit/validate.py).

Only a document the fast validator finds valid skips jsonschema, so the one disagreement that would
matter is the fast one saying valid where jsonschema finds errors; the other way round (a YAML date,
NaN) costs only time. Both are asked about every committed
document (the kit's data files, every stored run's run.json, cell results and report.json) and about
seeded mutations of each (a value of another type, a key removed, an unknown key, a string with a final
newline, NaN and infinities), and must agree on each.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

import pytest

from reprokit import files, kitdata, validate

REPO = Path(__file__).resolve().parents[2]
RUNS = ("docs/sample-run", "docs/gpu-run", "docs/calibration", "docs/readme-run")
MUTATIONS = 25  # per document


def _documents() -> list[tuple[str, str, object]]:
    out = []
    for p in sorted(kitdata.PACKAGED.rglob("*")):
        if p.suffix in (".yaml", ".json") and p.is_file():
            rel = p.relative_to(kitdata.PACKAGED).as_posix()
            text = p.read_text(encoding="utf-8")
            out.append((kitdata.schema_of(rel), rel, json.loads(text) if p.suffix == ".json"
                        else files.load_yaml(text)))
    for src in RUNS:
        for run in sorted((REPO / src).glob("*/run.json")):
            d = run.parent
            named = [("run", run), ("report", d / "report.json")]
            named += [("cell_result", c) for c in sorted((d / "cells").glob("*.json"))[:3]]
            out += [(schema, p.relative_to(REPO).as_posix(), json.loads(p.read_text(encoding="utf-8")))
                    for schema, p in named if p.is_file()]
    return out


DOCUMENTS = _documents()


def _nodes(doc, path=()):
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _nodes(v, (*path, i))


_VALUES = (None, True, 0, -1, 1.5, 2**63, "", "x\n", "x", [], {}, [1], {"x": 1},
           math.nan, math.inf)


def _mutated(doc, rng: random.Random):
    doc = copy.deepcopy(doc)
    nodes = list(_nodes(doc))
    path, node = rng.choice(nodes)
    kind = rng.randrange(4)
    if kind == 0 and isinstance(node, dict) and node:
        del node[rng.choice(sorted(node))]
    elif kind == 1 and isinstance(node, dict):
        node["unknown_key_" + str(rng.randrange(9))] = rng.choice(_VALUES)
    elif kind == 2 and isinstance(node, str):
        _set(doc, path, node + rng.choice(("\n", " ", "$", "é")))
    elif path:
        _set(doc, path, rng.choice(_VALUES))
    else:
        return rng.choice(_VALUES)
    return doc


def _set(doc, path, value):
    for k in path[:-1]:
        doc = doc[k]
    doc[path[-1]] = value


def _strict_json(doc) -> bool:
    try:
        json.dumps(doc, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _agree(schema: str, doc) -> None:
    """The fast validator's "valid" is always jsonschema's; on a strict JSON document (no NaN, no
    date or other value JSON has not, string keys) the two say the same."""
    slow = not list(validate._validator(schema).iter_errors(doc))
    fast = validate.fast_valid(schema, doc)
    shown = (schema, json.dumps(doc, default=str)[:300])
    assert slow or not fast, shown
    if _strict_json(doc):
        assert fast == slow, shown


def test_the_documents_cover_every_schema_a_stored_file_has():
    schemas = {s for s, _, _ in DOCUMENTS}
    assert {"run", "report", "cell_result", "claims", "stacks", "suite", "published"} <= schemas
    assert len(DOCUMENTS) > 60


@pytest.mark.parametrize("schema,rel,doc", DOCUMENTS, ids=[rel for _, rel, _ in DOCUMENTS])
def test_both_validators_agree_on_a_document_and_its_mutations(schema, rel, doc):
    _agree(schema, doc)
    rng = random.Random(rel)
    for _ in range(MUTATIONS):
        _agree(schema, _mutated(doc, rng))


def _slow_lines(schema: str, doc) -> list[str]:
    return sorted(e.message for e in validate._validator(schema).iter_errors(doc))


def test_what_the_fast_validator_cannot_take_is_judged_by_jsonschema():
    suite = next(doc for schema, _, doc in DOCUMENTS if schema == "suite")
    for bad in ({**suite, 1: 2}, {**suite, "name": math.nan}):
        assert not validate.fast_valid("suite", bad)
        assert [line.split(": ", 1)[1] for line in validate.errors("suite", bad)] == _slow_lines("suite", bad)
    assert validate.errors("suite", suite) == []


def test_a_final_newline_fails_a_pattern_in_both():
    suite = next(doc for schema, _, doc in DOCUMENTS if schema == "suite")
    bad = {**suite, "name": suite["name"] + "\n"}
    assert not validate.fast_valid("suite", bad)
    assert any("does not match" in line for line in validate.errors("suite", bad))
