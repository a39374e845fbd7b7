"""The code says what is; CHANGELOG.md says what changed and why.

No file of the kit or its tests (reprokit/, bench/, tools/, scripts/, report_templates/, tests/) refers
to a numbered issue of the project: such a label tells a reader nothing the text around it does not,
and what it stood for (a bug found, a measurement that set a threshold) is written as the fact itself
or kept, with the issue's number, in CHANGELOG.md. Left out: tests/data/ (stored runs and their data
snapshots, kept byte for byte as they were recorded) and tests/fuzz/findings/ (fuzzer inputs).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("reprokit", "bench", "tools", "scripts", "report_templates", "tests")
LEFT_OUT = (Path("tests") / "data", Path("tests") / "fuzz" / "findings")
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache"}
# the word and its number, made from parts so that this file does not match itself: also its plural,
# any case, and a number after a space, '#', '-' or '_' (as in a test's name)
WORD = "iss" + "ue"
LABEL = re.compile(rf"(?<![a-z]){WORD}s?[\s#_-]*\d+", re.IGNORECASE)


def _files():
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*")):
            rel = path.relative_to(REPO)
            if not path.is_file() or SKIPPED_DIRS & set(rel.parts):
                continue
            if any(rel.is_relative_to(out) for out in LEFT_OUT):
                continue
            yield rel, path


def _labels(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):  # not text: nothing a reader would read
        return []
    found = []
    for m in LABEL.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        found.append(f"{line}: {' '.join(m.group(0).split())!r}")
    return found


def test_no_file_refers_to_a_numbered_issue():
    found = {str(rel): got for rel, path in _files() if (got := _labels(path))}
    where = "; ".join(f"{p} line {', line '.join(v)}" for p, v in found.items())
    assert not found, ("say what the code does and why, as the fact itself; history (what changed, when, "
                       "in which issue) belongs in CHANGELOG.md: " + where)


def test_the_pattern_finds_what_it_is_meant_to_find():
    word = WORD.capitalize()
    for text in (f"({WORD} 22)", f"{word} 20 item 7", f"{WORD}s 12 and 13", f"before_{WORD}_12_fails",
                 f"{WORD}-5", f"{WORD} #35", f"{WORD}\n    37"):
        assert LABEL.search(text), text
    for text in (f"for {WORD} in result.get_{WORD}s():", f"the {WORD}'s figures", f"t{WORD} 3"):
        assert not LABEL.search(text), text


def test_the_history_has_its_place():
    changelog = REPO / "CHANGELOG.md"
    assert changelog.is_file(), "CHANGELOG.md carries what changed and why"
    assert changelog.read_text(encoding="utf-8").startswith("# Changelog")
