"""reprokit/files.py: one place for paths, atomic writes, strict reads and format versions."""

from __future__ import annotations

import json
import re

import pytest

from reprokit import files, formats, kitdata, validate
from reprokit.errors import UserError


def test_format_versions_match_their_schemas():
    """Every format with a schema has the version its schema's `const` demands, and a history entry
    for every version up to it."""
    for name, fmt in formats.FORMATS.items():
        assert sorted(fmt.history) == list(range(1, fmt.current + 1)), name
        if (files.SCHEMAS / f"{name}.schema.json").exists():
            assert validate.schema(name)["properties"]["schema_version"]["const"] == fmt.current, name


def test_bench_harness_writes_the_cell_result_version():
    """bench/ cannot import reprokit: its constant is checked here instead."""
    text = (files.BENCH / "harness.py").read_text()
    assert int(re.search(r"^SCHEMA_VERSION = (\d+)$", text, re.M).group(1)) == formats.version("cell_result")


def test_paths_point_into_the_checkout():
    assert (files.REPO / "reproduce.py").is_file()
    for d in (kitdata.PACKAGED, files.SCHEMAS, files.BENCH, files.IMAGES, files.COMPOSE):
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


# -- load_data: one loader, each file parsed once per process, validated documents kept ------------
_COUNT_PARSES = r"""
import collections, json, sys, yaml
parsed, loaders = collections.Counter(), set()
real = yaml.load
def counting(stream, Loader):
    parsed[stream if isinstance(stream, str) else stream.read()] += 1
    loaders.add(Loader.__name__)
    return real(stream if isinstance(stream, str) else stream, Loader)
yaml.load = counting
import contextlib, io
from reprokit import cli
with contextlib.redirect_stdout(io.StringIO()):
    assert cli.main(["list", "--json"]) == 0
print(json.dumps({"files": len(parsed), "most": max(parsed.values(), default=0), "loaders": sorted(loaders),
                  "validator": any(m in sys.modules for m in ("jsonschema", "jsonschema_rs"))}))
"""


