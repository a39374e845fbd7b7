"""The ledger's views, from the store alone: ledger.json (reprokit/schemas/ledger.schema.json) and
index.html (report_templates/ledger.html.j2, self-contained: inline CSS, no script, nothing fetched;
Jinja2's autoescape escapes every value).

Per published number: its source, published value, unit and device, and every re-measurement in the
store (device model, GPU count, stack and whether it is the original, precision, kit version, run
date, the measured median and interval, the verdict). Per claim: its status on each device model, run
by run. The views show every run in the store, not only the ones found by this build: a run once
taken stays (a new --store starts again). No plots in this version.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import jinja2

from reprokit import __version__, files, formats, validate

TEMPLATE = "ledger.html.j2"
TEMPLATES = files.REPO / "report_templates"
_MEASUREMENT = ("device", "device_model", "gpu_count", "units", "cell", "stack", "stack_kind", "hardware",
                "precision", "measured", "ci_low", "ci_high", "ci_label", "measured_unit", "n", "verdict")
_RUN = ("digest", "run_id", "form", "suite", "runner", "quick", "rejudged", "kit_version", "kit_commit",
        "started", "finished", "devices", "gpu_count", "machine", "report", "stored_report_matches")
_NUMBER = ("source", "table", "row_label", "metric", "published", "unit", "published_device", "bound")


def document(store, build: dict) -> dict:
    """ledger.json: the store's runs, numbers and claims, and what this build did (`build`). A field a
    stored record lacks (kept by a kit that did not record it) reads as null."""
    runs = sorted(store.runs(), key=lambda r: (r.get("started") or "", r["run_id"], r["digest"]))
    by_digest = {r["digest"]: r for r in runs}
    numbers: dict[str, dict] = {}
    for run, row in store.rows():
        rec = by_digest[run]
        n = numbers.setdefault(row["number_id"], {"id": row["number_id"], **{k: row.get(k) for k in _NUMBER},
                                                   "measurements": []})
        if row.get("measured") is None:
            continue
        n["measurements"].append({"run": run[:12], "run_id": rec["run_id"],
                                  "rejudged": bool(rec.get("rejudged")),
                                  "kit_version": rec.get("kit_version"),
                                  "date": (rec.get("started") or "")[:10] or None,
                                  **{k: row.get(k) for k in _MEASUREMENT}})
    for n in numbers.values():
        n["measurements"].sort(key=lambda m: (m["date"] or "", m["run_id"], m["run"]))
    claims: dict[str, dict] = {}
    for run, c in store.claims():
        rec = by_digest[run]
        entry = claims.setdefault(c["claim_id"], {"id": c["claim_id"], "source": c.get("source"),
                                                  "text": c.get("text"), "devices": {}})
        for model in c.get("devices") or ["(no device recorded)"]:
            entry["devices"].setdefault(model, []).append(
                {"run": run[:12], "run_id": rec["run_id"], "date": (rec.get("started") or "")[:10] or None,
                 "status": c.get("status")})
    claim_list = [{**c, "devices": [{"device_model": m, "statuses": sorted(s, key=lambda x: (x["date"] or "",
                                                                                               x["run_id"]))}
                                    for m, s in sorted(c["devices"].items())]}
                  for _, c in sorted(claims.items())]
    return {
        "schema_version": formats.version("ledger"), "kind": "ledger", "kit_version": __version__,
        "built": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "build": build,
        "runs": [_run(r) for r in runs],
        "numbers": [numbers[k] for k in sorted(numbers)],
        "claims": claim_list,
    }


def _run(r: dict) -> dict:
    """A stored run's record as ledger.json lists it (its digest shortened)."""
    out = {k: r.get(k) for k in _RUN}
    out.update(digest=r["digest"][:12], quick=bool(r.get("quick")), rejudged=bool(r.get("rejudged")),
               devices=r.get("devices") or {}, gpu_count=r.get("gpu_count") or 0)
    return out


def _num(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def html(doc: dict) -> str:
    """index.html of a ledger document."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, finalize=lambda v: "—" if v is None else v)
    env.filters["num"] = _num
    return env.get_template(TEMPLATE).render(d=doc)


def write(doc: dict, out: Path) -> list[Path]:
    """ledger.json and index.html into `out`, the document validated first (a violation is a bug)."""
    errs = validate.errors("ledger", doc)
    if errs:
        raise ValueError(f"refusing to write the ledger: ledger schema: {errs[0]}")
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "ledger.json", out / "index.html"]
    files.write_text_atomic(paths[0], json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    files.write_text_atomic(paths[1], html(doc))
    return paths
