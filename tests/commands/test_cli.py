"""The command line as a user meets it: exit codes, one-line errors, list --json."""

import json
import subprocess
import sys


def cli(repo, *args, timeout=120):
    return subprocess.run([sys.executable, str(repo / "reproduce.py"), *args], cwd=repo,
                          capture_output=True, text=True, timeout=timeout)


def test_unknown_suite_is_one_line_and_exit_2(repo):
    p = cli(repo, "--suite", "nope")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown suite 'nope'" in lines[0] and "legacy-2017" in lines[0]
    assert "Traceback" not in p.stderr


def test_unknown_cell_is_exit_2(repo):
    p = cli(repo, "run", "--suite", "smoke", "--cells", "no/such/*", "--runner", "local")
    assert p.returncode == 2 and "no cell of suite smoke matches" in p.stderr


def test_unreadable_results_are_exit_2(repo, tmp_path):
    (tmp_path / "run.json").write_text("{broken")
    p = cli(repo, "report", str(tmp_path))
    assert p.returncode == 2 and "unreadable" in p.stderr and len(p.stderr.splitlines()) == 1


def test_list_json_has_one_entry_per_published_number(repo):
    p = cli(repo, "list", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    from reprokit.catalog import suites

    assert len(d["published"]) == len(suites.all_sources_published()) > 0
    assert all(e["cell"] for e in d["published"])
    legacy = [e for e in d["published"] if e["suite"] == "legacy-2017"]
    expected = suites.published_for_suite(suites.load_suite("legacy-2017"))
    assert len(legacy) == len(expected) > 0 and all(e["cell_implemented"] for e in legacy)


def test_fingerprint_prints_json(repo):
    p = cli(repo, "fingerprint")
    assert p.returncode == 0, p.stderr
    fp = json.loads(p.stdout)
    assert "cpu" in fp and "gpus" in fp


_IMPORTS_AFTER = r"""
import contextlib, io, json, sys
from reprokit import cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(sys.argv[1:])
    except SystemExit:
        pass
heavy = ("pandas", "numpy", "jinja2", "docker", "jsonschema", "rich", "yaml", "scipy")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy and "." not in m
                        or m.startswith("reprokit.commands."))))
"""


def _imported_by(repo, tmp_path, *args) -> list[str]:
    import os
    env = {**os.environ, "REPROKIT_DATA_CACHE": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER, *args], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_help_and_list_import_no_heavy_library(repo, tmp_path):
    """`--help` imports no command module and no heavy library; `list` only its own module (the
    second time, once the data cache holds the validated data files: no YAML, no jsonschema)."""
    assert _imported_by(repo, tmp_path, "--help") == []
    _imported_by(repo, tmp_path, "list")
    assert _imported_by(repo, tmp_path, "list") == ["reprokit.commands.list"]
    assert _imported_by(repo, tmp_path, "list", "--help") == ["reprokit.commands.list"]


def test_help_lists_every_exit_status(repo):
    out = cli(repo, "--help").stdout
    for status in ("0 ", "1 ", "2 ", "3 ", "128+N"):
        assert f"\n  {status}" in out, status
    assert "internal error, a bug in the kit" in out