def _count_parses(repo, cache_dir: str) -> dict:
    import os
    import subprocess
    import sys
    env = {**os.environ, "REPROKIT_DATA_CACHE": cache_dir}
    p = subprocess.run([sys.executable, "-c", _COUNT_PARSES], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_list_parses_each_data_file_once_with_the_c_loader(repo):
    got = _count_parses(repo, "")  # no cache between processes: every file is parsed
    assert got["files"] >= 10 and got["most"] == 1
    import yaml
    assert got["loaders"] == (["StrictCSafeLoader"] if yaml.__with_libyaml__ else ["StrictSafeLoader"])


def test_a_second_process_reads_the_validated_documents_from_the_cache(repo, tmp_path):
    first = _count_parses(repo, str(tmp_path))
    assert first["files"] >= 10 and first["validator"]
    assert len(list(tmp_path.glob("*.marshal"))) == first["files"]
    again = _count_parses(repo, str(tmp_path))
    assert again["files"] == 0 and not again["validator"]  # nothing parsed, no validator imported


@pytest.fixture
def scratch():
    path = kitdata.PACKAGED / "_test_scratch.yaml"
    yield path
    path.unlink(missing_ok=True)
    kitdata.forget()


def test_the_cache_follows_the_file_and_ignores_a_damaged_entry(scratch, tmp_path, monkeypatch):
    monkeypatch.setenv("REPROKIT_DATA_CACHE", str(tmp_path))
    policy = (kitdata.PACKAGED / "verdict_policy.yaml").read_text()
    scratch.write_text(policy)
    tolerance = kitdata.load_file(scratch.name, "verdict_policy")["efficiency"]["tolerance"]
    (entry,) = tmp_path.glob("*.marshal")
    scratch.write_text(policy.replace(f"tolerance: {tolerance}", "tolerance: 0.5"))
    kitdata.forget()
    assert kitdata.load_file(scratch.name, "verdict_policy")["efficiency"]["tolerance"] == 0.5
    assert len(list(tmp_path.glob("*.marshal"))) == 2
    scratch.write_text(policy)
    entry.write_bytes(entry.read_bytes()[:40])  # cut short: unreadable, parsed again
    kitdata.forget()
    assert kitdata.load_file(scratch.name, "verdict_policy")["efficiency"]["tolerance"] == tolerance
    scratch.write_text(policy.replace(f"tolerance: {tolerance}", "tolerance: -1"))
    kitdata.forget()
    with pytest.raises(UserError, match="does not match the verdict_policy schema"):
        kitdata.load_file(scratch.name, "verdict_policy")  # an invalid file is never kept


def test_data_names_and_their_schemas():
    assert kitdata.schema_of("suites/smoke") == "suite" and kitdata.schema_of("published/000") == "published"
    assert kitdata.schema_of("rerun_coverage.json") == "rerun_coverage"
    assert kitdata.load("stacks") is kitdata.load("stacks")  # shared


def test_results_is_the_run_directory_only_and_imports_no_pandas():
    """No shim keeps old names alive: what moved out of results is imported from where it is."""
    import subprocess
    import sys
    code = ("import sys; from reprokit import results; assert 'pandas' not in sys.modules; "
            "assert not hasattr(results, 'cells_frame') and not hasattr(results, 'past_cell_times'); "
            "assert not hasattr(results, 'utcnow') and not hasattr(results, 'kit_info')")
    p = subprocess.run([sys.executable, "-c", code], cwd=files.REPO, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr


def test_a_planted_or_foreign_cache_entry_is_ignored_and_rebuilt(scratch, tmp_path, monkeypatch):
    """Unchecked, an edited blob that still unmarshals was used silently, and another document's blob
    under this key gave exit 3; both are ignored, the file parsed and validated again."""
    import hashlib
    import marshal

    monkeypatch.setenv("REPROKIT_DATA_CACHE", str(tmp_path))
    policy = (kitdata.PACKAGED / "verdict_policy.yaml").read_text()
    scratch.write_text(policy)
    good = kitdata.load_file(scratch.name, "verdict_policy")
    (entry,) = tmp_path.glob("*.marshal")
    head = len(kitdata._CACHE_FORMAT)
    blob = entry.read_bytes()
    edited = {**good, "efficiency": {**good["efficiency"], "tolerance": 9.0}}
    entry.write_bytes(blob[:head + 128] + marshal.dumps(edited))  # edited: digest no longer holds
    kitdata.forget()
    assert kitdata.load_file(scratch.name, "verdict_policy") == good
    foreign = marshal.dumps(["another", "document"])  # a consistent blob stored under another key
    other_key = hashlib.sha256(b"elsewhere").hexdigest().encode()
    entry.write_bytes(kitdata._CACHE_FORMAT + other_key + hashlib.sha256(foreign).hexdigest().encode()
                      + foreign)
    kitdata.forget()
    assert kitdata.load_file(scratch.name, "verdict_policy") == good
    assert entry.read_bytes() == blob  # rebuilt


def test_a_forged_cache_entry_with_its_key_and_digest_recomputed_is_ignored(scratch, tmp_path, monkeypatch):
    """With a key and a sha256 alone, a forger who recomputes both over an edited payload made the kit use
    the edited document silently (and a forged garbage one gave exit 3 KeyError). The blob's MAC is
    keyed with the data file's own bytes, which the blob does not hold: the forgery is rebuilt."""
    import hashlib
    import marshal

    monkeypatch.setenv("REPROKIT_DATA_CACHE", str(tmp_path))
    scratch.write_text((kitdata.PACKAGED / "verdict_policy.yaml").read_text())
    good = kitdata.load_file(scratch.name, "verdict_policy")
    (entry,) = tmp_path.glob("*.marshal")
    blob = entry.read_bytes()
    head = len(kitdata._CACHE_FORMAT)
    key = blob[head:head + 64]
    for forged in ({**good, "efficiency": {**good["efficiency"], "tolerance": 9.0}}, {"garbage": 1}):
        payload = marshal.dumps(forged)
        entry.write_bytes(kitdata._CACHE_FORMAT + key + hashlib.sha256(payload).hexdigest().encode()
                          + payload)
        kitdata.forget()
        assert kitdata.load_file(scratch.name, "verdict_policy") == good
        assert entry.read_bytes() == blob  # rebuilt from the file


def test_a_cache_entry_forged_by_someone_who_can_read_the_data_file_is_not_used(tmp_path):
    """A forger who can read the data file (every clone can) but not the cache's key: an edited suite
    with its MAC recomputed under the data file's bytes, and a garbage document made the same way,
    are both ignored; `list` prints the real suite (it printed the forged description, and the
    garbage one ended in exit 3, KeyError 'groups')."""
    import hashlib
    import hmac
    import marshal
    import os
    import subprocess
    import sys

    cache = tmp_path / "cache"
    env = {**os.environ, "REPROKIT_DATA_CACHE": str(cache)}

    def listed() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(files.REPO / "reproduce.py"), "list", "--suite", "smoke"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    real = listed()
    assert real.returncode == 0, real.stderr
    raw = (kitdata.PACKAGED / "suites" / "smoke.yaml").read_bytes()
    key = kitdata._validated_key("suites/smoke.yaml", raw, "suite")
    entry = cache / f"{key}.marshal"
    blob = entry.read_bytes()
    head = blob[:blob.index(b"\0") + 1]
    assert blob[len(head):len(head) + 64] == key.encode()
    good = marshal.loads(blob[len(head) + 128:])
    forged_suite = {**good, "description": "TAMPERED-IN-CACHE"}
    for forged in (forged_suite, {"garbage": [1, 2, 3]}):
        payload = marshal.dumps(forged)
        mac = hmac.new(raw, payload, hashlib.sha256).hexdigest().encode()  # keyed with public bytes
        entry.write_bytes(head + key.encode() + mac + payload)
        got = listed()
        assert got.returncode == 0, got.stderr
        assert "TAMPERED" not in got.stdout and got.stdout == real.stdout
    key_file = cache / "key"
    assert key_file.stat().st_mode & 0o777 == 0o600 and key_file.stat().st_size == 32


def test_a_schema_pattern_ends_at_the_end_of_the_string_not_before_a_final_newline():
    """Python's `$` matches before a final newline: a suite named "smoke\\n" passed ^[a-z0-9-]+$."""
    suite = kitdata.load("suites/smoke")
    assert validate.errors("suite", suite) == []
    errs = validate.errors("suite", {**suite, "name": "smoke\n"})
    assert errs == ["name: 'smoke\\n' does not match '^[a-z0-9-]+$'"]


def test_the_data_loader_refuses_a_key_given_twice_and_a_number_that_is_not_finite():
    """PyYAML keeps the later of two equal keys silently; the kit's one loader refuses them, at any
    depth, and .nan/.inf, naming the file, the key or value, and the fix in one line."""
    assert files.load_yaml("a: 1\nb: {x: &m {p: 1}, y: {<<: *m, p: 2}}\n") == {
        "a": 1, "b": {"x": {"p": 1}, "y": {"p": 2}}}  # a merged key may be overridden
    for text, said in (("name: smoke\nx: 1\nname: other\n", "key 'name' is given twice (lines 1 and 3)"),
                       ("a:\n  - {v: 1, v: 2}\n", "key 'v' is given twice (lines 2 and 2)"),
                       ("v: .nan\n", "'.nan' on line 1 is not a finite number"),
                       ("v: -.inf\n", "'-.inf' on line 1 is not a finite number"),
                       ("v: 1.0e+400\n", "'1.0e+400' on line 1 is not a finite number")):
        with pytest.raises(UserError) as e:
            kitdata.parse("x.yaml", text.encode(), "reprokit/data/x.yaml")
        (line,) = str(e.value).splitlines()
        assert line.startswith("reprokit/data/x.yaml: ") and said in line and "fix the file" in line, line


def test_the_published_schema_knows_the_units_the_kit_converts_and_bounds_each():
    from reprokit.catalog import units

    s = validate.schema("published")
    known = set(s["$defs"]["unit"]["anyOf"][0]["enum"])
    assert known == set(units._UNITS)
    bounded = {r["if"]["properties"]["unit"].get("const") for r in s["$defs"]["value_in_range"]["allOf"]}
    assert known <= bounded
    for u in known:  # one bound per kind, whatever unit it is written in
        (rule,) = [r for r in s["$defs"]["value_in_range"]["allOf"]
                   if r["if"]["properties"]["unit"].get("const") == u]
        top = rule["then"]["properties"]["value"]["maximum"]
        base = {"time": 3.6e7, "memory": 1e15, "flops": 1e19}[units.kind(u)]
        assert 0.8 < units.convert(top, u, {"time": "s", "memory": "B", "flops": "FLOP/s"}[units.kind(u)]) \
            / base < 1.3, u


def test_a_cache_entry_of_another_loader_is_a_miss(tmp_path, monkeypatch):
    """An entry is keyed by the code that parses and validates too: a document another kit's loader
    took (a key given twice, before the loader refused it) is not taken by this one."""
    import shutil

    from reprokit import files

    raw = b"schema_version: 1\nname: smoke\nname: legacy-2017\n"
    mine = kitdata._validated_key("suites/smoke.yaml", raw, "suite")
    other = tmp_path / "reprokit"
    shutil.copytree(files.PACKAGE, other, ignore=shutil.ignore_patterns("__pycache__", "data"))
    (other / "files.py").write_text((other / "files.py").read_text() + "\n# a looser loader\n")
    monkeypatch.setattr(files, "PACKAGE", other)
    kitdata._rules_digest.cache_clear()
    try:
        assert kitdata._validated_key("suites/smoke.yaml", raw, "suite") != mine
    finally:
        kitdata._rules_digest.cache_clear()
