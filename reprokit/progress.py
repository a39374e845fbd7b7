"""Progress with ETA while a suite runs: a live bar on a terminal, one line per cell otherwise.

The ETA weights each remaining cell by a rough cost (its metric count times its budgeted samples,
scaled by what cells of the same workload took so far), so one slow word-LM cell does not make
every short cell look slow.
"""

from __future__ import annotations

import sys
import time

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from reprokit.console import console


def _fmt(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, cells: list, say=print, stream=None):
        self.cells = list(cells)
        self.say = say
        self.t0 = time.monotonic()
        self.done_s: dict[str, list[float]] = {}
        self.remaining = {c.id: c for c in self.cells}
        self.n_done = 0
        self.stream = stream or sys.stderr
        self.live = None
        if self.cells and self.stream.isatty():
            self.live = RichProgress(TextColumn("{task.description}", markup=False), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("ETA {task.fields[eta]}"),
                                     console=console(file=self.stream), transient=False)
            self.task = self.live.add_task("starting", total=len(self.cells), eta="?")
            self.live.start()

    def eta(self) -> float | None:
        if not self.done_s:
            return None
        overall = sum(sum(v) for v in self.done_s.values()) / max(1, self.n_done)
        total = 0.0
        for c in self.remaining.values():
            seen = self.done_s.get(c.workload)
            total += (sum(seen) / len(seen)) if seen else overall
        return total

    def start(self, cell) -> None:
        eta = self.eta()
        text = f"[{self.n_done + 1}/{len(self.cells)}] {cell.id}"
        if self.live:
            self.live.update(self.task, description=text, eta=_fmt(eta) if eta is not None else "?")
        else:
            self.say(f"{text} ... (elapsed {_fmt(time.monotonic() - self.t0)}, "
                     f"ETA {_fmt(eta) if eta is not None else 'unknown'})")

    def done(self, cell, status: str, seconds: float, reason: str | None = None) -> None:
        self.n_done += 1
        self.remaining.pop(cell.id, None)
        self.done_s.setdefault(cell.workload, []).append(seconds)
        line = f"    {status} in {seconds:.1f} s" + (f": {reason}" if reason else "")
        if self.live:
            self.live.advance(self.task)
            self.live.console.print(f"{cell.id}: {status} ({seconds:.1f} s)"
                                    + (f" {reason}" if reason else ""))
        else:
            self.say(line)

    def close(self) -> None:
        if self.live:
            self.live.stop()
