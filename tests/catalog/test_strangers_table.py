"""A stranger's paper by the guide alone (docs/adding-a-benchmark.md), every part of it in one source.

The synthetic source `cnnx` (an id of letters) has what old CNN tables have: milliseconds per minibatch
(a per-batch metric) of the forward and of the backward pass alone, for two networks (one FLOP model
each), on a CPU, run by a stack the kit lacks (Torch7, recorded as a substitute of kind `framework`),
a defect selected by its published column name, a claim, and a Backward column that copies the Forward
one. Complete, `check-benchmark` passes and the report's first screen says the table contradicts
itself. Then each omission a newcomer makes is planted and named by `check-benchmark` in one line
(exit 2). The numbers are made up for this test and say so in the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.catalog import test_new_benchmark as kit_copy

kit = kit_copy.kit  # the fixture: a copy of the kit in a git repository of its own
CPU, _cli, _edit, _git = kit_copy.CPU, kit_copy._cli, kit_copy._edit, kit_copy._git

SRC = "cnnx"
MADE_UP = "synthetic: made up for tests/catalog/test_strangers_table.py, not a publication"
NETS = {"small": {"n": 16, "depth": 1, "ms": 4.0}, "big": {"n": 64, "depth": 2, "ms": 90.0}}

PUBLISHED = f"""schema_version: 1
source: "{SRC}"
imported_from: "{MADE_UP}"
defaults:
  provenance: {{source_label: "Stranger et al. (synthetic)", table: "Table 1"}}
  environment: {{gpu: "{CPU}", framework: python, framework_version: "3.5"}}
numbers:
""" + "".join(
    f"""  - id: {SRC}-T1-{net}-{column.lower()}
    value: {spec['ms']}
    unit: ms
    metric: {column.lower()}_time_per_batch
    metric_as_published: "{column}"
    cell: {SRC}/python/{net}/b8
    provenance: {{row_label: "{net}"}}
    workload: {{batch: 8, n: {spec['n']}, depth: {spec['depth']}}}
""" for net, spec in NETS.items() for column in ("Forward", "Backward"))  # Backward copies Forward

SUITE = f"""schema_version: 1
name: "source-{SRC}"
description: "Source {SRC}: a stranger's CNN table (synthetic)"
sources: ["{SRC}"]
defaults:
  budget: {{min_samples: 6, max_samples: 200, time_budget_s: 5, warmup: 1, rel_ci_half_width: 0.02}}
  quick_budget: {{min_samples: 6, max_samples: 20, time_budget_s: 0, warmup: 1}}
  timeout_s: 600
groups:
""" + "".join(
    f"""  - id: "{SRC}/{{framework}}/{{variant}}/b{{batch}}"
    source: "{SRC}"
    stack: "smoke-python"
    framework: "python"
    workload: "s{SRC}_python"
    variant: {net}
    metrics: [forward_time_per_batch, backward_time_per_batch]
    params: {{batch: 8, n: {spec['n']}, depth: {spec['depth']}}}
