"""Progress with ETA while a suite runs: a live bar on a terminal, one line per cell otherwise.

The ETA of each remaining cell process, best estimate first:
0. with `run --repeat K` or the default design, the mean time of this cell's own processes finished in
   this run, those a resumed run keeps included (a cell's processes do the same work);
1. in a run of the default design (reprokit/plan/design.py), the process time the design expects from the
   cell's recorded costs (`design_times`, data/cell_costs.yaml: start-up + iterations x iteration cost),
   scaled like 2.;
2. its own time in the newest earlier run with the same runner, --quick and protocol
   (`past_cell_times`), else its time recorded in reprokit/data/cell_times.yaml
   (`recorded_times`: measured on the project's machine, so a fresh clone's first run has an ETA),
   scaled by how this run's finished cells of the same workload compare with those times, else by the
   median of the other workloads' ratios within [1/3, 3] (a loaded or slower machine makes every cell
   slower; a workload whose record is off, e.g. recorded with another stack, rescales its own cells);
3. the mean time of this run's finished cells of the same workload;
4. the mean time of all of this run's finished cells.
So one slow word-LM cell neither hides in the ETA of a first run's last step nor, once seen,
makes every short cell look slow.

A unit of work is one process of one cell: with `run --repeat K` a suite of C cells is K x C
units (earlier times are per process, see `past_cell_times`).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from reprokit import kitdata
from reprokit.console import console
from reprokit.printable import visible

MACHINE_SCALE = (1 / 3, 3.0)  # the bounds of the ETA's machine-wide scale (Progress._scale)


def past_cell_times(root: Path, runner: str, quick: bool, protocol: str,
                    exclude: Path | None = None) -> dict[str, float]:
    """{cell id: process seconds} of the newest earlier run under root that measured that cell
    with the same runner, --quick and protocol (for the ETA only: unreadable runs are ignored).
    Seconds of one process: a `--repeat K` run's time of a cell (all K processes) is divided by K."""
    found: dict[str, tuple[str, float]] = {}
    for f in Path(root).glob("*/run.json"):
        if exclude is not None and f.parent.resolve() == Path(exclude).resolve():
            continue
        try:
            run = json.loads(f.read_text())
            if (run.get("runner"), bool(run.get("quick")), run.get("protocol")) != \
                    (runner, quick, protocol):
                continue
            started = str(run.get("started") or "")
            repeat = int(run.get("repeat") or 1)
            for e in run.get("cells") or []:
                wall = e.get("process_wall_s")
                if e.get("status") == "ok" and isinstance(wall, (int, float)) and wall > 0:
                    if e["cell_id"] not in found or found[e["cell_id"]][0] < started:
                        found[e["cell_id"]] = (started, float(wall) / repeat)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
    return {cid: wall for cid, (_, wall) in found.items()}


def recorded_times(runner: str, quick: bool, protocol: str) -> dict[str, float]:
    """{cell id: seconds per process} from reprokit/data/cell_times.yaml for runs with this --quick and
    protocol; a measurement with the same runner wins over one with another runner."""
    doc = kitdata.load("cell_times")
    same = [m for m in doc["measurements"] if m["quick"] == quick and m["protocol"] == protocol]
    out: dict[str, float] = {}
    for m in sorted(same, key=lambda m: m["runner"] == runner):  # the same runner last: it wins
        out.update(m["cells"])
    return out


def design_times(design: dict | None) -> dict[str, float]:
    """{cell id: seconds per process} the default design expects (reprokit/plan/design.py: the cell's
    recorded start-up cost + its warm-up and designed iterations x its recorded iteration cost, from
    data/cell_costs.yaml): a designed process is shorter than a one-process run's, so these win over
    the times of earlier runs of another design."""
    cells = (design or {}).get("cells") or {}
    return {cid: float(d["process_s"]) for cid, d in cells.items()
            if isinstance(d.get("process_s"), (int, float)) and d["process_s"] > 0}


