"""`reproduce.py list [--suite S] [--json]`: suites, cells and the published numbers they map to."""

from __future__ import annotations

import json
import sys

from reprokit.catalog import suites
from reprokit.console import text_table


def add_arguments(p) -> None:
    p.add_argument("--suite", help="one suite (default: all)")
    p.add_argument("--json", action="store_true",
                   help="one JSON entry per published number, with the cell it maps to")


def listing(names: list[str]) -> dict:
    out = {"suites": [], "published": []}
    for name in names:
        s = suites.load_suite(name)
        cells = {c.id: c for c in s.cells}
        out["suites"].append({
            "name": s.name, "description": s.description, "sources": s.sources,
            "cells": [{"id": c.id, "stack": c.stack, "workload": c.workload,
                       "variant": c.variant, "metrics": list(c.metrics),
                       "implemented": c.implemented, "reason": c.reason,
                       "needs_gpus": c.needs_gpus, "label": c.label} for c in s.cells]})
        for n in suites.published_for_suite(s):
            c = cells.get(n["cell"])
            out["published"].append({
                "id": n["id"], "suite": s.name, "source": n["provenance"]["source"],
                "table": n["provenance"]["table"], "row_label": n["provenance"]["row_label"],
                "metric": n["metric"], "metric_as_published": n["metric_as_published"],
                "value": n["value"], "unit": n["unit"], "gpu": n["environment"]["gpu"],
                "cell": n["cell"], "cell_implemented": bool(c and c.implemented),
                "cell_reason": None if c is None else c.reason, "defects": n["defects"]})
    return out


def run(args) -> int:
    names = [args.suite] if args.suite else suites.suite_names()
    data = listing(names)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    out = []
    for s in data["suites"]:
        rows = []
        pub = [p for p in data["published"] if p["suite"] == s["name"]]
        for c in s["cells"]:
            n = sum(1 for p in pub if p["cell"] == c["id"])
            status = "implemented" if c["implemented"] else f"not run: {c['reason']}"
            if c["needs_gpus"]:
                status += f" (needs {c['needs_gpus']} GPU)"
            if c["label"]:
                lab = c["label"]
                status += (f"; {lab['kind']} ({', '.join(lab['defects'])}) beside "
                           f"{lab['as_published_cell']}")
            rows.append([c["id"], c["stack"], ", ".join(c["metrics"]), str(n), status])
        title = f"{s['name']}: {' '.join(s['description'].split())}"
        out.append(text_table(title, ["cell", "stack", "metrics", "published", "status"], rows))
        if pub:
            out.append(text_table(
                f"{s['name']}: published numbers",
                ["id", "table", "row", "metric", "value", "unit", "GPU", "cell"],
                [[p["id"], p["table"], " ".join(p["row_label"].split()), p["metric_as_published"],
                  f"{p['value']:g}", p["unit"], p["gpu"], p["cell"]] for p in pub]))
    sys.stdout.write("\n".join(out))
    return 0
