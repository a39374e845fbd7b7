"""The one way the kit makes a rich Console: markup and highlighting off, wide when not a terminal.

Everything the kit prints in tables comes from data (cell ids, stack notes, failure reasons, names
read from results files); rich markup on would read "[x, h]" in a note as a style tag and drop it,
and would let a results file restyle the terminal output. Styles are passed as arguments instead.

Written to a file or a pipe, rich would wrap every table at 80 columns (cell ids broken over six
lines); there the width is PIPE_WIDTH unless COLUMNS says otherwise.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPE_WIDTH = 200


def console(**kwargs) -> Console:
    stream = kwargs.get("file") or sys.stdout
    if "width" not in kwargs and not os.environ.get("COLUMNS"):
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        if not tty:
            kwargs["width"] = PIPE_WIDTH
    return Console(markup=False, highlight=False, **kwargs)
