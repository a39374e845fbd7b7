"""The kit's source-000 PyTorch cells beside the independent plain-torch timing of the same GPU session.

    python scripts/compare_independent_check.py docs/gpu-run

Reads DIR/independent-check.json (scripts/gpu_independent_check.py) and every run directory under DIR,
takes the median of each kit cell's raw samples (cells/*.json) and prints one Markdown row per
configuration, metric and precision: the two medians, their ratio and whether they agree within
--tolerance (default 10 %). Each figure comes from the samples in those files.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

CELL = re.compile(r"^(modern/)?000/pytorch/nn_lstm/(b\d+-s\d+-h\d+)(/framework-defaults)?$")


def kit_medians(root: Path) -> list[dict]:
    rows = []
    for path in sorted(root.glob("*/cells/*.json")):
        if re.search(r"\.p\d+\.json$", path.name):
            continue  # one process's part of a merged result
        cell = json.loads(path.read_text())
        m = CELL.match(cell.get("cell_id", ""))
        if not m:
            continue
        precision = "defaults" if m.group(3) else "fp32"
        for metric in ("forward_time_per_example", "train_time_per_example"):
            samples = cell["metrics"][metric]["samples"]
            rows.append({"cell": cell["cell_id"], "run": path.parent.parent.name, "config": m.group(2),
                         "precision": precision, "metric": metric, "n": len(samples),
                         "median_ms": statistics.median(samples)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--tolerance", type=float, default=0.10)
    args = ap.parse_args()
    ref = json.loads((args.dir / "independent-check.json").read_text())
    metrics = ("forward_time_per_example", "train_time_per_example")
    independent = {(r["config"], r["precision"], m): (r[m]["median_ms"], len(r[m]["samples_s"]))
                   for r in ref["rows"] for m in metrics}
    print(f"independent: {ref['method']} ({ref['torch']}, cuDNN {ref['cudnn']}, {ref['gpu']})\n")
    print("| kit cell | metric | precision | kit median ms (n) | independent ms (n) | kit / independent | "
          f"within {args.tolerance:.0%} |")
    print("|---|---|---|---|---|---|---|")
    agree = total = 0
    for row in kit_medians(args.dir):
        ind, n = independent[(row["config"], row["precision"], row["metric"])]
        ratio = row["median_ms"] / ind
        ok = abs(ratio - 1) <= args.tolerance
        agree += ok
        total += 1
        print(f"| {row['cell']} | {row['metric']} | {row['precision']} | {row['median_ms']:.5f} "
              f"({row['n']}) | {ind:.5f} ({n}) | {ratio:.3f} | {'yes' if ok else 'NO'} |")
    print(f"\n{agree} of {total} within {args.tolerance:.0%}")


if __name__ == "__main__":
    main()
