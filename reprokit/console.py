"""The one way the kit makes a rich Console: markup and highlighting off, wide when not a terminal.

Everything the kit prints in tables comes from data (cell ids, stack notes, failure reasons, names
read from results files); rich markup on would read "[x, h]" in a note as a style tag and drop it,
and would let a results file restyle the terminal output. Styles are passed as arguments instead.

Written to a file or a pipe, rich would wrap every table at 80 columns (cell ids broken over six
lines); there the width is PIPE_WIDTH unless COLUMNS says otherwise.

`text_table` lays out a long table as plain aligned columns, without rich: `reproduce.py list` prints
hundreds of rows, which rich takes a third of a second to measure and wrap.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

PIPE_WIDTH = 200


def _one_line(value: str) -> str:
    """A table cell on one line: control characters, tab and newline too, shown as escapes."""
    from reprokit.printable import visible

    return visible(str(value)).replace("\t", "\\t").replace("\n", "\\n")


def text_table(title: str, columns: list[str], rows: list[list[str]]) -> str:
    """A title line, a header, a rule and one line per row, columns padded to their widest value
    (two spaces apart, nothing wrapped or cut); ends with a newline."""
    rows = [[_one_line(v) for v in r] for r in rows]  # a newline in an id would break the columns
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    out = [title, line(columns), line(["-" * w for w in widths]), *(line(r) for r in rows)]
    return "\n".join(out) + "\n"


def console(**kwargs) -> Console:
    from rich.console import Console
    stream = kwargs.get("file") or sys.stdout
    if "width" not in kwargs and not os.environ.get("COLUMNS"):
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        if not tty:
            kwargs["width"] = PIPE_WIDTH
    return Console(markup=False, highlight=False, **kwargs)
