"""The GPU compatibility tables (reprokit/data/compat.yaml): which CUDA, binaries and blockers each
stack's images carry, and the fallback chains. Loaded, schema-checked and checked for internal
references here; reprokit/plan/preflight.py judges cells against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reprokit import kitdata

COMPAT_PATH = Path(__file__).resolve().parents[1] / "data" / "compat.yaml"


class CompatError(ValueError):
    """The compatibility data is inconsistent or names something unknown."""


def load_compat(path: Path | str = COMPAT_PATH, *, validate: bool = True) -> dict[str, Any]:
    """Read compat.yaml through the kit's loader (reprokit/files.py) and check its internal references:
    the kit's own is parsed and schema-checked once and shared, not to be modified; another `path`
    (an edited copy) is read and checked on each call."""

    if Path(path) == COMPAT_PATH and validate:
        data = kitdata.load("compat")
    else:
        data = kitdata.load_path(path, "compat" if validate else None)
    if validate:
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

    image = load_stacks()[name]["image"]  # stacks.yaml alone says which image runs a stack
    return {
        "name": name,
        "image": image,
        "require_cuda": image_requirement(image) if entry["gpu"] else None,
        "image_glibc": image_glibc(image) if entry["gpu"] else None,
        "cuda_compat": entry.get("cuda_compat"),
        "needs_gpu": needs_gpu,
        "gpu": entry["gpu"],
        "cuda": entry["cuda"],
        "binaries": [dict(compat["binaries"][b], id=b) for b in entry["binaries"]],
        "blockers": [dict(b) for b in compat["blockers"] if name in b["stacks"]],
    }


def image_glibc(image: str) -> str | None:
    """The glibc of an image's GPU flavour: its base image's in images/_blocks/distros.yaml; None where
    the recipe, its base or the base's glibc is not recorded."""
    from reprokit import files, kitdata

    path = files.IMAGES / image / "recipe.yaml"
    if not path.is_file():
        return None
    doc = kitdata.load_path(path, "recipe")
    base = (((doc.get("flavours") or {}).get("gpu") or {}).get("build_args") or {}).get("BASE_IMAGE")
    distros = kitdata.load_path(files.IMAGES / "_blocks" / "distros.yaml", "distros")["distros"]
    glibc = (distros.get(base) or {}).get("glibc") if base else None
    return str(glibc) if glibc else None


def image_requirement(image: str) -> str | None:
    """The NVIDIA_REQUIRE_CUDA of an image's GPU flavour, from images/<image>/recipe.yaml (its build
    args; the Dockerfile sets the variable from them); None without a GPU flavour or recipe."""
    from reprokit import files, kitdata

    path = files.IMAGES / image / "recipe.yaml"
    if not path.is_file():
        return None
    doc = kitdata.load_path(path, "recipe")  # the plan stage comes before containers/recipes.py
    gpu = (doc.get("flavours") or {}).get("gpu") or {}
    value = (gpu.get("build_args") or {}).get("NVIDIA_REQUIRE_CUDA")
    return str(value).strip() or None if value else None


def version_tuple(text: Any) -> tuple[int, ...]:
    """'10.2' -> (10, 2), '450.36' -> (450, 36), '11' -> (11,); the digits of each dotted part
    ('9.0.176-1' -> (9, 0, 1761)), 0 for a part without any."""
    parts = []
    for piece in str(text).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _constraint_holds(key: str, op: str, want: str,
                      facts: Mapping[str, tuple[int, ...] | None]) -> bool | None:
    have = facts.get(key)
    if have is None:
        return None
    wanted = tuple(int(x) for x in want.split("."))
    n = max(len(have), len(wanted))
    a, b = have + (0,) * (n - len(have)), wanted + (0,) * (n - len(wanted))
    return {">=": a >= b, ">": a > b, "<=": a <= b, "<": a < b, "=": a == b, "==": a == b}[op]


def requirement_holds(text: str, driver_cuda: tuple[int, int] | None,
                      driver: tuple[int, ...] | None) -> bool | None:
    """Whether a driver satisfies an NVIDIA_REQUIRE_CUDA expression (compat.yaml
    `container_requirement`: space-separated alternatives ORed, comma-separated constraints ANDed):
    True, False, or None when it depends on something not known here (a `brand` or `arch` constraint,
    an unknown driver). Constraints on cuda (the driver's CUDA version) and driver are evaluated."""
    import re

    facts = {"cuda": driver_cuda, "driver": driver}
    verdicts = []
    for alternative in text.split():
        results = []
        for constraint in alternative.split(","):
            m = re.fullmatch(r"(cuda|driver|arch|brand)(>=|<=|==|=|>|<)([0-9A-Za-z.]+)", constraint)
            if not m or m.group(1) in ("arch", "brand") or not re.fullmatch(r"[0-9.]+", m.group(3)):
                results.append(None)
                continue
            results.append(_constraint_holds(m.group(1), m.group(2), m.group(3), facts))
        if False in results:
            verdicts.append(False)
        elif None in results:
            verdicts.append(None)
        else:
            verdicts.append(True)
    if True in verdicts:
        return True
    return None if None in verdicts else False
