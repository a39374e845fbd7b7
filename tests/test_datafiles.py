"""One loader for the kit's data files: missing, malformed and schema-violating files are one-line errors."""

from pathlib import Path

import pytest

from reprokit import datafiles
from reprokit.errors import UserError

DATA = Path(datafiles.__file__).resolve().parent / "data"


@pytest.fixture
def scratch():
    """A file inside reprokit/data for the duration of one test."""
    path = DATA / "_test_scratch.yaml"
    yield path
    path.unlink(missing_ok=True)


def test_a_data_file_loads_validated_and_once():
    doc = datafiles.load("verdict_policy.yaml", "verdict_policy")
    assert doc["efficiency"]["tolerance"] > 0
    assert datafiles.load("verdict_policy.yaml", "verdict_policy") is doc        # cached, shared
    fresh = datafiles.read("verdict_policy.yaml", "verdict_policy")
    assert fresh == doc and fresh is not doc                                      # a copy to modify


def test_missing_malformed_and_invalid_files_are_one_line_errors(scratch):
    with pytest.raises(UserError, match=r"reprokit/data/_test_scratch.yaml is missing"):
        datafiles.read("_test_scratch.yaml")
    scratch.write_text("a: [unclosed\n")
    with pytest.raises(UserError, match=r"_test_scratch.yaml is not valid YAML .*fix the file") as e:
        datafiles.read("_test_scratch.yaml")
    assert "\n" not in str(e.value).split(" (")[0]
    scratch.write_text("schema_version: 1\nefficiency: {tolerance: -1}\n")
    with pytest.raises(UserError, match=r"_test_scratch.yaml does not match the verdict_policy schema"):
        datafiles.read("_test_scratch.yaml", "verdict_policy")
    assert datafiles.exists("verdict_policy.yaml") and not datafiles.exists("_nothing_here.yaml")
