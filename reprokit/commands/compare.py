"""`reproduce.py compare RUN_A RUN_B [--json]`: what changed between two runs.

Prints the fingerprint differences (host, and per stack) and, for every cell metric measured in
both runs, the medians, their ratio B/A and a two-sided Mann-Whitney U p-value on the raw samples;
a change is flagged when p < --alpha and |B/A - 1| > --threshold. Reads only results/<run>/.
"""

from __future__ import annotations

import json
import math
import sys

from reprokit import checks
from reprokit.errors import UserError
from reprokit.reader.model import Run


def add_arguments(p) -> None:
    p.add_argument("run_a", metavar="RUN_A", help="baseline: results/<run-id>, a run id, or 'latest'")
    p.add_argument("run_b", metavar="RUN_B", help="the run compared with it")
    p.add_argument("--results", default="results", help="results root (default: results/)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--alpha", default=0.05, help="significance level, 0 < alpha < 1 (default 0.05)",
                   type=checks.option("--alpha", low=0, high=1, low_open=True, high_open=True,
                                      example="0.05"))
    p.add_argument(
        "--threshold",
        type=checks.option("--threshold", low=0, high=100, example="0.05"),
        default=0.05,
        help="smallest relative change of the median reported as a change (default 0.05)",
    )
    p.add_argument("--all", action="store_true", help="also list unchanged environment fields")


def _fmt(x, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        return f"{x:.{digits}g}"
    if isinstance(x, list):
        return ", ".join(str(v) for v in x) or "-"
    return str(x)


def _diff_table(title: str, rows: list[dict]):
    """A field / A / B table of fingerprint rows, the ones that differ highlighted."""
    from rich.table import Table

    t = Table(title=title)
    for col in ("field", "A", "B"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["field"], _fmt(r["a"]), _fmt(r["b"]), style="yellow" if r["differs"] else None)
    return t


_CHANGE_STYLE = {"faster": "green", "slower": "red"}


def _changes_table(result: dict):
    """One row per metric measured in both runs: medians, B/A, p, counts and the change."""
    from rich.table import Table

    t = Table(title=f"metric changes (significant: p < {result['alpha']:g} and |B/A - 1| > "
                    f"{result['threshold']:.0%})")
    for col in ("cell", "metric", "unit", "median A", "median B", "B/A", "p", "n A/B", "change"):
        t.add_column(col, justify="right" if col in ("median A", "median B", "B/A", "p") else "left",
                     overflow="fold")
    for c in result["changes"]:
        verdict = c["direction"] or ("-" if c["p_value"] is not None else "no test")
        style = _CHANGE_STYLE.get(c["direction"]) or ("yellow" if c["significant"] else None)
        t.add_row(c["cell_id"], c["metric"], c["unit"] or "", _fmt(c["median_a"]), _fmt(c["median_b"]),
                  _fmt(c["ratio"], 3), _fmt(c["p_value"], 2), f"{c['n_a']}/{c['n_b']}", verdict,
                  style=style)
    return t


def _print(result: dict, show_all: bool) -> None:
    from reprokit.console import console

    con = console()
    con.print(f"compare A = {result['run_a']}  ->  B = {result['run_b']}", style="bold")
    rows = [r for r in result["host_diff"] if show_all or r["differs"]]
    if rows:
        con.print(_diff_table("host fingerprint" + ("" if show_all else " (differences only)"), rows))
    else:
        con.print("host fingerprint: no differences in the compared fields")
    for cid, nd in (result.get("node_diff") or {}).items():  # cells on other machines (Slurm)
        where = f"{cid}: ran on {nd['node_a']} (A) and {nd['node_b']} (B)"
        if nd["rows"]:
            con.print(_diff_table(where, [{**r, "differs": True} for r in nd["rows"]]))
        else:
            con.print(f"{where}, no differences in the compared fields")
    for stack, srows in result["stack_diff"].items():
        srows = [r for r in srows if show_all or r["differs"]]
        if srows:
            con.print(_diff_table(f"stack {stack}", srows))
        else:
            con.print(f"stack {stack}: no differences in the compared fields")
    con.print(_changes_table(result))
    for key, label in (("only_in_a", "only in A"), ("only_in_b", "only in B")):
        if result[key]:
            con.print(f"{label}: {', '.join(result[key])}")
    for n in result["not_ok"]:
        con.print(f"not compared: {n['cell_id']} (A {n['status_a']}, B {n['status_b']})")
    s = result["summary"]
    con.print(
        f"{s['compared']} metrics compared, {s['significant']} changed significantly "
        f"({s['faster']} faster, {s['slower']} slower)"
    )


def load(arg: str, root) -> Run:
    """A run, for comparison: every result file must be valid (a damaged one is refused, not listed
    as the report lists it). Whatever the reader raises on a damaged run (unreadable or invalid JSON,
    a schema violation, a sample that is not a finite number >= 0) is one line naming the run and the
    fix (exit 2), never an internal error."""
    from reprokit import results
    from reprokit.reader.load import load as load_run

    rundir = results.resolve_run(arg, root)
    try:
        for c in rundir.load_cells():
            checks.samples_ok(c, str(rundir.cells_dir / results.cell_filename(c["cell_id"])))
        return load_run(rundir)
    except UserError as e:
        fix = "" if "; " in str(e) else ("; move the file aside and re-measure its cell with "
                                         f"`reproduce.py run --suite SUITE --resume {arg}`")
        raise UserError(f"cannot compare {arg}: {e}{fix}") from None
    except (OSError, ValueError, TypeError, KeyError) as e:  # a reader's own error on a bad file
        raise UserError(f"cannot compare {arg}: {rundir.path} is unreadable ({type(e).__name__}: "
                        f"{e}); check the run with `reproduce.py report {rundir.path}`") from None


def run(args) -> int:
    from pathlib import Path

    from reprokit import results
    from reprokit.analysis.compare_runs import compare_runs

    root = Path(args.results)
    ra, rb = results.resolve_run(args.run_a, root), results.resolve_run(args.run_b, root)
    if ra.path.resolve() == rb.path.resolve():
        raise UserError(f"RUN_A and RUN_B are the same run ({ra.path}); compare two different runs")
    run_a, run_b = load(args.run_a, root), load(args.run_b, root)
    if run_a.suite != run_b.suite:
        raise UserError(f"RUN_A is a run of suite {run_a.suite} and RUN_B of suite {run_b.suite}: two "
                        "suites share no cell, so nothing can be compared; compare two runs of one suite")
    result = compare_runs(run_a, run_b, alpha=args.alpha, threshold=args.threshold)
    if args.json:
        print(json.dumps(result, indent=1, default=str))
    else:
        _print(result, args.all)
    if not result["summary"]["compared"]:  # nothing measured in both: not a comparison
        print(f"reproduce.py: no metric was measured in both runs ({len(result['only_in_a'])} cells "
              f"only in A, {len(result['only_in_b'])} only in B, {len(result['not_ok'])} not ok in "
              "one of them); compare two runs that measured the same cells", file=sys.stderr)
        return 1
    return 0
