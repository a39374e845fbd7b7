"""`reproduce.py generate [--check]`: every committed generated file from its inputs, one command."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys

from reprokit import files, kitdata
from reprokit.catalog import published_csv
from reprokit.commands import generate


def cli(repo, *args):
    return subprocess.run([sys.executable, str(repo / "reproduce.py"), *args], cwd=repo,
                          capture_output=True, text=True, timeout=300)


def test_the_checkout_is_as_generated(repo):
    p = cli(repo, "generate", "--check")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Dockerfiles: " in p.stdout and "compose files: " in p.stdout and "published numbers: " in p.stdout
    assert "0 out of date" in p.stdout and "is out of date" not in p.stdout


def test_a_stale_file_is_named_then_rewritten(tmp_path, monkeypatch):
    """In copies of compose/ and the published data: an edited file and a deleted one are out of
    date for --check, written by generate, and then current."""
    compose = shutil.copytree(files.COMPOSE, tmp_path / "compose")
    published = shutil.copytree(kitdata.PACKAGED / "published", tmp_path / "published")
    gens = {g.what: g for g in generate.GENERATORS}
    monkeypatch.setattr(generate, "GENERATORS", (
        dataclasses.replace(gens["compose files"], folder=compose),
        dataclasses.replace(gens["published numbers"], folder=published)))
    edited = compose / "smoke.yml"
    edited.write_text(edited.read_text() + "# edited by hand\n")
    (published / "001.yaml").unlink()
    csv = published_csv.DEFAULT_CSV  # the project's own copy: every clone has it
    before = {o.generator.what: o for o in generate.generate(write=False, csv=csv)}
    assert before["compose files"].stale == [edited] and before["compose files"].current >= 5
    assert "# edited by hand" in edited.read_text()  # --check writes nothing
    assert before["published numbers"].skipped is None
    assert before["published numbers"].stale == [published / "001.yaml"]
    generate.generate(write=True, csv=csv)
    after = generate.generate(write=False, csv=csv)
    assert all(o.stale == [] for o in after)
    assert edited.read_text() == (files.COMPOSE / "smoke.yml").read_text()


def test_without_the_reference_csv_the_published_data_is_skipped(repo, tmp_path):
    absent = tmp_path / "absent.csv"
    out = {o.generator.what: o for o in generate.generate(write=False, csv=absent)}
    assert out["published numbers"].skipped == f"no reference CSV at {absent}"
    p = cli(repo, "generate", "--check", "--reference-csv", str(tmp_path))
    assert p.returncode == 2
    assert p.stderr.strip() == (f"reproduce.py: error: --reference-csv {tmp_path} is not a file; give the "
                                "published_numbers.csv of the reference, or leave the option out")


def test_the_suite_table_counts_what_the_suite_data_holds():
    """docs/suites.md's generated table: every suite, its cells and sources as the data has them (a
    hand-kept table said 21 cells for legacy-2017 where there were 37, and lacked gpu-smoke)."""
    from reprokit.catalog import suite_docs, suites

    text = suite_docs.DOC.read_text()
    block = text.split(suite_docs.BEGIN, 1)[1].split(suite_docs.END, 1)[0]
    for name in suites.suite_names():
        s = suites.load_suite(name)
        assert f"| `{name}` | {', '.join(s.sources) or 'none'} | {len(s.cells)} (" in block, name
    legacy = suites.load_suite("legacy-2017")
    edited = text.replace(block, block.replace(f"| 000, 001 | {len(legacy.cells)} (", "| 000, 001 | 21 ("))
    assert edited != text and suite_docs.render(edited) == text  # generate undoes a hand edit in the block


def test_every_option_of_every_command_is_in_the_commands_page():
    """docs/commands.md's generated block lists each command's options from its own add_arguments
    (a hand-kept page lacked six `run` options)."""
    import argparse

    from reprokit import commands
    from reprokit.commands import COMMANDS, options_doc

    block = options_doc.DOC.read_text().split(options_doc.BEGIN, 1)[1].split(options_doc.END, 1)[0]
    seen = 0
    for name in COMMANDS:
        assert f"### `reproduce.py {name}`" in block, name
        parser = argparse.ArgumentParser(add_help=False)
        commands.module(name).add_arguments(parser)
        for action in parser._actions:
            for flag in action.option_strings:
                assert f"`{flag}`" in block, (name, flag)
                seen += 1
    assert seen >= 60 and "`--time-limit`" in block and "`--data-subset`" in block
