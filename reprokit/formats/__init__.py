"""Every file format the kit writes: its version, its history, and the steps that bring an older one up.

A run recorded today must load, re-render and compare on a kit many versions newer. So each format
carries `schema_version`, each version says what its era added (`history`), and one chain of small
steps (`to_N(doc)`: a document of version N-1 in, one of version N out) brings any older document to
the current version before it is validated and read. A document of a newer version than this kit
knows is refused in one line naming both versions (exit 2): a newer kit wrote it.

- chain.py        `Format` (a format's history and steps) and `upgrade`, the one way a stored
                  document of any version is read
- run.py          run.json: versions and steps
- cell_result.py  cells/*.json: versions and steps
- report.py       report.json: versions (an output: re-rendered, never upgraded in place)
- ledger.py       ledger.json: versions (an output: built again from its store, never upgraded)
- others.py       the formats with one version so far (jobs, locks, caches, the crate's own mark)

Only the standard library and reprokit.errors are imported here, so reprokit/files.py (which reads
every stored document through `upgrade`) may import this package.
"""

from __future__ import annotations

from reprokit.formats import cell_result, ledger, others, report, run
from reprokit.formats.chain import Format, refuse_newer, upgrade_with

FORMATS: dict[str, Format] = {f.name: f for f in (run.FORMAT, cell_result.FORMAT, report.FORMAT,
                                                  ledger.FORMAT, *others.FORMATS)}


def version(name: str) -> int:
    """The current schema_version of format `name` (a key of FORMATS): what this kit writes."""
    return FORMATS[name].current


def upgrade(name: str, doc: object, where: str) -> object:
    """`doc`, a stored document of format `name`, brought to the current version (a new object; the
    argument is not changed). A document of a newer version is a UserError naming both versions; one
    whose version is missing or not a number is returned as it is, for the schema to name."""
    fmt = FORMATS.get(name)
    return doc if fmt is None else upgrade_with(fmt, doc, where)


def check_version(name: str, found: int, where: str) -> None:
    """Refuse, in one line naming both versions, a document of format `name` whose version `found` is
    newer than this kit knows (a format whose version is not a schema_version field: the crate's)."""
    refuse_newer(FORMATS[name], found, where)


__all__ = ["FORMATS", "Format", "check_version", "upgrade", "version"]