""" for net, spec in NETS.items())

WORKLOAD = '''"""Source cnnx (synthetic): a stack of `depth` dense layers, forward and backward per minibatch.
The published stack was Torch7 (Lua), which the kit has no image of: the same network runs in pure
Python, recorded as a substitute. Python 3.5 syntax, standard library only."""
import random

import real_work

FRAMEWORK = None


def run(ctx):
    n, depth, batch = int(ctx.params["n"]), int(ctx.params["depth"]), int(ctx.params["batch"])
    rng = random.Random(1234)
    ws = [[[rng.uniform(-0.1, 0.1) for _ in range(n)] for _ in range(n)] for _ in range(depth)]
    xs = [[rng.random() for _ in range(n)] for _ in range(batch)]

    def activations(x):  # every layer's input, then the output
        acts = [x]
        for w in ws:
            acts.append([sum(wi * xi for wi, xi in zip(row, acts[-1])) for row in w])
        return acts

    def forward_step():
        return [activations(x)[-1] for x in xs]

    stored = [activations(x) for x in xs]  # what the forward pass leaves for the backward one

    def backward_step():  # gradients of sum(output) for every weight and layer input; no update
        grads = [[[0.0] * n for _ in range(n)] for _ in range(depth)]
        for acts in stored:
            g = [1.0] * n
            for layer in range(depth - 1, -1, -1):
                inp, gw, w = acts[layer], grads[layer], ws[layer]
                for i in range(n):
                    row, gi = gw[i], g[i]
                    for j in range(n):
                        row[j] += gi * inp[j]
                g = [sum(w[i][j] * g[i] for i in range(n)) for j in range(n)]
        return grads

    def output_digest(outs):
        return sum(abs(v) for o in outs for v in o) / float(batch * n)

    def gradient_digest(grads):
        return sum(abs(v) for g in grads for row in g for v in row)

    ctx.substitute("Torch7 nn (Lua)", "nested lists in Python", "the kit has no Torch7 stack")
    ctx.describe(framework="python", framework_version=None, api="nested lists")
    ctx.measure("forward_time_per_batch", forward_step, unit="ms", kind="ms", items=batch,
                method="one forward pass of a minibatch of %d through %d dense layers" % (batch, depth),
                real_work=real_work.Check("forward", output=output_digest,
                                          reference=lambda: output_digest(forward_step())))
    ctx.measure("backward_time_per_batch", backward_step, unit="ms", kind="ms", items=batch,
                method="the backward pass alone of a minibatch of %d (both gradients)" % batch,
                real_work=real_work.Check("forward", output=gradient_digest,
                                          reference=lambda: gradient_digest(backward_step())))
'''


def _model(net: str, formula: str) -> str:
    return (f"  model-{SRC}-{net}:\n    source: \"{SRC}\"\n"
            f"    description: \"{net}: dense layers ({MADE_UP})\"\n"
            f"    cells: ['^{SRC}/.*/{net}/']\n    item: example\n    item_plural: examples\n"
            f"    forward_flops_per_item: \"{formula}\"\n    items_per_batch: \"batch\"\n"
            "    phase_by_metric: {forward_time_per_batch: forward, backward_time_per_batch: backward}\n"
            f"    reference: \"{MADE_UP}\"\n    roofline:\n      optional_flops_per_item: \"0\"\n"
            "      no_input_grad_flops_per_item: \"n * n\"\n      weights: \"depth * n * n\"\n"
            "      bytes_per_step:\n        forward: \"8 * weights + 16 * batch * n\"\n"
            "        train: \"16 * weights + 24 * batch * n\"\n"
            f"      notes: \"{MADE_UP}\"\n")


def _write_source(kit: Path) -> None:
    """Every file the guide says to write, for the stranger's table (the scaffold first)."""
    _cli(kit, "new-benchmark", SRC, "--title", "A stranger's CNN table (test)", "--stack", "smoke-python")
    data = kit / "reprokit" / "data"
    (data / "published" / f"{SRC}.yaml").write_text(PUBLISHED)
    (data / "suites" / f"source-{SRC}.yaml").write_text(SUITE)
    (kit / "bench" / "workloads" / f"s{SRC}_python.py").write_text(WORKLOAD)
    flops = (data / "flops.yaml").read_text()
    at = flops.index(f"  model-{SRC}:")
    # one model per network (section 4), and the per-batch metrics' quantity
    flops = flops[:at] + _model("small", "2 * n * n") + _model("big", "2 * n * n * depth")
    flops = flops.replace("  time_per_batch: batch\n", "  time_per_batch: batch\n"
                          "  forward_time_per_batch: batch\n  backward_time_per_batch: batch\n")
    (data / "flops.yaml").write_text(flops)
    sources = (data / "sources.yaml").read_text()
    at = sources.index(f"  \"{SRC}\":")
    sources = sources[:at] + (
        f"  \"{SRC}\":\n    title: \"A stranger's CNN table (test)\"\n    repository: \"{MADE_UP}\"\n"
        f"    commit: unstated\n    reference: \"{MADE_UP}\"\n    environment:\n      host: \"{MADE_UP}\"\n"
        f"      timing: \"{MADE_UP}\"\n    defects:\n      - id: d{SRC}-backward\n        kind: reporting\n"
        "        summary: \"made up: the Backward column is the Forward one again\"\n"
        f"        reference: \"{MADE_UP}\"\n        applies_to: {{metric: [Backward]}}\n")
    (data / "sources.yaml").write_text(sources)
    claims = (data / "claims.yaml").read_text()
    at = claims.index(f"  # ---- {SRC}:")
    claims = claims[:at] + (
        f"  - id: c{SRC}-small-is-faster\n    source: \"{SRC}\"\n    kind: order\n    origin: table\n"
        "    metric: forward_time_per_batch\n    device: cpu\n    text: \"Forward: small < big\"\n"
        f"    reference: \"Table 1 ({MADE_UP})\"\n    hardware: CPU\n    order:\n"
        f"      - {SRC}/python/small/b8\n      - {SRC}/python/big/b8\n")
    (data / "claims.yaml").write_text(claims)
    _edit(data / "standins.yaml", "standins:\n", "standins:\n  - id: torch7-as-python\n    kind: framework\n"
          "    original: 'Torch7'\n    short: \"Python lists for Torch7 nn\"\n"
          f"    why: \"{MADE_UP}\"\n")


