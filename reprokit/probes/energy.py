"""Energy per step of a GPU cell, from NVML's total-energy counter over the timed window.

What the GPU monitor (reprokit/probes/gpu_state.py) saw, summarised into the cell result's `energy` when
the result is written (gpu_state.attach), as `gpu_state` is.

The harness records each timed metric's span on the epoch clock (`metrics.<m>.window`: `start_unix`,
`end_unix`, `steps`, `synced`; bench/timing.py `sample`), and the host's GPU monitor reads every GPU's
total-energy counter (mJ since the driver loaded, Volta and newer) and power draw at each of its samples
(`gpu_state.energy_samples`: reprokit/probes/gpu_state.py). The counter is interpolated linearly at the
window's two ends, summed over the cell's GPUs, and divided by the steps and the items per step: J/step
and J/item. The window includes what ran between the timed steps (the `after` calls), as `steps` counts.

A figure is kept only when it can be trusted (verdict_policy.yaml `energy`): the window lasts at least
`min_window_s` (the counter's update period and the monitor's sampling make shorter ones coarse), every
step ended synchronised (else the window's end precedes the device's work), the counter exists and is
read on both sides of the window, and the power samples integrated over the window agree with it within
`max_disagreement` (else it is kept with the flag). Otherwise the metric says why not. The sources' GPUs
(M40, P100, P40) have no counter: energy is a new figure here, never a reproduction.

NEVER RUN ON A GPU: tested with a fake NVML binding (tests/probes/test_energy.py), whose function names
tests/probes/test_nvml_api.py checks against the installed nvidia-ml-py.
"""

from __future__ import annotations

from bisect import bisect_left

from reprokit import kitdata


def _at(samples: list, t: float, k: int) -> float | None:
    """Column k of the samples linearly interpolated at time t; None outside them or without values."""
    pts = [(s[0], s[k]) for s in samples if s[k] is not None]
    if len(pts) < 2 or not pts[0][0] <= t <= pts[-1][0]:
        return None
    i = bisect_left([p[0] for p in pts], t)
    if pts[i][0] == t:
        return pts[i][1]
    (t0, v0), (t1, v1) = pts[i - 1], pts[i]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def _power_integral(samples: list, a: float, b: float) -> float | None:
    """Joules from the power samples over [a, b] (trapezoids, the ends interpolated)."""
    pa, pb = _at(samples, a, 2), _at(samples, b, 2)
    if pa is None or pb is None:
        return None
    pts = [(a, pa)] + [(s[0], s[2]) for s in samples if a < s[0] < b and s[2] is not None] + [(b, pb)]
    return sum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in zip(pts, pts[1:]))


def of_metric(metric: dict, energy_samples: dict[str, list], rule: dict) -> dict:
    """{"status": "measured" | "not_measured", "reason", "joules", "joules_per_step", "joules_per_item",
    "window_s", "power_joules", "disagreement", "flagged", "gpus"} of one timed metric."""
    w = metric.get("window")
    out = {"status": "not_measured", "reason": None, "joules": None, "steps": None, "joules_per_step": None,
           "joules_per_item": None, "window_s": None, "power_joules": None, "disagreement": None,
           "flagged": False, "gpus": len(energy_samples)}
    if not w:
        return {**out, "reason": "the workload recorded no timed window for this metric"}
    a, b = float(w["start_unix"]), float(w["end_unix"])
    out["window_s"] = b - a
    if not energy_samples:
        return {**out, "reason": "no GPU energy samples (the cell's GPU monitor saw no GPU)"}
    if b - a < float(rule["min_window_s"]):
        return {**out, "reason": f"the timed window lasted {b - a:.3g} s, under the "
                f"{rule['min_window_s']:g} s the counter needs (a longer time budget gives one)"}
    if not w.get("synced"):
        return {**out, "reason": "its steps were not synchronised, so the window's end precedes the device's "
                "work (an as-published unsynchronised timing)"}
    joules = power = 0.0
    for uuid, samples in energy_samples.items():
        if all(s[1] is None for s in samples):
            return {**out, "reason": f"no energy counter on {uuid} (NVML's total-energy counter needs Volta "
                    "or newer)"}
        ea, eb = _at(samples, a, 1), _at(samples, b, 1)
        if ea is None or eb is None:
            return {**out, "reason": "the energy counter was not read on both sides of the timed window"}
        joules += (eb - ea) / 1000.0
        p = _power_integral(samples, a, b)
        power = None if p is None or power is None else power + p
    steps = int(w.get("steps") or 0)
    if steps <= 0 or joules <= 0:
        return {**out, "reason": f"{joules:.3g} J over {steps} steps: nothing to divide"}
    items = float(metric.get("items_per_sample") or 1)
    out.update(status="measured", joules=joules, steps=steps, joules_per_step=joules / steps,
               joules_per_item=joules / steps / items, power_joules=power)
    if power:
        out["disagreement"] = abs(joules - power) / joules
        out["flagged"] = out["disagreement"] > float(rule["max_disagreement"])
        if out["flagged"]:
            out["reason"] = (f"the counter ({joules:.4g} J) and the integrated power samples ({power:.4g} J) "
                             f"are {out['disagreement']:.1%} apart, more than {rule['max_disagreement']:.0%}")
    return out


def rule() -> dict | None:
    """verdict_policy.yaml `energy` (None in data snapshots older than the energy rule)."""
    return kitdata.load("verdict_policy").get("energy")


def of_cell(result: dict, rule: dict | None) -> dict | None:
    """`energy` of a cell result: one entry per timed metric; None for a CPU cell (no counter is read:
    RAPL is not read by the kit) or data without the energy rule."""
    state = result.get("gpu_state")
    if not rule or not isinstance(state, dict) or "energy_samples" not in state:
        return None
    samples = state.get("energy_samples") or {}
    return {name: of_metric(m, samples, rule) for name, m in (result.get("metrics") or {}).items()
            if m.get("raw_seconds")}


def merge(energies: list[dict | None]) -> dict | None:
    """One `energy` for a cell run in several processes: per metric, the joules and steps of its
    measured processes added up (a process that was not measured is said in `reason`)."""
    energies = [e for e in energies if isinstance(e, dict)]
    if not energies:
        return None
    out = {}
    for name in sorted({n for e in energies for n in e}):
        parts = [e.get(name) for e in energies]
        ok = [p for p in parts if p and p["status"] == "measured"]
        if not ok:
            first = next((p for p in parts if p), {})
            out[name] = dict(first, reason=first.get("reason") or "not measured in any process")
            continue
        joules, steps = sum(p["joules"] for p in ok), sum(p["steps"] for p in ok)
        per_item = ok[0]["joules_per_item"] / ok[0]["joules_per_step"]
        power = sum(p["power_joules"] for p in ok) if all(p.get("power_joules") for p in ok) else None
        missing = len(parts) - len(ok)
        out[name] = {"status": "measured", "joules": joules, "steps": steps,
                     "joules_per_step": joules / steps, "joules_per_item": joules / steps * per_item,
                     "window_s": sum(p["window_s"] for p in ok),
                     "power_joules": power, "disagreement": abs(joules - power) / joules if power else None,
                     "flagged": any(p["flagged"] for p in ok), "gpus": ok[0]["gpus"],
                     "reason": (f"{missing} of {len(parts)} processes not measured" if missing else None),
                     "processes": len(ok)}
    return out
