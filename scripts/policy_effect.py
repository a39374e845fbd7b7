"""What the efficiency policy does to every GPU-published number of the kit's data.

For each number published on a GPU and each synthetic run (an H200 SXM, an H100 SXM, an A100, with as
many GPUs as the publication used; the cell's precision recorded as fp32, then as tf32), the script
asks reprokit.analysis.verdicts for the verdict under the policy in force (data/verdict_policy.yaml)
and under the old one (efficiency against the fp32 peak, whatever ran, and no limit on how far apart
the peaks are). The synthetic cell measures exactly the published time or rate (a new GPU that runs
no faster than the old one, as a launch-bound step would): the old rule then says EFFICIENCY_LOWER by
the peak ratio. Beside each row: the value the measurement would need for the old EFFICIENCY_SIMILAR
(the published value scaled by the peak ratio), the issue's "0.027 ms/example" for 000-L006.

Nothing here ran on a GPU: the cells are synthetic, the peaks come from peaks.yaml.

    python scripts/policy_effect.py                   # writes docs/policy-effect.md and .json
    python scripts/policy_effect.py --out DIR
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from reprokit.analysis import devices, flops, verdicts
from reprokit.catalog import suites, units
from reprokit.reader.model import Machine, Run
from reprokit.reader.result import CellResult

ROOT = Path(__file__).resolve().parent.parent
GPUS = {"H200": "NVIDIA H200", "H100": "NVIDIA H100 80GB HBM3", "A100": "NVIDIA A100-SXM4-80GB"}
PRECISIONS = ("fp32", "tf32")
SAMPLES = (0.995, 0.998, 1.0, 1.002, 1.005)  # a tight synthetic interval around the value
# three processes of them, a little apart: a re-run interval, so the efficiency policy
# alone decides (one process would be INCONCLUSIVE whatever the policy says)
PROCESS_SHIFTS = (0.999, 1.0, 1.001)


def synthetic_cell(number: dict, gpu: str, count: int, precision: str, value: float) -> dict:
    """A finished GPU cell of the number's cell measuring `value` (in the number's unit, per item): the
    document, as a result file would hold it (`CellResult.from_doc` reads it)."""
    gpus = [{"index": i, "uuid": f"GPU-synthetic-{i}", "name": gpu, "visible_as": str(i), "mig": None}
            for i in range(count)]
    return {"run_id": "synthetic", "cell_id": number["cell"], "stack": "synthetic", "workload": "synthetic",
            "reason": None, "status": "ok", "device": "gpu",
            "params": suites.cell_params(number["cell"]) or {},
            "implementation": {"framework": number["environment"].get("framework"),
                               "framework_version": number["environment"].get("framework_version"),
                               "substitutes": []},
            "metrics": {number["metric"]: {
                "unit": number["unit"], "processes": [len(SAMPLES)] * len(PROCESS_SHIFTS),
                "samples": [value * f * g for g in PROCESS_SHIFTS for f in SAMPLES]}},
            "gpus": gpus, "gpus_source": "synthetic (scripts/policy_effect.py)", "jit_cache": "warm",
            "precision": {"requested": "fp32" if precision == "fp32" else "framework_default",
                          "effective": precision, "why": "synthetic", "settings": {}, "env": {},
                          "autotune": {}}}


def old_verdict(v: dict, number: dict, cell: dict, machine: Machine) -> str:
    """The verdict without the policy: efficiency against the fp32 peak (the precision ignored), no
    peak-ratio limit, no above-peak flag; every other check as today."""
    if v["comparison"] not in ("efficiency", "above_peak") or (
            v["verdict"] == verdicts.INCONCLUSIVE and not v.get("efficiency")):
        return v["verdict"]
    as_fp32 = CellResult.from_doc({**cell, "precision": {**cell["precision"], "effective": "fp32"}})
    summ, _ = verdicts.measured_summary(cell["metrics"][number["metric"]])
    try:
        e = verdicts.efficiency(number, as_fp32, summ, number["unit"], devices.publication_device(number),
                                devices.measured_device(as_fp32, machine))
    except flops.NotApplicable:
        return verdicts.NOT_COMPARABLE
    return verdicts.band_verdict(e, float(verdicts.load_policy()["efficiency"]["tolerance"]))[0]


def needed_for_similar(number: dict, gpu: str, count: int) -> float | None:
    """The value (published unit, per published multiple) the old rule calls EFFICIENCY_SIMILAR."""
    pub = devices.publication_device(number)
    meas = devices.measured_device(CellResult.from_doc({
        "run_id": "synthetic", "cell_id": "synthetic", "stack": "synthetic", "workload": "synthetic",
        "status": "ok", "reason": None, "device": "gpu", "gpus": [{"name": gpu}] * count}), None)
    if not pub.get("peak_tflops") or not meas.get("peak_tflops"):
        return None
    ratio = meas["peak_tflops"] / pub["peak_tflops"]
    lower_better = units.better_direction(number["unit"]) == "lower"
    return float(number["value"]) / ratio if lower_better else float(number["value"]) * ratio


def rows() -> list[dict]:
    out = []
    sources = suites.load_sources()
    for number in suites.all_sources_published():
        pub = devices.publication_device(number)
        if pub["kind"] != "gpu":
            continue
        count = pub.get("count") or 1
        scale = float(number.get("transform", {}).get("scale", 1))
        for short, gpu in GPUS.items():
            for precision in PRECISIONS:
                machine = Machine.of({"gpus": [{"index": i, "name": gpu} for i in range(count)]})
                if number["cell"] is None:
                    new = {"verdict": verdicts.NOT_RUN, "labels": [verdicts.NOT_RUN],
                           "reason": "no cell of the kit reproduces this number", "comparison": None}
                    old = verdicts.NOT_RUN
                else:
                    cell = synthetic_cell(number, gpu, count, precision, float(number["value"]) / scale)
                    tol = verdicts.tolerance(sources, number["provenance"]["source"])
                    run = Run.from_doc({"run_id": "synthetic", "suite": "synthetic", "runner": "local",
                                        "protocol": "budget", "started": "",
                                        "host_fingerprint": machine.host})
                    new = verdicts.verdict(number, CellResult.from_doc(cell), run, tol)
                    old = old_verdict(new, number, cell, machine)
                need = needed_for_similar(number, gpu, count)
                out.append({"number": number["id"], "published": f"{number['value']:g} {number['unit']}",
                            "published_on": number["environment"].get("gpu"),
                            "run": f"{count}x {short}" if count > 1 else short, "precision": precision,
                            "old": old, "new": new["verdict"], "labels": new["labels"],
                            "changed": old != new["verdict"] or any(
                                x in verdicts.LABEL_MEANINGS for x in new["labels"]),
                            "needed_for_old_similar": None if need is None
                            else f"{need:.4g} {number['unit']}",
                            "peak_ratio": (new.get("policy") or {}).get("peak_ratio"),
                            "reason": new["reason"]})
    return out


def markdown(table: list[dict]) -> str:
    numbers = sorted({r["number"] for r in table})
    by_case = Counter((r["run"].split("x ")[-1], r["precision"], r["old"], " ".join(r["labels"]))
                      for r in table)
    lines = [
        "# Effect of the efficiency policy on every GPU-published number",
        "",
        "Written by `python scripts/policy_effect.py` (synthetic runs, nothing ran on a GPU). For each of "
        f"the {len(numbers)} numbers published on a GPU, a synthetic run on an H200 SXM, an H100 SXM and an "
        "A100 "
        "(as many GPUs as the publication used) measures exactly the published value (in 3 processes, so "
        "its interval is a re-run interval), once with the cell's "
        "precision recorded as fp32 and once as tf32. Old = the rule without the policy (efficiency against "
        "the "
        "fp32 peak whatever ran, no limit on the peak ratio); new = reprokit/data/verdict_policy.yaml "
        f"(max_peak_ratio {verdicts.load_policy()['efficiency']['max_peak_ratio']:g}, the precision must "
        "be fp32).",
        "",
        "## Summary",
        "",
        "| run GPU | precision | old verdict | new verdict and labels | rows |",
        "|---|---|---|---|---|",
    ]
    for (gpu, prec, old, new), n in sorted(by_case.items()):
        lines.append(f"| {gpu} | {prec} | {old} | {new} | {n} |")
    changed = sum(1 for r in table if r["changed"])
    lines += ["", f"{changed} of {len(table)} rows change ({len(numbers)} numbers x 3 GPUs x 2 precisions).",
              "", "## Every row", "",
              "| number | published | on | run | precision | old | new | needed for old SIMILAR "
              "| peak ratio |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        ratio = f"{r['peak_ratio']:.3g}" if r["peak_ratio"] else ""
        lines.append(f"| {r['number']} | {r['published']} | {r['published_on']} | {r['run']} | "
                     f"{r['precision']} | {r['old']} | {' '.join(r['labels'])} | "
                     f"{r['needed_for_old_similar'] or ''} | {ratio} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    args = ap.parse_args()
    table = rows()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "policy-effect.json").write_text(json.dumps(table, indent=1) + "\n")
    (args.out / "policy-effect.md").write_text(markdown(table))
    counts = Counter((r["old"], " ".join(r["labels"])) for r in table)
    for (old, new), n in sorted(counts.items()):
        print(f"{n:5d}  {old} -> {new}")
    print(f"{sum(1 for r in table if r['changed'])} of {len(table)} rows change; written to {args.out}")


if __name__ == "__main__":
    main()
