"""Each GPU image runs its own framework's code path: per stack, every framework name a workload uses
on that stack's path exists in the stack's framework version (tests/containers/apipaths.py, API lists in
reprokit/data/framework_apis.yaml with a source URL per entry). The old versions cannot be imported
here, so the check is static; the modern image's versions are the installed ones and answer
themselves. Nothing here ran on a GPU or on the old frameworks.
"""

import glob
import os
import re
from pathlib import Path

import pytest
import yaml

from reprokit import validate
from reprokit.catalog import suites

from . import apipaths

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "api_paths"
APIS = apipaths.load_apis()
STACKS = APIS["stacks"]


def _cells():
    out = set()
    for f in sorted(glob.glob(str(ROOT / "reprokit" / "data" / "suites" / "*.yaml"))):
        for c in suites.load_suite(os.path.basename(f)[:-5]).cells:
            out.add((c.stack, c.workload, c.variant))
    return sorted(out, key=str)


CELLS = _cells()
LISTED = [c for c in CELLS if c[0] in STACKS and all(
    v in (APIS["frameworks"].get(root) or {}) for root, v in STACKS[c[0]]["frameworks"].items())]
LIVE = [c for c in CELLS if c[0] in STACKS and c not in LISTED]


def test_every_stack_of_a_gpu_image_has_its_framework_versions():
    images = {s: v["image"] for s, v in suites.load_stacks().items() if v["image"] != "smoke-python"}
    assert set(STACKS) == set(images)
    assert all(STACKS[s]["image"] == images[s] for s in STACKS)
    assert validate.errors("framework_apis", APIS) == []


def _pins(image: str) -> dict:
    """name -> version of the gpu flavour: requirement pins, extra_files wheels, the TF source tag."""
    recipe = yaml.safe_load((ROOT / "images" / image / "recipe.yaml").read_text())
    gpu = recipe["flavours"]["gpu"]
    text = (ROOT / "images" / image / gpu["requirements"]).read_text()
    pins = {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.M)}
    for e in (gpu.get("wheelhouse") or {}).get("extra_files") or []:
        name, version = os.path.basename(e["url"]).split("-")[:2]
        pins[name] = version.replace("%2B", "+")
    for d in gpu.get("downloads") or []:
        m = re.search(r"tensorflow/archive/v([\d.]+)\.tar\.gz", d["url"])
        if m:
            pins["tensorflow"] = m.group(1)
    return pins


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_the_versions_are_the_ones_the_image_installs(stack):
    pins = _pins(STACKS[stack]["image"])
    for root, version in STACKS[stack]["frameworks"].items():
        names = {"tensorflow": ["tensorflow-gpu", "tensorflow"], "keras": ["keras", "keras-mxnet"],
                 "mxnet": ["mxnet-cu90"], "torch": ["torch"], "theano": ["theano"], "jax": ["jax"],
                 "jaxlib": ["jaxlib"]}[root]
        found = [pins[n] for n in names if n in pins]
        assert found, f"{stack}: no pin of {root} in images/{STACKS[stack]['image']}"
        assert any(apipaths.version_tuple(f)[:3] == apipaths.version_tuple(version)[:3]
                   or f.startswith(version) for f in found), (stack, root, version, found)


@pytest.mark.parametrize("stack, workload, variant", LISTED, ids=[":".join(map(str, c)) for c in LISTED])
def test_every_framework_name_on_the_path_exists_in_that_version(stack, workload, variant):
    report = apipaths.check(workload, stack, STACKS[stack]["frameworks"], variant, APIS)
    assert report.uses, "no framework use found: the walk lost the path"
    assert report.problems == []


@pytest.mark.parametrize("stack, workload, variant", LIVE, ids=[":".join(map(str, c)) for c in LIVE])
def test_the_modern_image_path_against_the_installed_frameworks(stack, workload, variant):
    versions = STACKS[stack]["frameworks"]
    for root, version in versions.items():
        installed = apipaths.installed_version(root)
        if installed is None or apipaths.version_tuple(installed) != apipaths.version_tuple(version):
            pytest.skip(f"{root} {installed} is installed here, the modern image pins {version}")
    report = apipaths.check(workload, stack, versions, variant, APIS)
    assert report.uses and report.problems == []


# -- the old paths: what the test exists to catch -------------------------------------------------
def test_the_tf18_path_written_with_newer_apis_fails():
    src = (DATA / "s004_tensorflow.newer-apis.py.txt").read_text()
    found = " ".join(p for v in ("basic", "block", "cudnn") for p in apipaths.check(
        "s004_tensorflow", "tf-1.8", STACKS["tf-1.8"]["frameworks"], v, APIS, source=src).problems)
    for name in ("tensorflow.compat does not exist in tensorflow 1.8.0",
                 "tensorflow.raw_ops does not exist in tensorflow 1.8.0",
                 "tensorflow.config does not exist in tensorflow 1.8.0",
                 "tensorflow.nn.dropout() has no keyword rate in tensorflow 1.8.0"):
        assert name in found


