"""JSON Schema validation for every file format (schemas in reprokit/schemas/).

Two validators of one schema: jsonschema_rs (compiled, Rust) decides whether a document is valid, and
only an invalid one is validated again by jsonschema (Python) for its messages, so that every error
line is jsonschema's. The fast one is trusted only to say "valid": anything it refuses or cannot take
(NaN, a non-string key) goes to jsonschema, which decides. tests/core/test_validate.py checks that the
two agree on every committed document and on thousands of mutations of them. Why two: reading a crate
validates every cell result, and jsonschema was a large part of that (the ledger's reading speed:
scripts/bench_ledger_read.py, docs/measurements.md). Both are imported on the first validation, not
with this module.
A schema's `pattern` is matched as JSON Schema (ECMA-262) has it: `$` is the end of the string. Python's
`re` lets `$` match before a final newline, so "smoke\\n" passed `^[a-z0-9-]+$`; a final `$` is
read as `\\Z` here.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from reprokit.errors import UserError

if TYPE_CHECKING:
    import jsonschema


@cache
def schema(name: str) -> dict:
    text = resources.files("reprokit.schemas").joinpath(f"{name}.schema.json").read_text()
    return json.loads(text)


@cache
def _ecma_pattern(pattern: str) -> re.Pattern:
    """`pattern` with an unescaped final `$` read as the end of the string (ECMA-262), not of a line."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _pattern(validator, pattern, instance, schema):
    from jsonschema.exceptions import ValidationError
    if validator.is_type(instance, "string") and not _ecma_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    import jsonschema.validators

    s = schema(name)
    cls = jsonschema.validators.validator_for(s)
    cls.check_schema(s)
    return jsonschema.validators.extend(cls, {"pattern": _pattern})(s)


@cache
def _fast(name: str) -> Any:
    import jsonschema_rs

    return jsonschema_rs.validator_for(schema(name), validate_formats=False)


def fast_valid(name: str, doc: Any) -> bool:
    """Whether jsonschema_rs finds `doc` valid against schema `name` (False when it cannot take it)."""
    try:
        return bool(_fast(name).is_valid(doc))
    except (ValueError, TypeError, OverflowError):
        return False


def errors(name: str, doc: Any) -> list[str]:
    """All schema violations of `doc` against schema `name`, as 'path: message' lines."""
    if fast_valid(name, doc):
        return []
    out = []
    # a path mixes list indices and mapping keys, and YAML keys may be numbers: order by kind, then value
    for e in sorted(_validator(name).iter_errors(doc),
                    key=lambda e: [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in e.path]):
        path = "/".join(str(p) for p in e.path) or "(top)"
        said = f" (expected {e.schema['description']})" if e.validator == "anyOf" and isinstance(
            e.schema, dict) and e.schema.get("description") else ""
        out.append(f"{path}: {e.message}{said}")
    return out


def check(name: str, doc: Any, where: str) -> None:
    """Raise UserError naming the file and its first violation."""
    errs = errors(name, doc)
    if errs:
        more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
        raise UserError(f"{where} does not match the {name} schema: {errs[0]}{more}")
