"""The ledger's views, from the store alone: ledger.json (reprokit/schemas/ledger.schema.json) and
index.html (report_templates/ledger.html.j2, self-contained: inline CSS and inline SVG, no script,
nothing fetched; Jinja2's autoescape escapes every value).

What the page shows, top to bottom, each from its module, bounded whatever the store's run count
(`page`: ledger.json keeps every run, the page lists the latest few of each and counts the rest):
- the summary and the inputs this build refused;
- the claims map (reprokit/ledger/claim_map.py): per claim, its status counts on each device model,
  grouped by device class, the range of the measured speed-ups' intervals, the latest run's speed-ups
  and the latest LATEST_CLAIM runs with theirs beside the published;
- per published number: its source, published value, unit and device, a plot of its re-measurements
  by device model against the published value (reprokit/ledger/plots.py: each run, or past a dozen
  runs their distribution; kept in the store by a hash of what it draws, so a build renders only the
  plots whose data changed), per device model its runs, median, range and verdict counts, and its
  latest LATEST re-measurements (device model, GPU count, stack and whether it is the original,
  precision, kit version, run date, machine, the measured median and interval in the published
  number's unit, the verdict);
- per cell and device model (reprokit/ledger/cells.py): the runs' distribution, the percentiles of its
  latest runs from 10 runs on, the spread between units from 2 units on, the history on the same
  hardware from 2 earlier runs on; and the first UNSTABLE_MAX cells whose runs' intervals do not
  overlap (unstable);
- the MACHINES_MAX machines seen last (reprokit/ledger/machines.py): their fingerprint facts and what
  differs from the other machines of the same device model;
- the latest RUNS_MAX runs.
The views show every run in the store, not only the ones found by this build: a run once taken stays
(a new --store starts again). The same store gives the same ledger.json and index.html but for the
build's time and counts.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import statistics
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from reprokit import __version__, files, formats, validate
from reprokit.ledger import cells, claim_map, machines, stats

TEMPLATE = "ledger.html.j2"
TEMPLATES = files.REPO / "report_templates"
_MEASUREMENT = ("device", "device_model", "gpu_count", "units", "cell", "stack", "stack_kind", "hardware",
                "precision", "measured", "ci_low", "ci_high", "ci_label", "measured_unit", "n", "verdict")
_RUN = ("digest", "run_id", "form", "suite", "runner", "quick", "rejudged", "kit_version", "kit_commit",
        "started", "finished", "devices", "gpu_count", "machine", "report", "stored_report_matches")
RULES = {"percentile": stats.PERCENTILE_RULE, "units": stats.UNITS_RULE, "history": stats.HISTORY_RULE,
         "unstable": "a cell is unstable when two of its runs have intervals that do not overlap: the "
                     "runs disagree by more than either run's own interval allows"}
LATEST = 10  # measurements listed per published number and device model on the page
LATEST_CLAIM = 5  # runs listed per claim and device model, per cell's percentiles, per unstable cell
UNSTABLE_MAX = 50
MACHINES_MAX = 30
RUNS_MAX = 50
_NUMBER = ("source", "table", "row_label", "metric", "published", "unit", "published_device", "bound")


def document(store, build: dict) -> dict:
    """ledger.json: the store's runs, claims, numbers, cells and machines, and what this build did
    (`build`). A field a stored record lacks (kept by a kit that did not record it) reads as null."""
    runs = sorted(store.runs(), key=lambda r: (r.get("started") or "", r["run_id"], r["digest"]))
    by_digest = {r["digest"]: r for r in runs}
    rows = store.rows()
    numbers: dict[str, dict] = {}
    for run, row in rows:
        rec = by_digest[run]
        n = numbers.setdefault(row["number_id"], {"id": row["number_id"], **{k: row.get(k) for k in _NUMBER},
                                                   "measurements": []})
        if row.get("measured") is None:
            continue
        n["measurements"].append({"run": run[:12], "run_id": rec["run_id"],
                                  "rejudged": bool(rec.get("rejudged")),
                                  "kit_version": rec.get("kit_version"),
                                  "date": (rec.get("started") or "")[:10] or None,
                                  "machine": rec.get("machine"),
                                  **{k: row.get(k) for k in _MEASUREMENT}})
    for n in numbers.values():
        n["measurements"].sort(key=lambda m: (m["date"] or "", m["run_id"], m["run"]))
    claim_list, columns = claim_map.claims(store.claims(), by_digest)
    cell_list = cells.cells(rows, by_digest)
    return {
        "schema_version": formats.version("ledger"), "kind": "ledger", "kit_version": __version__,
        "built": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "build": build,
        "rules": RULES,
        "runs": [_run(r) for r in runs],
        "claim_columns": columns,
        "claims": claim_list,
        "numbers": [numbers[k] for k in sorted(numbers)],
        "cells": cell_list,
        "unstable": cells.unstable(cell_list),
        "machines": machines.machines(runs),
    }


def _run(r: dict) -> dict:
    """A stored run's record as ledger.json lists it (its digest shortened)."""
    out = {k: r.get(k) for k in _RUN}
    out.update(digest=r["digest"][:12], quick=bool(r.get("quick")), rejudged=bool(r.get("rejudged")),
               devices=r.get("devices") or {}, gpu_count=r.get("gpu_count") or 0,
               host_facts=machines.facts(r))
    return out


