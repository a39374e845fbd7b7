#!/usr/bin/env python3
"""The device class's default between-run term (reprokit/data/run_variation.yaml): the estimator of
reprokit/analysis/run_level.py applied to a set of runs of one machine, each cell's runs pooled.

    python scripts/run_variation_default.py --class cpu docs/calibration/*/ [--write]

Also replays the runs in time order: run j's median against run j-1's re-run interval widened with
the term the runs before j-1 give (what run j-1 would have recorded as its history; its process
spread pooled with the cell's records there), with the class's default, and with none (processes only).
With --write the class's entry is replaced, with the command, machine, date and runs."""

from __future__ import annotations

import argparse
import datetime as dt
import math
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reprokit import files, kitdata  # noqa: E402
from reprokit.analysis import devices, run_level, stats  # noqa: E402
from reprokit.reader.frozen import thaw  # noqa: E402
from reprokit.reader.load import load  # noqa: E402
from reprokit.run import host_history  # noqa: E402


def _machine(run) -> str:
    cpu = run.host.get("cpu") or {}
    name = cpu.get("model_name") or cpu.get("vendor") or "unknown CPU"
    return (f"{name} (family {cpu.get('family')} model {cpu.get('model')}), "
            f"{cpu.get('usable_cores') or '?'} cores, host {run.host.get('host_id')}")


def _shown(runs: list[Path]) -> str:
    """The runs as a shell glob where they are all the runs of one folder, else listed."""
    parents = {p.resolve().parent for p in runs}
    if len(parents) == 1:
        parent = parents.pop()
        if len(runs) == sum(1 for p in parent.iterdir() if (p / "run.json").is_file()):
            return f"{Path(runs[0]).parent}/*/"
    return " ".join(str(p) for p in runs)


def coverage(paths: list[Path], fingerprint: Mapping, kind: str) -> dict:
    """Replay the runs in time order: run j's median against run j-1's re-run interval, widened with
    the term of the history of the runs before j (what run j-1 would have recorded), with the class's
    default term, and with none (processes only)."""
    from reprokit.analysis.verdicts import load_policy

    skip = set(load_policy()["claims"]["compile_metrics"])
    default = run_level.term({"runs": [], "cells": {}}, kind)
    none = run_level.RunTerm(None, 0, "none", 0, 0, "")
    tally = {name: {"pairs": 0, "inside": 0, "halves": []} for name in ("history", "default", "none")}
    drifts = []
    runs = [load(p) for p in paths]
    for j in range(2, len(paths)):
        hist = host_history.from_runs(list(reversed(paths[: j - 1])), fingerprint, None)
        terms = {"history": run_level.term(hist, kind), "default": default, "none": none}
        prev, nxt = runs[j - 1], runs[j]
        for cell in prev.cell_results():
            other = nxt.result(cell.cell_id)
            if other is None or not cell.measured or not other.measured:
                continue
            for name, metric in cell.metrics.items():
                m2 = other.metrics.get(name)
                if name in skip or not m2 or not metric.get("samples") or not m2.get("samples"):
                    continue
                a0 = stats.summarize_metric(thaw(metric))
                b = stats.summarize_metric(thaw(m2))
                if a0.get("pi_low") is None or not b.get("median"):
                    continue
                drifts.append(abs(math.log(b["median"] / a0["median"])))
                entry = prev.entry(cell.cell_id)
                own = run_level.records(hist, cell.cell_id, name, entry.stack if entry else None,
                                        devices.cell_precision(cell)[0], cell.code)
                for label, term in terms.items():
                    if label == "history" and term.basis != "history":
                        continue
                    a = run_level.widen(a0, term, own if label == "history" else ())
                    t = tally[label]
                    t["pairs"] += 1
                    t["inside"] += a["pi_low"] <= b["median"] <= a["pi_high"]
                    t["halves"].append(math.log(a["pi_high"] / a["pi_low"]) / 2)
    drift = statistics.median(drifts) if drifts else None
    return {label: {"pairs": t["pairs"], "inside": t["inside"],
                    "coverage": t["inside"] / t["pairs"] if t["pairs"] else None,
                    "half_width_median": statistics.median(t["halves"]) if t["halves"] else None,
                    "drift_median": drift}
            for label, t in tally.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--class", dest="kind", choices=("cpu", "gpu"), required=True)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    paths = sorted(args.runs, key=lambda p: p.name.rstrip("/"))
    first = load(paths[0])
    host_id = first.host.get("host_id")
    hist = host_history.from_runs(list(reversed(paths)), first.host, None, limit=len(paths))
    got = run_level.estimate(hist)
    if got is None:
        print("no cell has 2 or more runs: nothing to estimate", file=sys.stderr)
        return 2
    b, df, cells = got
    print(f"host {host_id}: {len(hist['runs'])} runs, {cells} cells, between-run sd (log) "
          f"{math.sqrt(b):.4f} ({100 * (math.exp(math.sqrt(b)) - 1):.2f} %), {df} df")
    for label, c in coverage(paths, first.host, args.kind).items():
        if c["pairs"]:
            print(f"replayed in time order, {label} term: {c['inside']}/{c['pairs']} next-run medians inside "
                  f"the re-run interval ({100 * c['coverage']:.1f} %); median half-width "
                  f"{c['half_width_median']:.4f} = {c['half_width_median'] / c['drift_median']:.2f}x the "
                  f"median drift {c['drift_median']:.4f} (log)")
    if args.write:
        path = REPO / "reprokit" / "data" / "run_variation.yaml"
        text = path.read_text()
        doc = kitdata.load("run_variation")
        doc["classes"][args.kind] = {
            "sd_log": round(math.sqrt(b), 5),
            "measured": {"command": "python scripts/run_variation_default.py --class "
                                    f"{args.kind} {_shown(args.runs)} --write",
                         "machine": _machine(first), "date": dt.date.today().isoformat(),
                         "runs": hist["runs"], "cells": cells, "df": df}}
        import yaml
        head = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
        files.write_text_atomic(path, head + yaml.safe_dump(doc, sort_keys=False, width=100))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
