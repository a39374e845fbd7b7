#!/usr/bin/env python3
"""Do a run's intervals cover a re-run? Two runs of the same cells on one machine, back to back.

    python scripts/bench_rerun_coverage.py --suite legacy-2017 [--cells GLOB ...]
        [--repeat K | --design new|auto]
    python scripts/bench_rerun_coverage.py --calibrate [--quick]
    python scripts/bench_rerun_coverage.py --compare RUN_A RUN_B [--compare RUN_A RUN_B ...]

--design new runs the kit's fixed multi-process design (`run --design full`, reprokit/plan/design.py:
processes x iterations per cell from data/cell_costs.yaml; no --repeat); --design old (the default)
one process per cell, or --repeat K; --design auto the kit's default design by role (no --repeat).
Each re-run interval is widened by the first run's between-run term (its recorded history of this host,
else the device class's default: reprokit/analysis/run_level.py); --run-term default|none replaces it. Runs
made under --results see the runs already there as this host's history.
--calibrate is the calibration benchmark: source 000's PyTorch and TensorFlow cells
(legacy-2017) and source 003's PyTorch cells (stacked-lstm-2019), two runs back to back with the old
design and two with the new, reporting for each design the coverage, the intervals' half-widths, the
run-to-run drift and the runs' wall time. Intervals are those of the current analysis (steady state
detected, re-run intervals over processes: reprokit/analysis/stats.py).

The first form runs `reproduce.py run` twice with the same options (local runner, full budgets unless
--quick, no report) and compares the two; the second compares two existing runs. For every timed metric
measured in both runs (at least 2 samples on each side, same unit) it asks whether run B's median lies
inside run A's interval (reprokit.analysis.stats: one process per cell, or the interval over process
medians with --repeat K), and how far the median moved. Several --compare pairs (of one machine) are
pooled into one measurement, e.g. the pairs of two suites' calibration runs.

Prints one line per metric and a summary; with --write FILE it also records the summary with the command,
the machine and the date in FILE (reprokit/schemas/rerun_coverage.schema.json), replacing an earlier
measurement of the same kind (one process per cell, or several). The kit's report quotes
reprokit/data/rerun_coverage.json, written by this script, as the measured run-to-run spread of a machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reprokit import files, results, validate  # noqa: E402
from reprokit.analysis import cpus, devices, run_level, stats  # noqa: E402
from reprokit.reader.result import CellResult  # noqa: E402


def run_once(args: argparse.Namespace, root: Path) -> Path:
    """One `reproduce.py run`; returns its run directory (the newest under root)."""
    cmd = [sys.executable, str(REPO / "reproduce.py"), "run", "--suite", args.suite, "--runner", "local",
           "--results", str(root), "--no-report"]
    if args.cells:
        cmd += ["--cells", *args.cells]
    if getattr(args, "design", "old") == "new":
        cmd += ["--design", "full"]  # the fixed multi-process design (the default is by role)
    elif getattr(args, "design", "old") == "auto":
        pass  # the default: the design by role (deciding cells sequential, up to its processes)
    elif args.repeat > 1:
        cmd += ["--repeat", str(args.repeat)]
    else:
        cmd += ["--repeat", "1"]  # the old design, explicitly (the default is the new one)
    if args.quick:
        cmd.append("--quick")
    print("$", " ".join(cmd), flush=True)
    before = {p.name for p in root.glob("*") if p.is_dir()}
    t0 = time.monotonic()
    code = subprocess.call(cmd, cwd=REPO)
    new = sorted(p for p in root.glob("*") if p.is_dir() and p.name not in before)
    if not new:
        sys.exit(f"bench_rerun_coverage: the run made no directory under {root} (exit {code})")
    print(f"run {new[-1].name}: exit {code}, {time.monotonic() - t0:.0f} s", flush=True)
    return new[-1]


CALIBRATION = (("legacy-2017", ["000/pytorch/*", "000/tensorflow/*"]),
               ("stacked-lstm-2019", ["003/pytorch/*"]))


def wall_of(rundir: Path) -> float | None:
    w = results.RunDir(rundir).load_run().get("wall_s")
    return float(w) if isinstance(w, (int, float)) else None


def calibrate(args: argparse.Namespace) -> dict:
    """The calibration benchmark: per design (old, new), per suite two runs back to back; the
    metrics of both suites pooled into one comparison per design. Returns {design: {"summary", "runs",
    "wall_s": [run A's, run B's] summed over the suites}}."""
    out = {}
    root = Path(args.results)
    root.mkdir(parents=True, exist_ok=True)
    for design in ("old", "new"):
        rows, runs, walls = [], [], [0.0, 0.0]
        for suite, cells in CALIBRATION:
            ns = argparse.Namespace(suite=suite, cells=cells, repeat=1, quick=args.quick, design=design)
            a, b = run_once(ns, root), run_once(ns, root)
            rows += compare(a, b)["rows"]
            runs += [a.name, b.name]
            for i, r in enumerate((a, b)):
                walls[i] += wall_of(r) or 0.0
        out[design] = {"summary": summarize_rows(rows), "runs": runs, "wall_s": walls}
    return out


def cells_of(rundir: Path, process: int | None = None) -> list[dict]:
    """The run's cell results; with `process` N, each cell's process-N file instead (cells/<stem>.pN.json
    of a run of several processes per cell), read as a run of one process per cell."""
    rd = results.RunDir(rundir)
    cells = rd.load_cells()
    if process is None:
        return cells
    return [p for p in (rd.load_cell(c["cell_id"], process) for c in cells) if p is not None]


def history_for(rundir: Path, run_term: str) -> dict | None:
    """The history run_level.term reads for `run_term` (see metrics_of)."""
    return {"recorded": lambda: results.RunDir(rundir).load_run().get("history"),
            "default": lambda: {"runs": [], "cells": {}}, "none": lambda: None}[run_term]()


def device_class(cell: dict) -> str:
    return "gpu" if cell.get("device") == "gpu" else "cpu"


def term_record(rundir: Path, run_term: str) -> dict:
    """Run A's between-run term as rerun_coverage.json records it (the device class of its first ok
    cell; a run's cells share one)."""
    cls = next((device_class(c) for c in cells_of(rundir, None) if c.get("status") == "ok"), "cpu")
    t = run_level.term(history_for(rundir, run_term), cls)
    return {"run": rundir.name, "sd_log": math.sqrt(t.variance) if t.variance is not None else None,
            "df": t.df, "earlier_runs": t.runs}