def _num(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _pct(x: Any) -> str:
    return "—" if x is None else f"{x:.0f}"


def plot_prefix(number_id: str) -> str:
    """A plot's id prefix, from its number's id alone (the same number keeps its prefix, and its cached
    plot, when other numbers come or go)."""
    return "p" + hashlib.sha256(number_id.encode()).hexdigest()[:10]


def number_plots(doc: dict, cache=None) -> tuple[dict[str, Markup], dict[str, str]]:
    """(the plot of each published number that has a measurement, by its id; the plots drawn, by their
    key: reprokit/ledger/plots.py). A plot whose key `cache` (a Store) holds is taken from it, the
    others rendered. Safe to embed: made by matplotlib and re-serialised by ElementTree, which escapes
    every text and attribute (labels come from data)."""
    from reprokit.ledger import plots

    wanted: dict[str, tuple[str, dict, str]] = {}
    for n in doc["numbers"]:
        got = plots.data(n)
        if got is not None:
            prefix = plot_prefix(n["id"])
            wanted[n["id"]] = (plots.key(got, prefix), got, prefix)
    kept = cache.plots([k for k, _, _ in wanted.values()]) if cache is not None else {}
    used: dict[str, str] = {}
    out = {}
    for number_id, (key, got, prefix) in wanted.items():
        svg = kept.get(key)
        if svg is None:
            svg = plots.render(got, prefix)
        used[key] = svg
        out[number_id] = Markup(svg)
    return out, used


def claims_map(doc: dict) -> dict:
    """The claims map's layout: the class headings (with how many model columns each spans) and, per
    claim, its device entries aligned to the columns (None where it was never looked at)."""
    cols = [(c["device_class"], c["device_model"]) for c in doc["claim_columns"]]
    groups: list[dict] = []
    for c in doc["claim_columns"]:
        if groups and groups[-1]["device_class"] == c["device_class"]:
            groups[-1]["span"] += 1
        else:
            groups.append({"device_class": c["device_class"], "label": c["class_label"], "span": 1})
    rows = []
    for claim in doc["claims"]:
        have = {(d["device_class"], d["device_model"]): d for d in claim["devices"]}
        rows.append({"claim": claim, "cells": [have.get(col) for col in cols]})
    return {"groups": groups, "rows": rows}


def _counts(values: list) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def _number_page(n: dict) -> dict:
    """A published number on the page: per device model (in the plot's order) its runs, the median and
    range of their medians and the verdicts counted, and its latest LATEST measurements."""
    from reprokit.ledger import plots

    by_model: dict[tuple, list[dict]] = {}
    for m in n["measurements"]:
        by_model.setdefault(plots._model(m), []).append(m)
    models = []
    for model in sorted(by_model, key=lambda d: (plots.CLASS_ORDER.get(d[0], 2), d[1])):
        ms = by_model[model]
        values = [m["measured"] for m in ms]
        verdicts = _counts([m["verdict"] or "not recorded" for m in ms])
        models.append({"device_model": model[1], "runs": len(ms), "median": statistics.median(values),
                       "min": min(values), "max": max(values),
                       "verdicts": ", ".join(f"{v} x{k}" for v, k in verdicts.items()),
                       "latest": ms[-LATEST:], "more": max(len(ms) - LATEST, 0)})
    return {"models": models, "more": sum(m["more"] for m in models)}


def _claim_cell(cell: dict | None, runs: dict[str, dict]) -> dict | None:
    """A claims map entry on the page: its counts and latest line, the range of its measured speed-up
    intervals, and its latest LATEST_CLAIM runs."""
    if cell is None:
        return None
    ratios = [p for s in cell["statuses"] for p in s["pairs"] if p.get("ratio") is not None]
    lows = [p["ratio_low"] if p.get("ratio_low") is not None else p["ratio"] for p in ratios]
    highs = [p["ratio_high"] if p.get("ratio_high") is not None else p["ratio"] for p in ratios]
    span = (f"measured speed-ups over {len(ratios)} pair measurement{'s' if len(ratios) != 1 else ''}: "
            f"intervals within [{min(lows):.3g}, {max(highs):.3g}]") if ratios else None
    shown = [{"run": s["run"], "status": s["status"], "rejudged": runs[s["run"]]["rejudged"],
              "date": (runs[s["run"]].get("started") or "")[:10] or None,
              "pairs": claim_map.pairs_of(cell, s)}
             for s in cell["statuses"][-LATEST_CLAIM:]]
    return {**cell, "span": span, "runs": len(cell["statuses"]), "shown": shown,
            "more": max(len(cell["statuses"]) - LATEST_CLAIM, 0)}


def page(doc: dict) -> dict:
    """What index.html lists, bounded whatever the store's run count (ledger.json keeps everything):
    per number its device models summarised and their latest LATEST measurements; per claim and device
    model the latest LATEST_CLAIM runs; per cell the percentiles of its latest LATEST_CLAIM runs; at
    most UNSTABLE_MAX unstable cells (each with at most LATEST_CLAIM of its runs), MACHINES_MAX machines
    and RUNS_MAX runs, the latest."""
    by_run = {r["digest"]: r for r in doc["runs"]}
    runs = doc["runs"][-RUNS_MAX:]
    machines_shown = sorted(doc["machines"], key=lambda m: (m["last"] or "", m["machine"]))[-MACHINES_MAX:]
    machines_shown = sorted(machines_shown, key=lambda m: m["machine"])
    unstable = []
    for u in doc["unstable"][:UNSTABLE_MAX]:
        involved = set(u["runs"])
        runs_of = [r for r in doc["cells"][u["index"]]["runs"] if r["run"] in involved]
        unstable.append({**u, "shown": runs_of[-LATEST_CLAIM:], "more": max(len(runs_of) - LATEST_CLAIM, 0)})
    return {
        "numbers": {n["id"]: _number_page(n) for n in doc["numbers"] if n["measurements"]},
        "claims": [[_claim_cell(c, by_run) for c in row["cells"]] for row in claims_map(doc)["rows"]],
        "cells": [{"percentiles": c["runs"][-LATEST_CLAIM:] if c["percentile"]["stated"] else [],
                   "more": max(len(c["runs"]) - LATEST_CLAIM, 0) if c["percentile"]["stated"] else 0}
                  for c in doc["cells"]],
        "unstable": unstable, "unstable_more": max(len(doc["unstable"]) - UNSTABLE_MAX, 0),
        "machines": machines_shown, "machines_more": len(doc["machines"]) - len(machines_shown),
        "machine_ids": {m["machine"] for m in machines_shown},
        "runs": runs, "runs_more": len(doc["runs"]) - len(runs), "run_ids": {r["digest"] for r in runs},
        "latest": LATEST, "latest_claim": LATEST_CLAIM,
    }


def html(doc: dict, svgs: dict[str, Markup] | None = None) -> str:
    """index.html of a ledger document (its plots `svgs` by number id, rendered here when not given)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, finalize=lambda v: "—" if v is None else v)
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    if svgs is None:
        svgs = number_plots(doc)[0]
    return env.get_template(TEMPLATE).render(d=doc, svgs=svgs, cmap=claims_map(doc), pg=page(doc),
                                             fact_labels=machines.LABELS)


SAMPLED_ENDS = 20


def sampled(doc):
    """`doc` with every list longer than 2 x SAMPLED_ENDS cut to its first and last SAMPLED_ENDS
    items, at every depth: what `write` validates against the schema before writing, a check against
    the kit's own bugs whose cost, on the whole document, grew with the runs (12.5 s of a 23 s build
    at 1,010 runs). The tests validate whole documents."""
    if isinstance(doc, dict):
        return {k: sampled(v) for k, v in doc.items()}
    if isinstance(doc, list):
        items = doc if len(doc) <= 2 * SAMPLED_ENDS else doc[:SAMPLED_ENDS] + doc[-SAMPLED_ENDS:]
        return [sampled(v) for v in items]
    return doc


def write(doc: dict, out: Path, cache=None) -> list[Path]:
    """ledger.json (compact) and index.html into `out`, the document's sample validated first (a
    violation is a bug); the plots taken from and kept in `cache` (the Store) when given."""
    errs = validate.errors("ledger", sampled(doc))
    if errs:
        raise ValueError(f"refusing to write the ledger: ledger schema: {errs[0]}")
    svgs, used = number_plots(doc, cache)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "ledger.json", out / "index.html"]
    files.write_text_atomic(paths[0], json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    files.write_text_atomic(paths[1], html(doc, svgs))
    if cache is not None:
        cache.keep_plots(used)
    return paths
