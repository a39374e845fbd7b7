"""The kit's packaged data files (reprokit/data/*.yaml) under their relative file names.

The loader itself is `reprokit.files.load_data` (each file parsed once per process, validated, shared);
these names stay for the modules that address a file by its relative path and a schema of their own
choosing. `load` shares the document (callers must not modify it); `read` gives a deep copy each time.
"""

from __future__ import annotations

import copy
from typing import Any

from reprokit import files


def exists(relpath: str) -> bool:
    return files.data_exists(relpath)


def read(relpath: str, schema: str | None = None) -> Any:
    """A copy of reprokit/data/<relpath> the caller may modify, validated against
    reprokit/schemas/<schema>.schema.json when `schema` is given."""
    return copy.deepcopy(files.load_data_file(relpath, schema))


def load(relpath: str, schema: str | None = None) -> Any:
    """`read` without the copy: the document is shared by every caller, who must not modify it."""
    return files.load_data_file(relpath, schema)