def test_the_keras_216_path_written_with_newer_apis_fails():
    src = (DATA / "s002_keras.newer-apis.py.txt").read_text()
    found = apipaths.check("s002_keras", "keras-tf-1.8", STACKS["keras-tf-1.8"]["frameworks"], "tensorflow",
                           APIS, source=src).problems
    text = " ".join(found)
    for name in ("keras.ops does not exist in keras 2.1.6",
                 "tensorflow.config does not exist in tensorflow 1.8.0",
                 "keras.layers.LSTM() has no keyword use_cudnn in keras 2.1.6",
                 "keras.optimizers.RMSprop() has no keyword learning_rate in keras 2.1.6"):
        assert name in text


def test_each_old_path_is_its_framework_s_own():
    """The GPU images take the original APIs, not the stand-ins of the CPU images."""
    def uses(workload, stack, variant):
        r = apipaths.check(workload, stack, STACKS[stack]["frameworks"], variant, APIS)
        return {u.path for u in r.uses}
    assert "tensorflow.contrib.rnn.BasicLSTMCell" in uses("s004_tensorflow", "tf-1.8", "basic")
    assert "tensorflow.contrib.rnn.LSTMBlockCell" in uses("s004_tensorflow", "tf-1.8", "block")
    assert "tensorflow.contrib.cudnn_rnn.CudnnLSTM" in uses("s004_tensorflow", "tf-1.8", "cudnn")
    assert "tensorflow.contrib.cudnn_rnn.CudnnLSTM" in uses("s000_tensorflow", "tf-1.2", "cudnn_lstm")
    for stack, variant in (("keras-tf-1.8", "tensorflow"), ("keras-mxnet-1.2", "mxnet")):
        path = uses("s002_keras", stack, variant)
        assert {"keras.models.Sequential", "keras.layers.LSTM", "keras.optimizers.RMSprop"} <= path
        assert not any(p.startswith("mxnet.gluon") for p in path)
    assert "torch.autograd.Variable" in uses("s000_pytorch", "torch-0.1", "nn_lstm")
    assert "torch.set_flush_denormal" not in uses("s000_pytorch", "torch-0.1", "nn_lstm")


# -- the walk itself ------------------------------------------------------------------------------
WORKLOAD = '''
from workloads import _versions

def _gpu(tf):
    if _versions.at_least(tf, 2, 1):
        return tf.config.list_physical_devices("GPU")
    return tf.test.is_gpu_available()

def _api(tf):
    if _versions.at_least(tf, 1, 13):
        return tf.compat.v1
    return tf

def run(ctx):
    import tensorflow as tf
    v1 = _api(tf)
    _gpu(tf)
    if ctx.variant == "a":
        v1.placeholder("float32", name="x")
    else:
        tf.nn.dropout(None, rate=0.5)
    try:
        import tf_keras
    except ImportError:
        pass
'''


def _walk(versions, variant, source=WORKLOAD):
    return apipaths.check("w", "s", versions, variant, {"frameworks": {"tensorflow": {
        "1.8.0": {"source": "https://x", "names": [
            {"name": "tensorflow.placeholder", "source": "https://x", "evidence": "U",
             "params": ["dtype", "shape", "name"]},
            {"name": "tensorflow.test.is_gpu_available", "source": "https://x", "evidence": "U"},
            {"name": "tensorflow.nn.dropout", "source": "https://x", "evidence": "U",
             "params": ["x", "keep_prob", "noise_shape", "seed", "name"]}]}}}}, source=source)


def test_version_switches_and_variants_decide_the_path():
    r = _walk({"tensorflow": "1.8.0"}, "a")
    paths = {u.path for u in r.uses}
    assert "tensorflow.placeholder" in paths and "tensorflow.test.is_gpu_available" in paths
    assert not any("compat" in p or "config" in p or "dropout" in p for p in paths)
    assert r.problems == ["w.py:23: imports tf_keras, which this stack does not have"]
    r = _walk({"tensorflow": "1.8.0"}, "b")
    wanted = r"w\.py:\d+: tensorflow\.nn\.dropout\(\) has no keyword rate in tensorflow 1\.8\.0"
    assert any(re.fullmatch(wanted, p) for p in r.problems)


def test_a_name_with_two_meanings_on_one_path_is_a_problem():
    src = WORKLOAD.replace("    v1 = _api(tf)\n",
                           "    v1 = _api(tf)\n    if ctx.device:\n        v1 = tf.nn\n")
    r = _walk({"tensorflow": "1.8.0"}, "a", src)
    assert any("`v1` means tensorflow and tensorflow.nn on this path" in p for p in r.problems)


def test_a_predicate_the_walk_cannot_decide_keeps_both_branches():
    src = WORKLOAD.replace('if ctx.variant == "a":', "if ctx.device == 'gpu':")
    paths = {u.path for u in _walk({"tensorflow": "1.8.0"}, "a", src).uses}
    assert "tensorflow.placeholder" in paths and "tensorflow.nn.dropout" in paths


def test_the_version_helper_of_the_workloads_agrees_with_the_walk():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_versions", ROOT / "bench" / "workloads" / "_versions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for text, wanted, expected in (("1.8.0", (1, 13), False), ("1.13.1", (1, 13), True),
                                   ("0.1.12_2", (0, 4), False), ("1.3.0+cu100", (1, 3), True),
                                   ("2.0.0-alpha0", (2,), True), ("2.21.0", (2, 16), True)):
        assert mod.at_least(text, *wanted) is expected
        assert apipaths._at_least(text, wanted) is expected
    assert mod.available("json") and not mod.available("reprokit_no_such_package")