def test_a_strangers_table_complete_checks_clean_and_says_its_contradiction_first(kit, tmp_path):
    _write_source(kit)
    said = _cli(kit, "check-benchmark", SRC).stdout
    assert f"source {SRC}: 0 problem(s)" in said, said
    assert "Table 1: column 'Forward' equals column 'Backward' in all 2 rows" in said, said
    touched = sorted(line[3:] for line in _git(kit, "status", "--porcelain", "-uall").splitlines())
    assert touched == [f"bench/workloads/s{SRC}_python.py", "reprokit/data/claims.yaml",
                       "reprokit/data/flops.yaml", f"reprokit/data/published/{SRC}.yaml",
                       "reprokit/data/sources.yaml", "reprokit/data/standins.yaml",
                       f"reprokit/data/suites/source-{SRC}.yaml"]  # seven: the six and the stand-in
    listed = json.loads(_cli(kit, "list", "--suite", f"source-{SRC}", "--json").stdout)
    defects = {n["id"]: n["defects"] for n in listed["published"]}
    assert defects == {f"{SRC}-T1-{net}-{c}": ([f"d{SRC}-backward"] if c == "backward" else [])
                       for net in NETS for c in ("forward", "backward")}, defects  # by published column
    results = tmp_path / "results"
    _cli(kit, "run", "--suite", f"source-{SRC}", "--quick", "--runner", "local", "--results", str(results))
    (run,) = [d for d in results.iterdir() if (d / "run.json").exists()]
    rep = json.loads((run / "report.json").read_text())
    (line,) = rep["first_screen"]
    assert [f["kind"] for f in line["table"]] == ["identical_columns"], line["table"]
    first = (run / "report.md").read_text().split("\n## ")[1]
    assert first.startswith("Does it hold here?") and "contradicts itself" in first, first
    numbers = {n["id"]: n for n in rep["numbers"]}
    bounds = {nid: n["analysis"]["roofline"] or {} for nid, n in numbers.items()}
    models = {nid: b.get("model") for nid, b in bounds.items()}
    assert models == {f"{SRC}-T1-{net}-{c}": f"model-{SRC}-{net}"
                      for net in NETS for c in ("forward", "backward")}, models  # one model per network
    phases = {nid: b.get("phase") for nid, b in bounds.items()}
    assert sorted(phases.values()) == ["backward", "backward", "forward", "forward"], phases
    assert all(n["verdict"] == "NOT_COMPARABLE" for n in numbers.values())  # published on another CPU
    assert {n["standin"] for n in numbers.values()} == {"Python lists for Torch7 nn"}  # kind framework:
    assert all(n["verdict"] != "NOT_TESTABLE_STANDIN" for n in numbers.values())  # still judged
    (claim,) = [c for c in rep["claims"] if c["id"] == f"c{SRC}-small-is-faster"]
    assert claim["status"] == "HOLDS", claim  # 32x the work: decided on any CPU
    assert rep["real_work"]["metrics_checked"] == rep["real_work"]["metrics_passed"] == 4


