"""The kit's packaged data files (reprokit/data/*.yaml): read once, parsed, validated against a schema.

One loader for every data file, so each is read the same way and fails the same way: a missing file, a
YAML error or a schema violation is a one-line UserError naming the file and the fix. `load` caches the
document and shares it (callers must not modify it); `read` gives a fresh copy each time.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from reprokit import validate
from reprokit.errors import UserError


def exists(relpath: str) -> bool:
    return resources.files("reprokit.data").joinpath(relpath).is_file()


def read(relpath: str, schema: str | None = None) -> Any:
    """A fresh copy of reprokit/data/<relpath>, validated against reprokit/schemas/<schema>.schema.json
    when `schema` is given."""
    where = f"reprokit/data/{relpath}"
    path = resources.files("reprokit.data").joinpath(relpath)
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError as e:
        raise UserError(f"{where} is missing; restore it from the repository") from e
    except yaml.YAMLError as e:
        raise UserError(f"{where} is not valid YAML ({' '.join(str(e).split())}); fix the file") from e
    if schema:
        validate.check(schema, doc, where)
    return doc


@cache
def load(relpath: str, schema: str | None = None) -> Any:
    """`read`, once per process: the document is shared by every caller, who must not modify it."""
    return read(relpath, schema)
