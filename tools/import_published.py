"""Convert ../shared/reference/published_numbers.csv into reprokit/data/published/<source>.yaml.

Run once when the reference CSV changes:  python tools/import_published.py CSV
The output is data (reviewed and committed); this script only records how each CSV row was mapped
to a cell and a metric, so the mapping can be re-derived and audited. Values, units and labels are
copied verbatim; nothing is computed except the cell id and the normalised metric name.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent.parent / "reprokit" / "data" / "published"


def num(s: str) -> int | None:
    return int(s) if s.strip().isdigit() else None


def map_000(r: dict) -> tuple[str, str, dict]:
    fw = r["framework"]
    v = r["variant"]
    if fw == "Theano":
        cell_fw, variant = "theano", "fastlstm"
    else:
        cell_fw, variant = "tensorflow", v.split("(")[0]
    cfg = f"b{r['batch']}-s{r['seq_len']}-h{r['hidden']}"
    return f"000/{cell_fw}/{variant}/{cfg}", r["metric"], {}


def map_001(r: dict) -> tuple[str, str, dict]:
    metric = "train_wps" if r["metric"].startswith("train") else "eval_wps"
    return "001/pytorch/word_lm/b128-s128-h1024", metric, {}


def map_002(r: dict) -> tuple[str, str, dict]:
    fw = "keras-mxnet" if r["framework"] == "Keras-MXNet" else "keras-tf"
    unroll = "unroll" if re.search(r"unroll=true", r["variant"], re.I) else "nounroll"
    gpus = int(re.search(r"gpus=(\d+)", r["variant"]).group(1))
    ds = r["dataset"]
    dkey = "synthetic" if ds.startswith("synthetic") else "nietzsche" if ds.startswith("nietzsche") \
        else "wikitext2-char"
    m = r["metric"]
    metric = "time_per_epoch" if m == "time_per_epoch" else \
        "time_per_sample" if m.startswith("time_per_sample") else "gpu_memory"
    return f"002/{fw}/lstm128-{unroll}/{dkey}-b{r['batch']}-g{gpus}", metric, {}


IMPL_003 = [
    ("PyTorch-JITed-LSTM", "jit"), ("TensorFlow-Graph-whileop", "graph_whileop"),
    ("TensorFlow-Eager", "eager"), ("TensorFlow-Graph", "graph"), ("PyTorch", "eager"),
]


def map_003(r: dict) -> tuple[str, str, dict]:
    v = r["variant"]
    cell_kind = "fine_grained" if v.startswith("fine_grained") else \
        "static" if v.startswith("static") else "cudnn"
    mode = next(key for label, key in IMPL_003 if label in v)
    fw = "tensorflow" if r["framework"] == "TensorFlow" else "pytorch"
    phase = "train" if " train" in v else "forward"
    m = r["metric"]
    if m.startswith("avg_time_per_batch"):
        return f"003/{fw}/{mode}_{cell_kind}/{phase}", "time_per_batch", {}
    if m.startswith("elapsed_50"):
        return f"003/{fw}/{mode}_{cell_kind}/{phase}", "time_per_batch", {"scale": 50}
    return f"003/{fw}/{mode}_{cell_kind}/{phase}", "seq_per_s", {}


def map_004(r: dict) -> tuple[str, str, dict]:
    v = r["variant"]
    if r["framework"] == "PyTorch":
        return "004/pytorch/word_lm_large/b20-s35-h1500", "time_per_batch", {}
    gpus = 2 if "num_gpus=2" in v else 1
    mode = "basic" if "basic" in v.lower() else "cudnn" if "cudnn" in v.lower() else "block"
    metric = "train_wps" if r["unit"] == "words/s" else "time_per_batch"
    return f"004/tensorflow/ptb_large_{mode}/g{gpus}", metric, {}


MAPPERS = {"000": map_000, "001": map_001, "002": map_002, "003": map_003, "004": map_004}


def table_of(source: str, r: dict) -> str:
    label = r["suite_source"]
    if source == "002":
        part = "Summary" if "Summary" in label else "Detailed"
        return f"RNN_result.md {part}: {r['dataset']}"
    if source == "003":
        dev = "GPU" if "(GPU)" in r["metric"] else "CPU"
        return f"README {r['variant'].split(' ')[0]} ({dev})"
    if source == "000":
        return f"README seq {r['seq_len']} hidden {r['hidden']}"
    return "README"


def main(csv_path: str) -> None:
    rows = list(csv.DictReader(open(csv_path, newline="")))
    by_source: dict[str, list] = {}
    for line_no, r in enumerate(rows, start=2):
        source = r["suite_source"][:3]
        cell, metric, extra = MAPPERS[source](r)
        entry = {
            "id": f"{source}-L{line_no:03d}",
            "csv_line": line_no,
            "value": float(r["value"]),
            "unit": r["unit"],
            "metric": metric,
            "metric_as_published": r["metric"],
            "cell": cell,
            "provenance": {"source": source, "source_label": r["suite_source"],
                           "table": table_of(source, r),
                           "row_label": f"{r['framework']} {r['variant']}"},
            "workload": {"framework": r["framework"], "variant": r["variant"],
                         "dataset": r["dataset"], "batch": num(r["batch"]),
                         "seq_len": num(r["seq_len"]), "hidden": num(r["hidden"]),
                         "layers": num(r["layers"])},
            "environment": {"gpu": r["gpu"], "cuda": r["cuda"], "cudnn": r["cudnn"],
                            "framework": r["framework"],
                            "framework_version": r["framework_version"]},
        }
        if extra:
            entry["transform"] = extra
        by_source.setdefault(source, []).append(entry)
    OUT.mkdir(parents=True, exist_ok=True)
    for source, entries in by_source.items():
        doc = {"schema_version": 1, "source": source,
               "imported_from": "shared/reference/published_numbers.csv (seed_workloads.md section 9)",
               "numbers": entries}
        (OUT / f"{source}.yaml").write_text(
            "# Generated by tools/import_published.py from the reference CSV; values verbatim.\n"
            + yaml.safe_dump(doc, sort_keys=False, width=120, allow_unicode=True))
        print(f"{source}: {len(entries)} numbers")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/published_numbers.csv")
