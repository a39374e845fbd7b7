"""The one way the kit makes a rich Console: markup and highlighting off.

Everything the kit prints in tables comes from data (cell ids, stack notes, failure reasons, names
read from results files); rich markup on would read "[x, h]" in a note as a style tag and drop it,
and would let a results file restyle the terminal output. Styles are passed as arguments instead.
"""

from __future__ import annotations

from rich.console import Console


def console(**kwargs) -> Console:
    return Console(markup=False, highlight=False, **kwargs)
