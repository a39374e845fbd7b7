"""The GPU compatibility tables (reprokit/data/compat.yaml): which CUDA, binaries and blockers each
stack's images carry, and the fallback chains. Loaded, schema-checked and checked for internal
references here; reprokit/plan/preflight.py judges cells against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

COMPAT_PATH = Path(__file__).resolve().parents[1] / "data" / "compat.yaml"
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "compat.schema.json"


class CompatError(ValueError):
    """The compatibility data is inconsistent or names something unknown."""


def load_compat(path: Path | str = COMPAT_PATH, *, validate: bool = True) -> dict[str, Any]:
    """Read compat.yaml (the kit's own through files.load_data: parsed and schema-checked once, shared,
    not to be modified; another `path` is read and checked here) and check its internal references."""
    if Path(path) == COMPAT_PATH and validate:
        from reprokit import files

        data = files.load_data("compat")
        _check_references(data)
        return data
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if validate:
        import json

        import jsonschema

        with open(SCHEMA_PATH, encoding="utf-8") as fh:
            schema = json.load(fh)
        jsonschema.validate(data, schema)
        _check_references(data)
    return data


def _check_references(data: Mapping[str, Any]) -> None:
    """Every binary, blocker stack and fallback link names something compat.yaml defines."""
    from reprokit.catalog.suites import load_stacks

    known = load_stacks()
    for name, stack in data["stacks"].items():
        if name not in known:
            raise CompatError(f"compat.yaml describes stack {name!r}, which stacks.yaml does not define")
        for binary in stack["binaries"]:
            if binary not in data["binaries"]:
                raise CompatError(f"stack {name!r} names unknown binary {binary!r}")
    for blocker in data["blockers"]:
        for name in blocker["stacks"]:
            if name not in data["stacks"]:
                raise CompatError(f"blocker {blocker['id']!r} names unknown stack {name!r}")
    for name, links in (data.get("fallbacks") or {}).items():
        for link in [{"stack": name}] + links:
            if link["stack"] is not None and link["stack"] not in data["stacks"]:
                raise CompatError(f"fallback chain of {name!r} names unknown stack {link['stack']!r}")
            if link["stack"] is not None and not data["stacks"][link["stack"]]["gpu"]:
                raise CompatError(f"fallback chain of {name!r}: {link['stack']!r} has no GPU flavour")


def stack_from_compat(name: str, compat: Mapping[str, Any], *, needs_gpu: bool = False) -> dict[str, Any]:
    """The stack description preflight works on: name, image, GPU flavour, CUDA, coverage, blockers."""
    try:
        entry = compat["stacks"][name]
    except KeyError:
        known = ", ".join(sorted(compat["stacks"]))
        raise CompatError(f"unknown stack {name!r}; compat.yaml knows: {known}") from None
    from reprokit.catalog.suites import load_stacks

    return {
        "name": name,
        "image": load_stacks()[name]["image"],  # stacks.yaml alone says which image runs a stack
        "needs_gpu": needs_gpu,
        "gpu": entry["gpu"],
        "cuda": entry["cuda"],
        "binaries": [dict(compat["binaries"][b], id=b) for b in entry["binaries"]],
        "blockers": [dict(b) for b in compat["blockers"] if name in b["stacks"]],
    }
