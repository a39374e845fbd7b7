"""Per cell and device model: the runs' distribution, the spread between units, the history, instability.

The distribution of the runs, the spread between units, the history on the same hardware, and the
cells whose runs disagree beyond their intervals.

A series is every stored run's value of one (cell, metric, unit and multiple of the published number,
device model, stack, precision): the published numbers that read one cell's metric at one scale share
it (their `numbers`). A run counts once per series: the same run stored twice (a run and its copy
rejudged with newer data, which holds the same samples) is one run, the original kept. A run's value
is its median in the published number's unit, with its interval.

Per series (thresholds and estimators: reprokit/ledger/stats.py):
- `n_runs`, `min`, `median`, `max` of the runs' medians;
- `percentile`: each run's percentile from 10 runs in the reference distribution on, outliers beyond 3
  standard deviations left out of it (Phoronix Test Suite / OpenBenchmarking.org);
- `between_units`: the spread between distinct units from 2 units on (a unit: the row's GPUs, by their
  salted UUID hashes, or for a CPU row the run's machine id);
- `history`: the latest run against the earlier ones, stated from 2 earlier runs on (Conbench);
- `disjoint`: the pairs of runs whose intervals do not overlap (their count, the runs in any of them,
  and the first `DISJOINT_LISTED` pairs: their number grows with the square of the runs); a series with
  one is listed `unstable`.
"""

from __future__ import annotations

import statistics

from reprokit.ledger import stats

KEY = ("cell", "metric", "unit", "scale", "device", "device_model", "stack", "precision")
DISJOINT_LISTED = 20


def _sortable(key: tuple) -> tuple:
    """A key that sorts whatever its fields hold (None last, numbers apart from strings)."""
    return tuple((v is None, type(v).__name__, 0 if v is None else v) for v in key)


def unit_of(row: dict, run: dict) -> str | None:
    """The unit a row was measured on: its GPUs (their salted hashes joined by '+') for a GPU row
    that recorded them, else the run's machine id (a CPU row, or GPUs without UUIDs)."""
    if row.get("device") == "gpu" and row.get("units"):
        return "+".join(row["units"])
    return run.get("machine")


def _run_entry(digest: str, row: dict, run: dict) -> dict:
    return {"run": digest[:12], "run_id": run["run_id"], "started": run.get("started"),
            "date": (run.get("started") or "")[:10] or None, "rejudged": bool(run.get("rejudged")),
            "machine": run.get("machine"), "unit": unit_of(row, run), "measured": row["measured"],
            "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"), "n": row.get("n"),
            "percentile": None, "outlier": False}


def series(rows: list[tuple[str, dict]], runs: dict[str, dict]) -> dict[tuple, dict]:
    """The stored rows with a measurement grouped into series (KEY), each run once, oldest first (by
    its start, then run id), with the ids of the numbers that read it."""
    groups: dict[tuple, dict] = {}
    for digest, row in rows:
        if row.get("measured") is None:
            continue
        key = tuple(row.get(k) for k in KEY)
        g = groups.setdefault(key, {"numbers": set(), "runs": {}})
        g["numbers"].add(row["number_id"])
        run = runs[digest]
        same = (run["run_id"], run.get("machine"))
        have = g["runs"].get(same)
        mine = (bool(run.get("rejudged")), digest)
        if have is None or mine < (have["rejudged"], have["_digest"]):
            g["runs"][same] = {**_run_entry(digest, row, run), "_digest": digest}
    for g in groups.values():
        ordered = sorted(g["runs"].values(), key=lambda r: (r["started"] or "", r["run_id"], r["_digest"]))
        g["runs"] = [{k: v for k, v in r.items() if k != "_digest"} for r in ordered]
        g["numbers"] = sorted(g["numbers"])
    return groups


def one(key: tuple, numbers: list[str], runs: list[dict]) -> dict:
    """One series' entry of ledger.json `cells` (the module doc), from its runs oldest first."""
    values = [r["measured"] for r in runs]
    pct = stats.percentiles(values)
    runs = [{**r, "percentile": rank, "outlier": i in pct["excluded"]}
            for i, (r, rank) in enumerate(zip(runs, pct["ranks"]))]
    per_unit: dict[str, list[float]] = {}
    for r in runs:
        if r["unit"]:
            per_unit.setdefault(r["unit"], []).append(r["measured"])
    units = stats.between_units(per_unit)
    unknown = sum(1 for r in runs if not r["unit"])
    if unknown:
        units["text"] += f" ({unknown} run{'s' if unknown != 1 else ''} without a known unit left out)"
    pairs = stats.disjoint_pairs(runs)
    in_pairs = {i for pair in pairs for i in pair}
    return {
        **dict(zip(KEY, key)), "numbers": numbers, "runs": runs, "n_runs": len(runs),
        "min": min(values), "median": statistics.median(values), "max": max(values),
        "percentile": {"stated": pct["stated"], "reference_runs": pct["reference_runs"],
                       "excluded_runs": [runs[i]["run"] for i in pct["excluded"]], "text": pct["text"]},
        "between_units": units,
        "history": stats.history(runs),
        "disjoint": {"count": len(pairs), "runs": [runs[k]["run"] for k in sorted(in_pairs)],
                     "pairs": [[runs[i]["run"], runs[j]["run"]] for i, j in pairs[:DISJOINT_LISTED]]},
    }


def cells(rows: list[tuple[str, dict]], runs: dict[str, dict]) -> list[dict]:
    """ledger.json `cells`: every series (the module doc), in the order of their keys."""
    groups = series(rows, runs)
    return [one(k, groups[k]["numbers"], groups[k]["runs"]) for k in sorted(groups, key=_sortable)]


def unstable(entries: list[dict]) -> list[dict]:
    """ledger.json `unstable`: the series with two runs whose intervals do not overlap, each with its
    index in `entries`, the runs that take part in such a pair (by short digest: their values are the
    series' runs) and how many pairs (the first of them: the series' `disjoint`)."""
    out = []
    for i, c in enumerate(entries):
        n = c["disjoint"]["count"]
        if not n:
            continue
        out.append({**{k: c[k] for k in KEY}, "index": i, "numbers": c["numbers"],
                    "runs": list(c["disjoint"]["runs"]), "pair_count": n,
                    "text": f"{n} pair{'s' if n != 1 else ''} of runs whose intervals do not overlap, "
                            f"among {c['n_runs']} runs"})
    return out
