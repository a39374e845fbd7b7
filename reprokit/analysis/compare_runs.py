"""Compare two runs: what changed in the environment, and which cell metrics changed significantly.

Pure: two run records and their cell results in, one dict out. For every (cell, metric) present in
both runs the medians, their ratio (B / A) and a two-sided Mann-Whitney U test on the raw samples are
reported (scipy.stats.mannwhitneyu; asv uses the same test to call a benchmark change real). A change
is `significant` when p < alpha (default 0.05) AND |B/A - 1| > threshold (default 0.05): a tiny but
consistent shift is not reported as a change, and neither is a large but noisy one.
"""

from __future__ import annotations

from scipy import stats as sps

from reprokit.analysis import diff, stats, verdicts
from reprokit.reader.model import Run
from reprokit.reader.result import CellResult

DEFAULT_ALPHA = 0.05
DEFAULT_THRESHOLD = 0.05


def mann_whitney_p(a: list[float], b: list[float]) -> float | None:
    """Two-sided Mann-Whitney U p-value, or None when either side has fewer than 2 samples."""
    if len(a) < 2 or len(b) < 2:
        return None
    if len(set(a) | set(b)) == 1:
        return 1.0
    return float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def metric_change(
    a: dict, b: dict, alpha: float = DEFAULT_ALPHA, threshold: float = DEFAULT_THRESHOLD
) -> dict:
    """The change of one metric from run A to run B (both metric dicts of cell results)."""
    sa, sb = stats.summarize_metric(a), stats.summarize_metric(b)
    unit = a.get("unit")
    xb = list(b.get("samples") or [])
    note = None
    if b.get("unit") != unit:
        try:
            xb = [verdicts.convert(x, b["unit"], unit) for x in xb]
            sb = stats.summarize(xb, b.get("stop_reason"))
            note = f"B converted from {b['unit']} to {unit}"
        except ValueError as e:
            return {
                "unit": unit,
                "median_a": sa["median"],
                "median_b": sb["median"],
                "ratio": None,
                "change": None,
                "p_value": None,
                "significant": False,
                "direction": None,
                "n_a": sa["n"],
                "n_b": sb["n"],
                "note": f"units differ: {e}",
            }
    ratio = sb["median"] / sa["median"] if sa["median"] and sb["median"] is not None else None
    change = ratio - 1 if ratio is not None else None
    p = mann_whitney_p(list(a.get("samples") or []), xb)
    significant = p is not None and change is not None and p < alpha and abs(change) > threshold
    direction = None
    if significant:
        better = verdicts.better_direction(unit or "")
        up = change > 0
        if better is None:
            direction = "higher" if up else "lower"
        elif verdicts.is_speed(unit):
            direction = "faster" if up == (better == "higher") else "slower"
        else:
            direction = "higher" if up else "lower"
    if p is None:
        note = "; ".join(x for x in (note, "fewer than 2 samples on a side: no test") if x)
    return {
        "unit": unit,
        "median_a": sa["median"],
        "median_b": sb["median"],
        "ci_a": [sa["ci_low"], sa["ci_high"]],
        "ci_b": [sb["ci_low"], sb["ci_high"]],
        "ratio": ratio,
        "change": change,
        "p_value": p,
        "significant": significant,
        "direction": direction,
        "n_a": sa["n"],
        "n_b": sb["n"],
        "noisy_a": sa["noisy"],
        "noisy_b": sb["noisy"],
        "note": note,
    }


def _node_of(run: Run, cell: CellResult) -> tuple[str | None, dict]:
    """(node name, fingerprint) of the machine a cell ran on: its Slurm node's, recorded by the
    task (reprokit/runners/slurm_task.py), else the run's host (local and Docker runners)."""
    r = cell.runner
    if r.get("node_fingerprint"):
        return r.get("node"), r["node_fingerprint"]
    return "the run's host", run.host


def node_diff(run_a: Run, run_b: Run, common: list[str]) -> dict:
    """Cells that ran on different machines in the two runs (a run on a Slurm cluster spans
    nodes): {cell id: {"node_a", "node_b", "rows": the differing host fields}}; cells of two
    runs that each ran on their driver's host are left to host_diff."""
    out = {}
    for cid in common:
        ca, cb = run_a.results[cid], run_b.results[cid]
        if not (ca.runner.get("node_fingerprint") or cb.runner.get("node_fingerprint")):
            continue
        (na, fa), (nb, fb) = _node_of(run_a, ca), _node_of(run_b, cb)
        rows = [r for r in diff.host_diff(fa, fb) if r["differs"]]
        if rows or na != nb:
            out[cid] = {"node_a": na, "node_b": nb, "rows": rows}
    return out


def compare_runs(run_a: Run, run_b: Run, alpha: float = DEFAULT_ALPHA,
                 threshold: float = DEFAULT_THRESHOLD) -> dict:
    """Fingerprint diff (host and per stack) and per-metric changes from run A to run B.

    Returns {"run_a", "run_b", "alpha", "threshold", "host_diff": [{"field", "a", "b", "differs"}],
    "stack_diff": {stack: [...]}, "changes": [{"cell_id", "metric", "unit", "median_a", "median_b",
    "ratio", "change", "p_value", "significant", "direction", ...}], "only_in_a", "only_in_b",
    "not_ok": [{"cell_id", "status_a", "status_b"}], "summary": {"compared", "significant", "faster",
    "slower"}}.
    """
    by_a = {c.cell_id: c for c in run_a.cell_results()}
    by_b = {c.cell_id: c for c in run_b.cell_results()}
    common = [cid for cid in by_a if cid in by_b]
    stacks: dict[str, list[dict]] = {}
    for cid in common:
        st = by_a[cid].stack
        if st not in stacks and by_a[cid].stack_fingerprint and by_b[cid].stack_fingerprint:
            stacks[st] = diff.stack_diff(by_a[cid], by_b[cid])
    changes, not_ok = [], []
    for cid in common:
        ca, cb = by_a[cid], by_b[cid]
        if not ca.ok or not cb.ok:
            not_ok.append({"cell_id": cid, "status_a": ca.status, "status_b": cb.status})
            continue
        ma, mb = ca.metrics, cb.metrics
        for name in ma:
            if name in mb and ma[name].get("samples") and mb[name].get("samples"):
                changes.append(
                    {"cell_id": cid, "metric": name, **metric_change(ma[name], mb[name], alpha, threshold)}
                )
    sig = [c for c in changes if c["significant"]]
    host = diff.host_diff(run_a.host, run_b.host)
    pa, pb = run_a.machine.measured_cpu_peak, run_b.machine.measured_cpu_peak
    if (pa or pb) and not any(r["field"] == "cpu_peak.gflops" for r in host):
        ga, gb = (p["gflops"] if p else None for p in (pa, pb))
        host.append({"field": "cpu_peak.gflops", "a": ga, "b": gb, "differs": ga != gb})
    return {
        "run_a": run_a.run_id,
        "run_b": run_b.run_id,
        "alpha": alpha,
        "threshold": threshold,
        "host_diff": host,
        "node_diff": node_diff(run_a, run_b, common),
        "stack_diff": stacks,
        "changes": changes,
        "only_in_a": sorted(set(by_a) - set(by_b)),
        "only_in_b": sorted(set(by_b) - set(by_a)),
        "not_ok": not_ok,
        "summary": {
            "compared": len(changes),
            "significant": len(sig),
            "faster": sum(c["direction"] == "faster" for c in sig),
            "slower": sum(c["direction"] == "slower" for c in sig),
        },
    }