OMISSIONS = {  # what is left out or wrong -> (the edit, what check-benchmark's one line says)
    "the per-batch metric's quantity": (
        lambda kit: _edit(kit / "reprokit" / "data" / "flops.yaml", "  backward_time_per_batch: batch\n", ""),
        "metric 'backward_time_per_batch' of number cnnx-T1-"),  # one line per number it leaves unbounded
    "a GPU-only group under a CPU table": (
        lambda kit: _edit(kit / "reprokit" / "data" / "suites" / f"source-{SRC}.yaml",
                          "    variant: small\n", "    variant: small\n    needs_gpus: 1\n"),
        "its group says needs_gpus: 1, but its published numbers were measured on a CPU"),
    "a GPU stack in the defaults of a CPU table": (
        lambda kit: _edit(kit / "reprokit" / "data" / "published" / f"{SRC}.yaml",
                          "framework_version: \"3.5\"}", "framework_version: \"3.5\", cudnn: \"5.1\"}"),
        "but inherits cudnn '5.1' from the table's defaults"),
    "a defect selecting a column name the table does not print": (
        lambda kit: _edit(kit / "reprokit" / "data" / "sources.yaml", "{metric: [Backward]}",
                          "{metric: [Backwards]}"),
        f"defect d{SRC}-backward applies to no published number"),
    "the substitute's class": (
        lambda kit: _edit(kit / "reprokit" / "data" / "standins.yaml", "original: 'Torch7'\n",
                          "original: 'Torch8'\n"),
        "substitutes 'nested lists in Python' for 'Torch7 nn (Lua)', which reprokit/data/standins.yaml "
        "does not classify"),
}


@pytest.mark.parametrize("omission", sorted(OMISSIONS))
def test_each_omission_of_a_strangers_table_is_one_line(kit, omission):
    _write_source(kit)
    plant, says = OMISSIONS[omission]
    plant(kit)
    p = _cli(kit, "check-benchmark", SRC, ok=False)
    assert p.returncode == 2, p.stdout + p.stderr
    problems = [line for line in p.stdout.splitlines() if line.startswith("problem: ")]
    assert problems and all(says in line and "(fix: " in line for line in problems), (omission, p.stdout)


def test_a_workload_that_fails_in_every_process_is_not_called_decided(kit, tmp_path):
    """Every process of both cells fails (the workload calls ctx.measure without its `items`): the
    sequential design ran on (it said "decided after 3 processes" of cells that measured nothing) and
    the run says the cells failed, not that they were skipped or left by --time-limit."""
    _write_source(kit)
    _edit(kit / "bench" / "workloads" / f"s{SRC}_python.py", 'kind="ms", items=batch,', 'kind="ms",')
    p = _cli(kit, "run", "--suite", f"source-{SRC}", "--quick", "--runner", "local", "--results",
             str(tmp_path / "results"), ok=False)
    said = p.stdout + p.stderr
    assert p.returncode == 1 and "done in" in said and "2 failed" in said, said
    assert "missing 1 required positional argument: 'items'" in said
    assert "decided after" not in said and "no cell of the run measured anything" not in said, said
