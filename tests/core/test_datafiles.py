"""One loader for the kit's data files: missing, malformed and schema-violating files are one-line errors."""

from pathlib import Path

import pytest

from reprokit import files, kitdata
from reprokit.errors import UserError

DATA = Path(files.__file__).resolve().parent / "data"


@pytest.fixture
def scratch():
    """A file inside reprokit/data for the duration of one test."""
    path = DATA / "_test_scratch.yaml"
    yield path
    path.unlink(missing_ok=True)


def test_a_data_file_loads_validated_and_once():
    doc = kitdata.load_file("verdict_policy.yaml", "verdict_policy")
    assert doc["efficiency"]["tolerance"] > 0
    assert kitdata.load_file("verdict_policy.yaml", "verdict_policy") is doc  # cached, shared
    assert kitdata.load("verdict_policy") is doc                             # one loader


def test_missing_malformed_and_invalid_files_are_one_line_errors(scratch):
    with pytest.raises(UserError, match=r"reprokit/data/_test_scratch.yaml is missing"):
        kitdata.load_file("_test_scratch.yaml")
    scratch.write_text("a: [unclosed\n")
    with pytest.raises(UserError, match=r"_test_scratch.yaml is not valid YAML .*fix the file") as e:
        kitdata.load_file("_test_scratch.yaml")
    assert "\n" not in str(e.value).split(" (")[0]
    scratch.write_text("schema_version: 1\nefficiency: {tolerance: -1}\n")
    with pytest.raises(UserError, match=r"_test_scratch.yaml does not match the verdict_policy schema"):
        kitdata.load_file("_test_scratch.yaml", "verdict_policy")
    assert kitdata.exists("verdict_policy.yaml") and not kitdata.exists("_nothing_here.yaml")


def test_errors_at_a_number_key_and_a_text_key_are_listed_not_a_crash():
    """YAML keys may be numbers: two violations whose paths hold a number and a text at one place are
    ordered, not compared (the fuzzer's finding: TypeError '<' between str and int)."""
    import yaml

    from reprokit import validate

    doc = yaml.safe_load("schema_version: 1\nkind: binary_audit\naudits:\n  0: 1\n  x: 2\n")
    errs = validate.errors("binary_audit", doc)
    assert [e.split(":")[0] for e in errs] == ["audits/0", "audits/x"], errs
