"""One set of parameters per source.

The FLOP model counts a cell's work with the sizes the cell's workload really uses (its params, its data
set's vocabulary, windows per epoch), and every published number mapped to a cell with the same sizes.
Each workload's sizes are worked out here from the workload's own code and data tables (bench/), never
from reprokit, and compared name by name with the FLOP model's (reprokit/data/flops.yaml).
"""

import re
import sys
from pathlib import Path

import pytest

from reprokit.analysis import devices, flops, roofline
from reprokit.catalog import suites
from reprokit.plan.plan import bench_facts

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import corpora  # noqa: E402
import harness  # noqa: E402
from workloads import _lm003, _lstm000, _params, s002_keras, s004_pytorch  # noqa: E402

corpora.configure(bench_facts()["stand_ins"])  # the stand-in sizes, as a job file gives them

CELLS = [(s, c) for s in suites.suite_names() for c in suites.load_suite(s).cells
         if flops.model_for(c.id) is not None]
PARAMS = {c.id: dict(c.params) for s in suites.suite_names() for c in suites.load_suite(s).cells}


def merged(defaults, params):
    return {**defaults, **params}


def workload_sizes(cell):
    """The sizes the cell's workload runs with, from bench/ alone (defaults + params + data tables)."""
    w, params = cell.workload, dict(cell.params)
    if w.startswith("s000_"):
        ctx = harness.CellContext({"id": cell.id, "params": params}, {"device": "cpu"})
        batch, seq, hidden = _lstm000.shape(ctx)
        return {"batch": batch, "seq_len": seq, "hidden": hidden, "input": hidden, "layers": 1}
    if w == "s001_pytorch":
        p = merged(_params.WORD_LM_001, params)
        types = corpora.STAND_INS[_params.wikitext2_name(p)]["vocab_size"]
        return {"batch": p["batch"], "seq_len": p["seq_len"], "hidden": p["hidden"], "emb": p["emb"],
                "layers": p["layers"], "vocab": types + 1}  # the model's V = types + 1 unused id
    if w == "s002_keras":
        p = merged(s002_keras.DEFAULTS, params)
        if p["dataset"] == "synthetic":
            d, n = s002_keras.SYNTHETIC_D, s002_keras.SYNTHETIC_N
        else:
            spec = corpora.STAND_INS["nietzsche" if p["dataset"] == "nietzsche"
                                     else "wikitext-2-char-keras-mxnet"]
            d = spec["vocab_size"]
            n = len(range(0, spec["splits"]["train"] - p["seq_len"], p["step"]))  # Data._text
        return {"batch": p["batch"], "seq_len": p["seq_len"], "hidden": p["hidden"], "D": d,
                "epoch_items": n, "step": p["step"]}
    if w.startswith("s003_"):
        p = merged(_lm003.DEFAULTS, params)
        assert p["vocab"] - 1 == corpora.STAND_INS["ptb"]["vocab_size"]  # corpus ids + <s>
        return {k: p[k] for k in ("batch", "seq_len", "hidden", "emb", "layers", "vocab")}
    if w == "s004_tensorflow":
        p = merged(_params.PTB_LARGE_004, params)
        assert p["vocab"] == corpora.STAND_INS["ptb"]["vocab_size"]
        return {"batch": p["batch"], "seq_len": p["seq_len"], "hidden": p["hidden"], "emb": p["hidden"],
                "layers": p["layers"], "vocab": p["vocab"]}
    if w == "s004_pytorch":
        p = merged(s004_pytorch.DEFAULTS, params)
        assert p["vocab"] == corpora.STAND_INS["wikitext-2"]["vocab_size"]  # the workload checks it
        return {"batch": p["batch"], "seq_len": p["seq_len"], "hidden": p["hidden"],
                "emb": p["emb"] or p["hidden"], "layers": p["layers"], "vocab": p["vocab"]}
    source = (REPO / "bench" / "workloads" / f"{w}.py").read_text()
    if "Written from bench/workloads/_template.py" in source.split('"""')[1]:
        # a workload from the template reads every size from its cell's params (new-benchmark)
        return {k: v for k, v in params.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    raise AssertionError(f"no rule for workload {w} of {cell.id}: add one")


def formula_names(model):
    exprs = [model["forward_flops_per_item"], model.get("items_per_batch", ""),
             model.get("items_per_epoch", "")]
    rl = model["roofline"]
    exprs += [rl["optional_flops_per_item"], rl["no_input_grad_flops_per_item"], rl["weights"],
              *rl["bytes_per_step"].values()]
    return {n for e in exprs for n in re.findall(r"[A-Za-z_]\w*", e)} - {"weights"}


@pytest.mark.parametrize("suite,cell", CELLS, ids=[c.id for _, c in CELLS])
def test_every_cell_is_counted_with_its_workloads_sizes(suite, cell):
    _, model = flops.model_for(cell.id)
    names = flops.resolve_params(model, cell.params)
    sizes = workload_sizes(cell)
    used = formula_names(model)
    missing = used - set(names)
    assert not missing, f"{cell.id}: the FLOP model lacks {missing}"
    for k in sorted(used & set(sizes)):
        assert names[k] == sizes[k], f"{cell.id} ({suite}): FLOP model {k}={names[k]}, workload {sizes[k]}"
    assert used - set(sizes) <= {"layers"} or cell.workload.startswith("s000_"), (
        f"{cell.id}: FLOP names the workload rule does not cover: {used - set(sizes)}")


def test_the_known_disagreements_are_gone():
    """002's WikiText-2 epoch (1,562,175 stated, ~3.37 M windows in the data) and 004's PyTorch vocabulary
    (35,000 in the FLOP model, 33,278 in the cell)."""
    cell = suites.load_suite("keras-mxnet-2018").cell("002/keras-mxnet/lstm128-unroll/wikitext2-char-b128-g0")
    _, model = flops.model_for(cell.id)
    assert flops.resolve_params(model, cell.params)["epoch_items"] == workload_sizes(cell)["epoch_items"]
    assert workload_sizes(cell)["epoch_items"] == 3366654
    cell = suites.load_suite("cudnn-lstm-2018").cell("004/pytorch/word_lm_large/b20-s35-h1500")
    _, model = flops.model_for(cell.id)
    assert flops.resolve_params(model, cell.params)["vocab"] == 33278


def published_with_model():
    timed = flops.load_models()["metric_quantities"]
    return [n for n in suites.all_sources_published()
            if n["cell"] in PARAMS and flops.model_for(n["cell"]) and n["metric"] in timed]


@pytest.mark.parametrize("number", published_with_model(), ids=lambda n: n["id"])
def test_published_numbers_are_counted_like_their_cells(number):
    """A published number's roofline bound and efficiency use its cell's FLOPs per item."""
    pub = devices.publication_device(number)
    if not pub.get("peak_tflops"):
        pytest.skip(f"no peak for {pub['label']}")
    try:
        cell_flops = flops.flops_per_item(number["cell"], number["metric"], PARAMS[number["cell"]])
    except flops.NotApplicable as e:
        pytest.skip(str(e))
    rf = roofline.bound(number, pub)
    assert rf is not None
    assert rf["forward_flops_per_item"] == pytest.approx(cell_flops["forward_flops_per_item"], rel=1e-12)
