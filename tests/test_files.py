"""reprokit/files.py: one place for paths, atomic writes, strict reads and format versions."""

from __future__ import annotations

import json
import re

import pytest

from reprokit import files, validate


def test_format_versions_match_their_schemas():
    """Every format with a schema has the version its schema's `const` demands, and a history entry
    for every version up to it."""
    for name, (current, history) in files.FORMATS.items():
        assert sorted(history) == list(range(1, current + 1)), name
        if (files.SCHEMAS / f"{name}.schema.json").exists():
            assert validate.schema(name)["properties"]["schema_version"]["const"] == current, name


def test_bench_harness_writes_the_cell_result_version():
    """bench/ cannot import reprokit: its constant is checked here instead."""
    text = (files.BENCH / "harness.py").read_text()
    assert int(re.search(r"^SCHEMA_VERSION = (\d+)$", text, re.M).group(1)) == files.version("cell_result")


def test_paths_point_into_the_checkout():
    assert (files.REPO / "reproduce.py").is_file()
    for d in (files.DATA, files.SCHEMAS, files.BENCH, files.IMAGES, files.COMPOSE):
        assert d.is_dir(), d


def test_atomic_write_leaves_the_old_file_when_the_document_is_refused(tmp_path):
    p = tmp_path / "x.json"
    files.write_json_atomic(p, {"a": 1})
    with pytest.raises(ValueError):
        files.write_json_atomic(p, {"a": float("nan")})
    assert json.loads(p.read_text()) == {"a": 1}
    assert [q.name for q in tmp_path.iterdir()] == ["x.json"]  # no .tmp-* left behind
    assert oct(p.stat().st_mode & 0o777) == "0o644"


def test_strict_json():
    with pytest.raises(ValueError):
        files.loads_strict('{"a": Infinity}')
    assert files.loads_strict('{"a": 1.5}') == {"a": 1.5}