def metrics_of(rundir: Path, process: int | None = None, run_term: str = "recorded"
               ) -> dict[tuple[str, str], dict]:
    """{(cell id, metric): summary} of every ok cell's metrics with at least 2 samples; each re-run
    interval widened by a between-run term (reprokit/analysis/run_level.py): `run_term` "recorded" the
    run's own (its recorded history, else the device class's default), "default" the device class's
    default as if the host had no history, "none" processes only. With the recorded history the
    within-run part is pooled with the cell's earlier runs (run_level.pooled_within)."""
    history_doc = history_for(rundir, run_term)
    out = {}
    for c in cells_of(rundir, process):
        if c.get("status") != "ok":
            continue
        term = run_level.term(history_doc, device_class(c))
        precision = devices.cell_precision(CellResult.from_doc(c))[0]
        for name, m in (c.get("metrics") or {}).items():
            if len(m.get("samples") or []) >= 2:
                own = run_level.records(history_doc, c["cell_id"], name, c.get("stack"), precision,
                                        c.get("code"))
                out[(c["cell_id"], name)] = run_level.widen(stats.summarize_metric(m), term, own)
    return out


def compare(a: Path, b: Path, process: int | None = None, run_term: str = "recorded") -> dict:
    ma, mb = metrics_of(a, process, run_term), metrics_of(b, process, run_term)
    rows = []
    for key in sorted(set(ma) & set(mb)):
        sa, sb = ma[key], mb[key]
        if sa["unit"] != sb["unit"] or not sa["median"] or sa["ci_low"] is None:
            continue
        # the interval that claims to cover a re-run: the prediction interval where there is one (3 or
        # more processes), else the cell's only interval (one process, or 2)
        lo, hi, label = ((sa["pi_low"], sa["pi_high"], sa["pi_label"]) if sa.get("pi_low") is not None
                         else (sa["ci_low"], sa["ci_high"], sa["ci_label"]))
        inside = lo <= sb["median"] <= hi
        rows.append({
            "cell": key[0], "metric": key[1], "unit": sa["unit"], "n_a": sa["n"], "n_b": sb["n"],
            "processes_a": sa["processes"], "processes_b": sb["processes"], "median_a": sa["median"],
            "median_b": sb["median"], "ci_low_a": lo, "ci_high_a": hi, "ci_label_a": label,
            "inside": inside, "shift": abs(sb["median"] / sa["median"] - 1),
            "half_width": (hi - lo) / 2 / abs(sa["median"]), "cv_a": sa["cv"],
        })
    if not rows:
        sys.exit("bench_rerun_coverage: no timed metric with an interval in both runs")
    return {"rows": rows, "summary": summarize_rows(rows)}