def _fmt(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, cells: list, say=print, stream=None, history: dict[str, float] | None = None,
                 repeat: int = 1, kept: dict[str, list[float]] | None = None,
                 processes: dict[str, int] | None = None, deadline: float | None = None):
        """`cells`: the units of work, each a cell or a (cell, process index) pair (run --repeat K,
        process None when K = 1). `kept`: {cell id: seconds of its processes a resumed run keeps},
        which time the cell's remaining processes and, through its workload, the others'.
        `deadline`: the run's --time-limit on the epoch clock; the ETA never goes past it."""
        self.deadline = deadline
        units = [u if isinstance(u, tuple) else (u, None) for u in cells]
        self.cells = [c for c, _ in units]
        self.repeat = repeat
        self.processes = dict(processes or {})  # {cell id: its K} in a design by role
        self.history = dict(history or {})
        # {workload: [(this run, recorded) seconds per process]} of this run's finished cells
        self.pace: dict[str, list[tuple[float, float]]] = {}
        self.own: dict[str, list[float]] = {}  # cell id: seconds of its finished ok processes
        self.say = say
        self.t0 = time.monotonic()
        self.done_s: dict[str, list[float]] = {}
        self.remaining = {(c.id, p): c for c, p in units}
        self.n_done = 0
        self.stream = stream or sys.stderr
        by_id = {c.id: c for c in self.cells}
        for cid, seconds in (kept or {}).items():
            if cid in by_id:
                for s in seconds:
                    self._measured(by_id[cid], s)
        self.live = None
        if self.cells and self.stream.isatty():
            self.live = RichProgress(TextColumn("{task.description}", markup=False), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("ETA {task.fields[eta]}"),
                                     console=console(file=self.stream), transient=False)
            self.task = self.live.add_task("starting", total=len(self.cells), eta="?")
            self.live.start()

    def _scale(self, workload: str) -> float:
        """How much slower than recorded this run's finished cells of `workload` ran; for a workload
        not seen yet, the median of the seen workloads' ratios within [1/3, 3] (MACHINE_SCALE): a
        machine is rarely that much slower or faster at everything, so a larger ratio says that
        workload's record is off (e.g. recorded with another stack), not this machine."""
        ratios = {w: sum(now for now, _ in p) / sum(then for _, then in p) for w, p in self.pace.items()}
        if workload in ratios:
            return ratios[workload]
        if not ratios:
            return 1.0
        low, high = MACHINE_SCALE
        return min(high, max(low, statistics.median(ratios.values())))

    def _measured(self, cell, seconds: float) -> None:
        """One ok process of `cell` took `seconds`: its own time, and its workload's pace."""
        self.own.setdefault(cell.id, []).append(seconds)
        if cell.id in self.history:
            self.pace.setdefault(cell.workload, []).append((seconds, self.history[cell.id]))

    def eta(self) -> float | None:
        ran = [x for v in self.done_s.values() for x in v]  # processes that ran (not those left)
        overall = sum(ran) / len(ran) if ran else None
        total = 0.0
        for c in self.remaining.values():
            seen = self.done_s.get(c.workload)
            if c.id in self.own:
                total += sum(self.own[c.id]) / len(self.own[c.id])
            elif c.id in self.history:
                total += self.history[c.id] * self._scale(c.workload)
            elif seen:
                total += sum(seen) / len(seen)
            elif overall is not None:
                total += overall
            else:
                return None
        if self.deadline is not None:  # the run ends at its limit whatever is left
            total = min(total, max(0.0, self.deadline - time.time()))
        return total

    def estimate(self, cell_id: str) -> float | None:
        """Seconds one process of the cell is expected to take here: its own finished processes',
        else its recorded time scaled by this run's pace; None when neither is known."""
        if self.own.get(cell_id):
            return sum(self.own[cell_id]) / len(self.own[cell_id])
        cell = next((c for c in self.cells if c.id == cell_id), None)
        if cell is not None and cell_id in self.history:
            return self.history[cell_id] * self._scale(cell.workload)
        return None

    def _counter(self, cell, process: int | None) -> str:
        text = f"[{self.n_done + 1}/{len(self.cells)}] {cell.id}"
        if process is not None:
            text += f" (process {process} of {self.processes.get(cell.id, self.repeat)})"
        return text

    def left(self, cell, reason: str, process: int | None = None) -> None:
        """A cell (process) that will not start (--time-limit): one line under its own counter."""
        line = f"{self._counter(cell, process)}: skipped: {visible(reason)}"
        self.n_done += 1
        self.remaining.pop((cell.id, process), None)
        if self.live:
            self.live.advance(self.task)
            self.live.console.print(line)
        else:
            self.say(line)

    def start(self, cell, process: int | None = None) -> None:
        eta = self.eta()
        text = self._counter(cell, process)
        if self.live:
            self.live.update(self.task, description=text, eta=_fmt(eta) if eta is not None else "?")
        else:
            self.say(f"{text} ... (elapsed {_fmt(time.monotonic() - self.t0)}, "
                     f"ETA {_fmt(eta) if eta is not None else 'unknown'})")

    def done(self, cell, status: str, seconds: float, reason: str | None = None,
             process: int | None = None) -> None:
        self.n_done += 1
        self.remaining.pop((cell.id, process), None)
        self.done_s.setdefault(cell.workload, []).append(seconds)
        if status == "ok" and seconds > 0:
            self._measured(cell, seconds)
        reason = visible(reason) if reason else reason  # a framework's message may hold escapes
        line = f"    {status} in {seconds:.1f} s" + (f": {reason}" if reason else "")
        if self.live:
            self.live.advance(self.task)
            name = cell.id if process is None else f"{cell.id} (process {process})"
            self.live.console.print(f"{name}: {status} ({seconds:.1f} s)"
                                    + (f" {reason}" if reason else ""))
        else:
            self.say(line)

    def close(self) -> None:
        if self.live:
            self.live.stop()
