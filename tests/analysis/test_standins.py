"""Stand-ins (reprokit/data/standins.yaml): every substitution the kit records is classified, and the
mechanism stand-ins are exactly the ones that replace what a published number is about."""

import json
from pathlib import Path

from reprokit.analysis import standins
from reprokit.catalog import suites
from reprokit.containers import images

REPO = Path(__file__).resolve().parents[2]


def recorded_substitutions() -> list[dict]:
    """Every substitution in the committed sample run, the stored test runs and stacks.yaml."""
    subs = []
    for f in sorted((REPO / "docs" / "sample-run").glob("*/cells/*.json")) + sorted(
            (REPO / "tests" / "data" / "runs").glob("*/cells/*.json")):
        subs += (json.loads(f.read_text()).get("implementation") or {}).get("substitutes") or []
    for spec in suites.load_stacks().values():
        subs += (spec.get("local") or {}).get("substitutes") or []
        for cand in (spec.get("local") or {}).get("candidates") or []:
            subs += cand["substitutes"]
    for recipe in sorted((REPO / "images").glob("*/recipe.yaml")):  # the Docker runner records them
        subs += (images.recipe(recipe.parent.name).flavour("cpu") or {}).get("substitutes") or []
    return subs


def test_every_recorded_substitution_is_classified():
    subs = recorded_substitutions()
    assert len(subs) > 20
    unclassified = [s for s in subs if not standins.classify(s)["classified"]]
    assert not unclassified, [f"{s['original']} -> {s['used']}" for s in unclassified]


def test_the_mechanisms_are_the_ones_a_number_is_about():
    kinds = {standins.classify(s)["id"]: standins.classify(s)["kind"] for s in recorded_substitutions()}
    mechanisms = {i for i, k in kinds.items() if k == "mechanism"}
    assert mechanisms >= {"cudnn-lstm-as-keras-cpu", "theano-python-scan", "keras-mxnet-as-gluon"}
    assert kinds["framework-release"] == "version" and kinds["tf1-graph-api"] == "api"


def test_a_real_mechanism_from_a_candidate_environment_is_no_stand_in():
    """Where a stack's candidate environment runs the real mechanism (Theano's compiled scan, real
    Keras-MXNet), none of its recorded substitutions blocks a verdict; the fallbacks' still do."""
    stacks = suites.load_stacks()
    for name in ("theano-0.9", "keras-mxnet-1.2"):
        for cand in stacks[name]["local"]["candidates"]:
            kinds = {standins.classify(s)["id"]: standins.classify(s)["kind"] for s in cand["substitutes"]}
            assert "mechanism" not in kinds.values(), (cand["id"], kinds)
    mx_fallback = [standins.classify(s)["id"] for s in stacks["keras-mxnet-1.2"]["local"]["substitutes"]]
    assert "keras-mxnet-as-gluon" in mx_fallback
    cpu_build = {"original": "mxnet-cu90 1.2.0 (CUDA 9.0 build)", "used": "mxnet 1.2.0 CPU", "why": "x"}
    assert standins.classify(cpu_build)["kind"] == "version"
    python = {"original": "Python 3.5", "used": "Python 3.6", "why": "x"}
    assert standins.classify(python)["kind"] == "version"


def test_an_unknown_substitution_counts_as_a_mechanism():
    got = standins.classify({"original": "a brand new kernel", "used": "something else", "why": "test"})
    assert got["mechanism"] and not got["classified"] and got["short"].startswith("unclassified")


def test_another_framework_for_a_stack_the_kit_lacks_is_its_own_kind(data_copy):
    """A Torch7/Lua network run by PyTorch is neither a mechanism (no verdict) nor another release of
    the framework: a `framework` stand-in keeps the verdict and is named beside the number."""
    from reprokit import kitdata
    from reprokit.report.report_rows import _standin_text

    root = data_copy
    f = root / "standins.yaml"
    entry = ("  - id: torch7-as-pytorch\n    kind: framework\n    original: 'Torch7'\n"
             "    short: \"PyTorch nn for Torch7 nn\"\n"
             "    why: \"the kit has no Torch7 stack; PyTorch runs the same layers\"\n")
    f.write_text(f.read_text().replace("standins:\n", "standins:\n" + entry, 1))
    sub = {"original": "Torch7 nn (Lua)", "used": "PyTorch 2.13 nn", "why": "no Lua stack"}
    with kitdata.using(kitdata.KitData(root)):
        got = standins.classify(sub)
    assert (got["kind"], got["mechanism"], got["classified"]) == ("framework", False, True), got
    assert _standin_text({"standins": [got]}) == "PyTorch nn for Torch7 nn"