def summarize_rows(rows: list[dict]) -> dict:
    """The summary of compared metrics (coverage, drift, half-widths, CV, processes, labels)."""
    def q(values: list[float], p: float) -> float:
        values = sorted(values)
        return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]

    shifts = [r["shift"] for r in rows]
    halves = [r["half_width"] for r in rows]
    cvs = [r["cv_a"] for r in rows if r["cv_a"] is not None]
    labels = sorted({r["ci_label_a"] for r in rows})
    summary = {
        "pairs": len(rows), "inside": sum(r["inside"] for r in rows),
        "coverage": sum(r["inside"] for r in rows) / len(rows),
        "shift_median": statistics.median(shifts), "shift_p90": q(shifts, 0.9), "shift_max": max(shifts),
        "shift_rms": math.sqrt(statistics.fmean(s * s for s in shifts)),
        "half_width_median": statistics.median(halves),
        "half_width_over_drift": (statistics.median(halves) / statistics.median(shifts)
                                  if statistics.median(shifts) > 0 else None),
        "median_cv": statistics.median(cvs) if cvs else None,
        "processes": max(r["processes_a"] for r in rows), "interval_labels": labels,
    }
    return summary


def same_kind(m: dict, n: dict) -> bool:
    """Two measurements of the same kind of interval: one process per cell or several, and the same
    between-run term basis (a measurement without one compared the processes' own intervals)."""
    def basis(x: dict) -> str:
        return (x.get("run_term") or {}).get("basis", "none")
    return (m["summary"]["processes"] > 1) == (n["summary"]["processes"] > 1) and basis(m) == basis(n)


def max_load(rundir: Path) -> float | None:
    """The highest 1-minute load average any cell of the run saw (before or after it)."""
    loads = [x for c in results.RunDir(rundir).load_cells()
             for k in ("before", "after") for x in ((c.get("load_avg") or {}).get(k) or [])[:1]
             if isinstance(x, (int, float))]
    return max(loads) if loads else None


