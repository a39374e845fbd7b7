"""A run's results as pandas tables: one call each, for notebooks and scripts.

```python
from reprokit import results
from reprokit.analysis import frames
from reprokit.reader.load import load
run = load(results.resolve_run("latest"))
frames.cells_frame(run)     # one row per (cell, metric) with median, n, unit
frames.samples_frame(run)   # one row per raw timed sample
```

The only module of the kit that imports pandas.
"""

from __future__ import annotations

import pandas as pd

from reprokit.reader.model import Run
from reprokit.reader.result import CellResult


def sample_processes(metric: dict, cell: CellResult | None = None) -> list[int]:
    """The process index (1..K) of each of a metric's samples: 1 for all of them unless the
    result was merged from `run --repeat K` processes (metric `processes` = samples per ok
    process, in index order; the cell's `processes` entries say which indices were ok)."""
    counts = metric.get("processes")
    if not counts:
        return [1] * len(metric["samples"])
    ok = [e.index for e in (cell.processes if cell is not None else ()) if e.status == "ok"]
    indices = ok if len(ok) == len(counts) else list(range(1, len(counts) + 1))
    return [i for i, n in zip(indices, counts) for _ in range(n)]


def cells_frame(run: Run) -> pd.DataFrame:
    """One row per (cell, metric): median, sample count, unit, status; `repeat` is the number of
    processes the cell ran in (`run --repeat K`, else 1)."""
    rows = []
    for c in run.cell_results():
        base = {"cell_id": c.cell_id, "stack": c.stack, "status": c.status,
                "reason": c.reason, "wall_s": c.wall_s, "repeat": c.repeat or 1}
        if not c.metrics:
            rows.append({**base, "metric": None})
        for name, m in c.metrics.items():
            s = pd.Series(m["samples"], dtype=float)
            rows.append({**base, "metric": name, "unit": m["unit"], "n": len(s),
                         "median": s.median(), "mean": s.mean(), "min": s.min(), "max": s.max()})
    return pd.DataFrame(rows)


def samples_frame(run: Run) -> pd.DataFrame:
    """One row per raw sample: cell, metric, index, value, raw seconds, and the process it came
    from (`run --repeat K`: 1..K; 1 for a single-process cell)."""
    rows = []
    for c in run.cell_results():
        for name, m in c.metrics.items():
            raw = m["raw_seconds"] or [None] * len(m["samples"])
            procs = sample_processes(m, c)
            for i, (v, r, p) in enumerate(zip(m["samples"], raw, procs)):
                rows.append({"cell_id": c.cell_id, "metric": name, "i": i, "value": v,
                             "raw_seconds": r, "unit": m["unit"], "process": p})
    return pd.DataFrame(rows)
