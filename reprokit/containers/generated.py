"""Files the kit generates and commits (images/<dir>/Dockerfile, compose/<suite>.yml): each written
only when its text changes (atomically, mode 0644), or only compared (`--check`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from reprokit import files


def write(folder: Path, expected: dict[str, str]) -> list[Path]:
    """Write every file of `expected` (name under `folder` -> text) whose text differs."""
    paths = []
    for name, text in expected.items():
        p = folder / name
        if not p.exists() or p.read_text() != text:
            files.write_text_atomic(p, text)
        paths.append(p)
    return paths


def stale(folder: Path, expected: dict[str, str], extra: list[str] = ()) -> list[str]:
    """The names whose file is missing or differs, and `extra` (files no generator makes)."""
    out = [n for n, t in expected.items() if not (folder / n).exists() or (folder / n).read_text() != t]
    return sorted(out + list(extra))


def run(check: bool, stale_names: Callable[[], list[str]], write_all: Callable[[], list[Path]],
        where: str, command: str) -> int:
    """A generator's command line: with `check`, one line per stale file and exit 1; else write
    and print what was written."""
    if check:
        names = stale_names()
        for n in names:
            print(f"{where}/{n} is out of date; run `{command}`", file=sys.stderr)
        return 1 if names else 0
    for path in write_all():
        print(path.relative_to(files.REPO) if path.is_relative_to(files.REPO) else path)
    return 0