def machine(rundir: Path) -> str:
    host = results.RunDir(rundir).load_run().get("host_fingerprint") or {}
    return cpus.short_label(host.get("cpu") or {})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="legacy-2017")
    p.add_argument("--cells", nargs="+", default=[], metavar="GLOB")
    p.add_argument("--repeat", type=int, default=1, help="processes per cell in each run (run --repeat K)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--results", default=str(REPO / "results" / "rerun-coverage"))
    p.add_argument("--compare", nargs=2, action="append", metavar=("RUN_A", "RUN_B"),
                   help="compare two existing runs; given again, pool the metrics of several pairs (e.g. the "
                        "pairs of two suites) into one measurement")
    p.add_argument("--process", type=int, metavar="N",
                   help="with --compare of two runs of several processes per cell: compare each cell's "
                        "process N alone, as the old design's one-process intervals on the same runs")
    p.add_argument("--write", metavar="FILE", help="write the summary as JSON (rerun_coverage schema)")
    p.add_argument("--min-processes", type=int, default=1, metavar="K",
                   help="only metrics whose first run measured them in K or more processes (a design by "
                        "role measures context cells once: --min-processes 3 keeps the cells that decide, "
                        "whose prediction interval is calibrated)")
    p.add_argument("--design", choices=("old", "new", "auto"), default="old",
                   help="old: --repeat K (default 1); new: the fixed multi-process design (--design "
                        "full); auto: the kit's default design by role (no --repeat)")
    p.add_argument("--run-term", choices=("recorded", "default", "none"), default="recorded",
                   help="the between-run term of run A's re-run intervals: recorded (its history of "
                        "this host, else the device class's default), default (the class's default, as "
                        "if the host had no history), none (processes only)")
    p.add_argument("--calibrate", action="store_true",
                   help="the calibration: 000 PyTorch+TensorFlow and 003 PyTorch, old vs new design")
    args = p.parse_args(argv)
    if args.calibrate:
        res = calibrate(args)
        for design, r in res.items():
            s = r["summary"]
            print(f"{design} design: {s['inside']} of {s['pairs']} medians of the second runs inside the "
                  f"first runs' intervals ({s['coverage']:.0%}); drift {s['shift_median']:.1%} (median), "
                  f"{s['shift_p90']:.1%} (p90); intervals' median half-width {s['half_width_median']:.1%} "
                  f"({s['half_width_median'] / s['shift_median']:.2g}x the drift); processes per cell "
                  f"{s['processes']}; wall time {r['wall_s'][0]:.0f} s and {r['wall_s'][1]:.0f} s; runs "
                  f"{', '.join(r['runs'])}")
        return 0
    if args.compare:
        pairs = [(Path(x), Path(y)) for x, y in args.compare]
        command = "scripts/bench_rerun_coverage.py " + " ".join(f"--compare {a.name} {b.name}"
                                                                for a, b in pairs)
        if args.process:
            command += f" --process {args.process}"
        if args.min_processes > 1:
            command += f" --min-processes {args.min_processes}"
        if args.run_term != "recorded":
            command += f" --run-term {args.run_term}"
    else:
        root = Path(args.results)
        root.mkdir(parents=True, exist_ok=True)
        pairs = [(run_once(args, root), run_once(args, root))]
        command = "scripts/bench_rerun_coverage.py " + " ".join(argv if argv is not None else sys.argv[1:])
    machines = sorted({machine(r) for pair in pairs for r in pair})
    if len(machines) > 1:
        print(f"bench_rerun_coverage: the runs were measured on {len(machines)} machines "
              f"({'; '.join(machines)}); pool pairs of one machine", file=sys.stderr)
        return 2
    rows = [r for a, b in pairs for r in compare(a, b, args.process, args.run_term)["rows"]
            if r["processes_a"] >= args.min_processes]
    if not rows:
        print(f"bench_rerun_coverage: no metric measured in {args.min_processes} or more processes in "
              "both runs", file=sys.stderr)
        return 2
    res = {"rows": rows, "summary": summarize_rows(rows)}
    runs = [r for pair in pairs for r in pair]
    for r in res["rows"]:
        print(f"{'in ' if r['inside'] else 'OUT'} {r['cell']} {r['metric']}: A {r['median_a']:.4g} "
              f"[{r['ci_low_a']:.4g}, {r['ci_high_a']:.4g}] ({r['ci_label_a']}, n={r['n_a']}), "
              f"B {r['median_b']:.4g}: moved {r['shift']:.1%}, half-width {r['half_width']:.1%}")
    s = res["summary"]
    walls = " and ".join(f"{wall_of(r) or 0:.0f} s" for r in runs)
    loads = " and ".join(str(max_load(r)) for r in runs)
    print(f"\n{s['inside']} of {s['pairs']} medians of run B inside run A's intervals ({s['coverage']:.0%}); "
          f"medians moved {s['shift_median']:.1%} (median), {s['shift_p90']:.1%} (p90), {s['shift_max']:.1%} "
          f"(max); intervals' median half-width {s['half_width_median']:.1%}; median CV "
          f"{(s['median_cv'] or 0):.1%}; processes per cell {s['processes']}; half-width / median drift "
          f"{s['half_width_over_drift'] or float('nan'):.2f}, / rms drift "
          f"{s['half_width_median'] / s['shift_rms']:.2f}; wall {walls}; max 1-min load {loads}")
    if args.write:
        out = Path(args.write)
        doc = {"schema_version": 1, "kind": "rerun_coverage", "measurements": []}
        if out.exists():
            doc = json.loads(out.read_text())
            validate.check("rerun_coverage", doc, str(out))
        a = pairs[0][0]
        entry = {"command": command, "machine": machine(a), "date": dt.date.today().isoformat(),
                 "runs": [r.name for r in runs], "summary": s, "wall_s": [wall_of(r) for r in runs],
                 "load_1min": [max_load(r) for r in runs],
                 "design": ("new" if results.RunDir(a).load_run().get("design") and not args.process
                            else "old"),
                 "run_term": {"basis": {"recorded": "history"}.get(args.run_term, args.run_term),
                              "pairs": [term_record(a, args.run_term) for a, _ in pairs]}}
        if args.run_term == "recorded" and any(p["sd_log"] is None for p in entry["run_term"]["pairs"]):
            entry["run_term"]["basis"] = "none"  # a run A without a history or default has no term
        elif args.run_term == "recorded" and all(p["df"] == 0 for p in entry["run_term"]["pairs"]):
            entry["run_term"]["basis"] = "default"  # no run A had a usable history
        # one measurement per kind of interval (one process per cell, or several) and term basis
        doc["measurements"] = [m for m in doc["measurements"] if not same_kind(m, entry)] + [entry]
        doc["measurements"].sort(key=lambda m: m["summary"]["processes"])
        files.write_json_atomic(out, doc, "rerun_coverage")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
