"""The environment that will really run, and bring your own interpreter.

Real interpreter probes on this machine (the installed torch, TensorFlow and JAX are CPU builds; a
small venv stands for a user's interpreter), preflight of the local runner on stored fingerprints
(tests/data/fingerprints, made by hand: no GPU host was fingerprinted), the fallback chain for the
local runner, and the one-line errors. The GPU answers of the frameworks are never seen here: the
pure interpretation of them is tested on synthetic probe output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.version import Version

from reprokit.catalog import suites
from reprokit.errors import UserError
from reprokit.plan import compat as compat_data
from reprokit.plan import preflight
from reprokit.probes import fingerprint
from reprokit.runners import byo, env_preflight, env_probe, host_preflight, select, venvs

from .test_slurm import cluster  # noqa: F401  (the one-node cluster fixture, for the Slurm test)

ROOT = Path(__file__).resolve().parents[2]
FPS = ROOT / "tests" / "data" / "fingerprints"
STACKS = suites.load_stacks()
COMPAT = compat_data.load_compat()


@pytest.fixture(autouse=True)
def probe_cache(tmp_path_factory, monkeypatch):
    """A probe cache of the test session's own, and no --python mapping left behind."""
    monkeypatch.setenv("REPROKIT_ENV_PROBE_DIR", str(tmp_path_factory.getbasetemp() / "env-probes"))
    old = byo.use({})
    yield
    byo.use(old)


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory) -> str:
    """A user's own interpreter: a venv of this Python that sees its packages (torch among them).
    --system-site-packages reaches the base installation's packages only; where this Python is itself
    a venv (the GPU host of docs/gpu-run ran the tests with /opt/torch/.venv/bin/python3, whose torch
    the new venv then could not import), a .pth file names this Python's own site-packages too."""
    import site

    d = tmp_path_factory.mktemp("byo") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(d)],
                   check=True, timeout=300)
    py = d / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    (Path(purelib) / "reprokit-test-parent.pth").write_text(  # addsitedir: their own .pth files count too
        "".join(f"import site; site.addsitedir({p!r})\n" for p in site.getsitepackages()))
    return str(py)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory) -> str:
    """An interpreter without the frameworks: a venv that does not see this Python's packages."""
    d = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)], check=True, timeout=300)
    return str(d / "bin" / "python")


def _ask(code: str) -> list:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def truth() -> dict:
    """What the installed frameworks say, asked directly (not through the kit): the probe must agree
    on this machine (CPU builds) and on a GPU machine alike."""
    import importlib.util

    out = {"torch": _ask("import json, torch; print(json.dumps([torch.version.cuda, "
                         "bool(torch.cuda.is_available() and torch.cuda.device_count())]))")}
    # the version the imported module states (with its local label: 2.13.0+cpu, 2.11.0+cu130; the
    # installed distribution's metadata may omit it, as the GPU host's 2.11.0 did) and its cuDNN
    out["torch_build"] = _ask("import json, torch; c = torch.backends.cudnn; print(json.dumps("
                              "{'version': torch.__version__, 'cudnn': c.version() if c.is_available() "
                              "else None}))")
    out["tensorflow"] = _ask(
        "import json, tensorflow as tf; print(json.dumps([bool(tf.test.is_built_with_cuda()), "
        "bool(tf.config.list_physical_devices('GPU'))]))") \
        if importlib.util.find_spec("tensorflow") else None
    out["jax"] = _ask("import json, jax; print(json.dumps([d.platform for d in jax.devices()]))") \
        if importlib.util.find_spec("jax") else None
    return out


def stored(name: str) -> dict:
    return json.loads((FPS / f"{name}.json").read_text())


def cells(suite: str, pattern: str) -> list:
    return [c for c in suites.load_suite(suite).cells if pattern in c.id and c.implemented]


# -- real probes ---------------------------------------------------------------------------------
def test_the_installed_torch_is_probed_in_its_own_process_and_says_what_it_can_use(truth):
    rec = env_probe.probe(sys.executable, "torch")
    cuda, sees = truth["torch"]
    assert rec["framework"] == "torch" and rec["version"] == truth["torch_build"]["version"]
    # the local label (+cpu, +cu130) is the build, not another release: the installed distribution's
    # version matches the probed one as a pin would, so it alone makes no substitution
    assert byo.pin_matches(Version(metadata.version("torch")).public, rec["version"]) is True
    assert rec["cuda"] == cuda and rec["gpu_build"] is (cuda is not None)
    assert rec["devices"] == (["cpu", "gpu"] if sees else ["cpu"])
    if cuda is None:  # this project's machines: the CPU wheel
        assert "CPU-only build" in rec["why"]
    assert rec["byo"] is False and rec["python"] == sys.executable
    assert "bench/env_probe.py torch" in rec["probe"]


def test_the_driver_process_imports_no_framework_to_probe(truth):
    code = ("import sys; from reprokit.runners import env_probe; "
            "r = env_probe.probe(sys.executable, 'tensorflow'); "
            "print(r['framework'], r['devices'], 'tensorflow' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    if truth["tensorflow"] is None:  # not installed (the GPU host of docs/gpu-run had none)
        devices = []
    else:
        devices = ["cpu", "gpu"] if truth["tensorflow"][1] else ["cpu"]
    assert out.stdout.split() == ["tensorflow", str(devices).replace(" ", ""), "False", "False"]


def test_tensorflow_and_jax_say_what_they_can_use(truth):
    tf = env_probe.probe(sys.executable, "keras-tf")  # keras-tf stacks probe TensorFlow
    assert tf["framework"] == "tensorflow"
    if truth["tensorflow"] is None:  # not installed (the project's GPU machine has none)
        assert tf["devices"] == [] and "No module named 'tensorflow'" in tf["error"]
    else:
        assert tf["gpu_build"] is truth["tensorflow"][0]
        assert tf["devices"] == (["cpu", "gpu"] if truth["tensorflow"][1] else ["cpu"])
    jax = env_probe.probe(sys.executable, "jax")
    gpu = any(p in env_probe.GPU_PLATFORMS for p in truth["jax"] or [])
    assert jax["version"] == metadata.version("jax")
    assert jax["devices"] == (["cpu", "gpu"] if gpu else ["cpu"])
    if not gpu and jax["gpu_build"] is False:
        assert "no CUDA or ROCm plugin" in jax["why"]


def test_a_probe_is_cached_per_interpreter_and_installed_packages(bare_venv, monkeypatch):
    first = env_probe.probe(bare_venv, "python")
    assert "cached" not in first["probe"] and first["devices"] == ["cpu"]
    env_probe._MEMO.clear()  # a new run: the file cache answers
    assert "(cached in " in env_probe.probe(bare_venv, "python")["probe"]
    key = env_probe.cache_key(bare_venv, "python", None)
    site = next(Path(bare_venv).parent.parent.glob("lib/python*/site-packages"))
    (site / "newpkg-1.0.dist-info").mkdir()  # a package installed: probed again
    try:
        assert env_probe.cache_key(bare_venv, "python", None) != key
        env_probe._MEMO.clear()
        assert "cached" not in env_probe.probe(bare_venv, "python")["probe"]
    finally:
        (site / "newpkg-1.0.dist-info").rmdir()
    assert env_probe.cache_key(bare_venv, "python", {"THEANO_FLAGS": "device=cuda"}) != key
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7,6")  # the user's own variables count too
    assert env_probe.cache_key(bare_venv, "python", None) != key


def test_a_venv_stack_is_probed_through_its_own_interpreter(user_venv, truth):
    rec = env_probe.probe(user_venv, "torch")
    assert rec["python"] == user_venv and rec["version"] == truth["torch_build"]["version"]
    assert rec["devices"] == (["cpu", "gpu"] if truth["torch"][1] else ["cpu"])


def test_an_interpreter_without_the_framework_reports_the_import_error(bare_venv):
    rec = env_probe.probe(bare_venv, "torch")
    assert rec["devices"] == [] and "No module named 'torch'" in rec["error"]


# -- what the frameworks' GPU answers would mean (synthetic probe output: never seen here) ---------
@pytest.mark.parametrize("framework, fw, dists, devices, gpu_build", [
    ("torch", {"version": "2.11.0+cu130", "cuda": "13.0", "cudnn_version": 91000, "cuda_available": True,
               "cuda_arch_list": ["sm_80", "sm_90", "compute_90"],
               "devices": [{"index": 0, "name": "NVIDIA H200", "capability": [9, 0]}]},
     [], ["cpu", "gpu"], True),
    ("torch", {"version": "1.0.0", "cuda": "9.0.176", "cudnn_version": 7401, "cuda_available": False,
               "cuda_arch_list": None, "devices": []}, [], ["cpu"], True),
    ("tensorflow", {"version": "2.15.0", "built_with_cuda": True,
                    "build_info": {"cuda_version": "12.2", "cudnn_version": "8",
                                   "cuda_compute_capabilities": ["sm_60", "sm_90", "compute_90"]},
                    "physical_devices": [{"name": "/physical_device:GPU:0", "device_type": "GPU"}]},
     [], ["cpu", "gpu"], True),
    ("jax", {"version": "0.10.2", "default_backend": "cpu", "devices": [{"id": 0, "platform": "cpu"}]},
     ["jax_cuda12_plugin-0.10.2.dist-info"], ["cpu"], True),
    ("jax", {"version": "0.10.2", "default_backend": "gpu", "devices": [{"id": 0, "platform": "gpu"}]},
     [], ["cpu", "gpu"], True),
    ("theano", {"version": "0.9.0", "device": "cuda", "errors": {}}, [], ["cpu", "gpu"], True),
    ("theano", {"version": "0.9.0", "device": "cpu", "errors": {}}, [], ["cpu"], False),
    ("keras-mxnet", {"version": "1.9.1", "num_gpus": 0,
                     "features": {"enabled": ["CPU_SSE"], "disabled": ["CUDA", "CUDNN"]}},
     [], ["cpu"], False),
    ("keras-mxnet", {"version": "1.9.1", "num_gpus": 2,
                     "features": {"enabled": ["CUDA", "CUDNN"], "disabled": []}}, [], ["cpu", "gpu"], True),
])
def test_interpret_the_frameworks_answers(framework, fw, dists, devices, gpu_build):
    rec = env_probe.interpret({"python": {"executable": "/p", "version": "3.11.7"},
                               "framework": dict(fw, name=framework), "dists": dists}, framework)
    assert rec["devices"] == devices and rec["gpu_build"] is gpu_build and rec["why"]
    if framework == "torch" and fw["cuda_available"]:
        assert rec["cudnn"] == "9.10.0" and rec["arch_list"] == ["sm_80", "sm_90", "compute_90"]
    if framework == "torch" and not fw["cuda_available"]:
        assert rec["cudnn"] == "7.4.1" and "is_available() is False" in rec["why"]


# -- preflight of the local runner on stored fingerprints -------------------------------------------
def test_h200_fingerprint_with_its_environments_runs_the_003_004_pytorch_cells_on_the_installed_torch():
    fp = stored("h200")
    for suite, pattern in (("stacked-lstm-2019", "003/pytorch"), ("cudnn-lstm-2018", "004/pytorch")):
        chosen = cells(suite, pattern)
        assert chosen
        env_of = env_preflight.environments_for(fp, STACKS, other_host=True, build=False)
        v = host_preflight.suite_verdicts(chosen, fp, "local", "gpu", other_host=True, environments=env_of)
        for c in chosen:
            assert v[c.id]["runnable"], v[c.id]["reasons"]
            env_check = next(x for x in v[c.id]["checks"] if x["name"] == "environment")
            assert env_check["ok"] and "torch 2.11" in env_check["detail"]
        assert env_of.seen["torch-1.3"]["where"] == "fingerprint"
        assert "as h200.json states them" in env_preflight.where_line(env_of, "h200.json")


@pytest.mark.parametrize("name", ["a100", "h100", "rtx5090", "b200"])
def test_stored_fingerprints_judge_this_hosts_torch_assumed_there(name, truth):
    fp = stored(name)
    chosen = cells("stacked-lstm-2019", "003/pytorch")
    env_of = env_preflight.environments_for(fp, STACKS, other_host=True, build=False)
    v = host_preflight.suite_verdicts(chosen, fp, "local", "gpu", other_host=True, environments=env_of)
    for c in chosen:
        env_check = next(x for x in v[c.id]["checks"] if x["name"] == "environment")
        if truth["torch"][0] is None:  # a CPU build here: refused, naming the fix
            assert not v[c.id]["runnable"] and not env_check["ok"]
            assert "CPU-only build of torch" in v[c.id]["reasons"][0]
            assert "--python torch-1.3=PATH" in v[c.id]["reasons"][0]
        else:  # a CUDA build here: assumed to see the GPU there, and said so
            assert env_check["ok"] and any(r.startswith("assumed: ") for r in v[c.id]["reasons"])
    assert env_of.seen["torch-1.3"]["where"] == "assumed"
    line = env_preflight.where_line(env_of, f"{name}.json")
    assert "probed on THIS host and assumed" in line and "not checked" in line


def _env(arch, cuda="12.8", devices=("cpu", "gpu")):
    return {"python": "/opt/torch/bin/python", "framework": "torch", "version": "2.7.0", "cuda": cuda,
            "cudnn": "9.1.0", "arch_list": arch, "gpu_build": True, "devices": list(devices),
            "why": "synthetic", "probe": "synthetic", "byo": True, "error": None, "where": "here"}


@pytest.mark.parametrize("host, arch, status", [
    ("h100", ["sm_80", "sm_90"], "ok"),
    ("h100", ["sm_80", "sm_86", "compute_86"], "jit"),  # no sm_90 SASS: PTX JIT
    ("rtx5090", ["sm_80", "sm_90"], "blocked"),  # neither SASS nor PTX for sm_120
    ("b200", None, "ok"),  # unknown: a warning (CUDA 12.8 can emit sm_100)
])
def test_the_environments_arch_list_decides_coverage_as_an_images_would(host, arch, status):
    fp = stored(host)
    h = preflight.host_from_fingerprint(fp)
    v = preflight.check_stack_cell("torch-1.3", h, 1, runner="local", compat=COMPAT,
                                   environments=lambda s: _env(arch))
    assert v["status"] == status, v["reasons"]
    assert not any(c["name"].startswith("arch:torch 1.3") for c in v["checks"])  # not the image's


def test_a_cpu_cell_is_not_judged_on_its_environment():
    h = preflight.host_from_fingerprint(stored("h100"))
    seen = []
    v = preflight.check_stack_cell("torch-1.3", h, 0, runner="local", compat=COMPAT,
                                   environments=lambda s: seen.append(s))
    assert v["runnable"] and not seen


def test_an_environment_not_built_needs_a_probe_and_nothing_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("REPROKIT_VENV_DIR", str(tmp_path / "venvs"))
    monkeypatch.setenv("REPROKIT_STAND_INS", "1")
    assert venvs.environment_for("keras-mxnet-1.2", STACKS["keras-mxnet-1.2"], build=False) is None
    assert not (tmp_path / "venvs").exists()
    env_of = env_preflight.environments_for(stored("h100"), STACKS, other_host=True, build=False)
    h = preflight.host_from_fingerprint(stored("h100"))
    v = preflight.check_stack_cell("keras-mxnet-1.2", h, 1, runner="local", compat=COMPAT,
                                   environments=env_of)
    assert v["status"] == "probe" and "not built yet" in v["reasons"][0]


# -- fallback chains apply to the local runner -----------------------------------------------------
def test_the_local_runner_walks_the_chain_to_an_environment_that_can_use_the_gpu():
    fp = dict(stored("h100"), environments={
        "torch-1.3": _env(None, cuda=None, devices=["cpu"]) | {"gpu_build": False, "why": "CPU-only"},
        "torch-modern": _env(["sm_80", "sm_90", "compute_90"])})
    chosen = cells("stacked-lstm-2019", "003/pytorch")
    v = host_preflight.suite_verdicts(chosen, fp, "local", "gpu", other_host=True)
    for c in chosen:
        assert v[c.id]["runnable"] and v[c.id]["chain"]["stack"] == "torch-modern"
        sub = v[c.id]["chain"]["substitution"]
        assert sub["used"].startswith("fallback link torch-modern (local environment /opt/torch/bin/python")
    none = dict(fp, environments={"torch-1.3": fp["environments"]["torch-1.3"],
                                  "torch-modern": fp["environments"]["torch-1.3"]})
    v = host_preflight.suite_verdicts(chosen, none, "local", "gpu", other_host=True)
    assert all(not v[c.id]["runnable"] and "no link runs here" in v[c.id]["reasons"][-1] for c in chosen)


# -- --device on the local runner ----------------------------------------------------------------
def test_device_auto_on_this_host_is_cpu_and_says_why():
    if fingerprint.nvml_gpus()[0]:
        pytest.skip("this host has a GPU: the CPU-host branch is not the one that runs here")
    device, to_cpu, why = select.local_device("auto", cells("smoke", "pytorch"))
    assert device == "cpu" and not to_cpu and why.startswith("--device auto: this host has no GPU (")


def test_device_gpu_and_auto_on_a_gpu_host_judge_the_real_cpu_environments(monkeypatch, truth):
    """NVML is replaced by the stored H100 fingerprint (pure choice logic); the environments judged
    are this machine's real ones (the installed torch: a CPU build)."""
    if truth["torch"][1]:
        pytest.skip("the installed torch sees a GPU here: its environment can use one")
    fp = stored("h100")
    monkeypatch.setattr(fingerprint, "nvml_gpus", lambda: (fp["gpus"], {"available": True}))
    monkeypatch.setattr(fingerprint, "host_fingerprint", lambda: fp)
    chosen = cells("stacked-lstm-2019", "003/pytorch")
    with pytest.raises(UserError) as e:
        select.local_device("gpu", chosen)
    msg = str(e.value)
    assert msg.startswith("--device gpu: environment of torch-1.3 (") and "CPU-only build" in msg
    assert "pass --python torch-1.3=PATH" in msg and "\n" not in msg
    assert select.local_device("auto", chosen)[0] == "cpu"
    assert "no environment here can use the GPU" in select.local_device("auto", chosen)[2]


# -- bring your own interpreter -----------------------------------------------------------------
def test_byo_interpreter_runs_the_stack_with_its_versions_labelled(user_venv, truth):
    byo.use(byo.check([("torch-1.3", user_venv)], STACKS))
    env = venvs.environment_for("torch-1.3", STACKS["torch-1.3"], say=lambda *_: None)
    assert env.python == user_venv and env.chosen["byo"] and env.chosen["candidate"] == "byo"
    version, cuda = truth["torch_build"]["version"], truth["torch"][0]
    assert env.probe["byo"] and env.probe["version"] == version
    subs = env.substitutes
    expected = ["torch 1.3 (stacks.yaml pin of torch-1.3)"]  # Python unstated
    if cuda is not None:  # a CUDA build of today's torch: neither CUDA 10.0 nor cuDNN 7.6.2 (the pins)
        orig = STACKS["torch-1.3"]["original"]
        assert not cuda.startswith(orig["cuda"] + ".") and cuda != orig["cuda"]
        expected.append(f"CUDA {orig['cuda']} (stacks.yaml pin of torch-1.3)")
        if truth["torch_build"]["cudnn"] is not None:
            expected.append(f"cuDNN {orig['cudnn']} (stacks.yaml pin of torch-1.3)")
    assert [s["original"] for s in subs] == expected
    build = "CPU-only build" if cuda is None else f"CUDA {cuda} build"
    assert subs[0]["used"].startswith(f"torch {version} ({build}) at {user_venv}")
    from reprokit.analysis import standins
    assert standins.classify(subs[0])["kind"] == "version"


@pytest.mark.parametrize("pin, version, same", [
    ("1.3", "1.3.1", True), ("1.3", "2.13.0+cpu", False), ("unstated", "3.11.7", None),
    ("2.13.0", "2.13.0+cpu", True), ("2.11", "2.11.0+cu130", True), ("2.13.0", "2.11.0+cu130", False),
    ("3.5+", "3.11.7", True), ("2.7.13", "3.11.7", False), ("0.1.12_2", "2.1.0", False),
    ("Keras 2.1.6 / TensorFlow 1.8.0", "1.8.0", True), ("10.0", "10.0.130", True)])
def test_pins_are_compared_by_their_version_numbers(pin, version, same):
    assert byo.pin_matches(pin, version) is same


def test_byo_bad_inputs_are_one_line(tmp_path, bare_venv):
    notes = tmp_path / "notes.txt"
    notes.write_text("x\n")
    cases = [([("nope", sys.executable)], "unknown stack 'nope'"),
             ([("torch-1.3", str(tmp_path / "missing"))], "no such file"),
             ([("torch-1.3", str(tmp_path))], "is a directory"),
             ([("torch-1.3", str(notes))], "is not executable"),
             ([("torch-1.3", sys.executable), ("torch-1.3", bare_venv)], "already given")]
    for pairs, text in cases:
        with pytest.raises(UserError) as e:
            byo.check(pairs, STACKS)
        assert text in str(e.value) and "\n" not in str(e.value) and "; " in str(e.value)
    with pytest.raises(UserError) as e:
        byo.verify(byo.check([("torch-1.3", bare_venv)], STACKS), STACKS)
    assert "cannot import torch" in str(e.value) and "No module named 'torch'" in str(e.value)
    with pytest.raises(UserError):
        byo.option("torch-1.3")
    (tmp_path / "c.yaml").write_text("- a list\n")
    with pytest.raises(UserError) as e:
        byo.load_config(str(tmp_path / "c.yaml"))
    assert "not a mapping" in str(e.value)
    (tmp_path / "ok.yaml").write_text(f"torch-1.3: {sys.executable}\n")
    assert byo.load_config(str(tmp_path / "ok.yaml")) == [("torch-1.3", sys.executable)]


def test_run_with_a_users_interpreter_records_it_and_labels_the_cells(tmp_path, user_venv):
    """A real local run of the smoke suite's PyTorch cell with --python torch-0.1=<a user's venv>."""
    env = {**os.environ, "REPROKIT_ENV_PROBE_DIR": os.environ["REPROKIT_ENV_PROBE_DIR"]}
    p = subprocess.run([sys.executable, str(ROOT / "reproduce.py"), "run", "--suite", "smoke", "--quick",
                        "--cells", "smoke/pytorch*", "--python", f"torch-0.1={user_venv}",
                        "--results", str(tmp_path), "--no-report"],
                       capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "runner: local (--python names the interpreter of torch-0.1: local runner)" in p.stderr
    if not fingerprint.nvml_gpus()[0]:
        assert "device: cpu (--device auto: this host has no GPU (" in p.stderr
    run = json.loads(next(tmp_path.glob("*/run.json")).read_text())
    rec = run["environments"]["torch-0.1"]
    assert rec["byo"] and rec["python"] == user_venv and rec["framework"] == "torch"
    cell = json.loads(next(tmp_path.glob("*/cells/smoke__pytorch*.json")).read_text())
    assert cell["status"] == "ok" and cell["environment"]["chosen"]["byo"]
    originals = [s["original"] for s in cell["implementation"]["substitutes"]]
    assert "torch 0.1.12_2 (stacks.yaml pin of torch-0.1)" in originals
    assert "Python 2.7.13 (stacks.yaml pin of torch-0.1)" in originals
    rundir = next(tmp_path.glob("*/run.json")).parent  # resumed without --python: refused
    p = subprocess.run([sys.executable, str(ROOT / "reproduce.py"), "run", "--suite", "smoke", "--quick",
                        "--cells", "smoke/pytorch*", "--resume", str(rundir), "--results", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"stack torch-0.1 ran with --python torch-0.1={user_venv}, this command gives none" in p.stderr


@pytest.mark.usefixtures("cluster")
def test_slurm_local_launcher_runs_the_users_interpreter_on_the_node(tmp_path, user_venv):
    """The real one-node Slurm cluster (tests/runners/test_slurm.py's fixture): the interpreter named with
    --python reaches the task, and the run records it."""
    p = subprocess.run([sys.executable, str(ROOT / "reproduce.py"), "run", "--suite", "smoke", "--quick",
                        "--runner", "slurm", "--cells", "smoke/pytorch*",
                        "--python", f"torch-0.1={user_venv}", "--results", str(tmp_path), "--no-report"],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path,
                       env={**os.environ, "REPROKIT_ENV_PROBE_DIR": os.environ["REPROKIT_ENV_PROBE_DIR"]})
    assert p.returncode == 0, p.stderr[-3000:]
    run = json.loads(next(tmp_path.glob("*/run.json")).read_text())
    assert run["environments"]["torch-0.1"]["byo"] and run["environments"]["torch-0.1"]["python"] == user_venv
    cell = json.loads(next(tmp_path.glob("*/cells/smoke__pytorch*.json")).read_text())
    assert cell["status"] == "ok" and cell["runner"]["launcher"] == "local"
    assert cell["runner"]["python"] == user_venv and cell["environment"]["chosen"]["byo"]
    assert "torch 0.1.12_2 (stacks.yaml pin of torch-0.1)" in [
        s["original"] for s in cell["implementation"]["substitutes"]]


def test_slurm_local_launcher_gpu_runs_are_judged_on_the_environments_assumed_on_the_node(truth):
    chosen = cells("stacked-lstm-2019", "003/pytorch")
    verdicts, by_stack = select.gpu_environments(chosen, stored("h200"), other_host=True, runner="slurm")
    assert not by_stack and all(verdicts[c.id]["runnable"] for c in chosen)
    assert all(any(x["name"] == "environment" for x in verdicts[c.id]["checks"]) for c in chosen)
    if truth["torch"][0] is not None:
        return  # a CUDA torch here is assumed to run on the node: nothing to refuse
    verdicts, by_stack = select.gpu_environments(chosen, stored("h100"), other_host=True, runner="slurm")
    assert "CPU-only build of torch" in by_stack["torch-1.3"]
    with pytest.raises(UserError) as e:
        select.refuse_gpu("--runner slurm --device gpu", by_stack, "--device cpu")
    assert str(e.value).startswith("--runner slurm --device gpu: environment of torch-1.3 (")


def test_the_environments_section_a_fingerprint_file_may_carry_is_printed_by_the_module():
    p = subprocess.run([sys.executable, "-m", "reprokit.runners.env_probe", "--stack", "torch-1.3",
                        "--stack", "smoke-python", "--no-build"], capture_output=True, text=True,
                       cwd=ROOT, timeout=600, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    envs = json.loads(p.stdout)["environments"]
    assert set(envs) == {"torch-1.3", "smoke-python"}
    assert envs["torch-1.3"]["framework"] == "torch" and envs["smoke-python"]["framework"] == "python"
    fp = dict(stored("h100"), environments=envs)  # carried by a fingerprint: judged as stated
    env_of = env_preflight.environments_for(fp, STACKS, other_host=True, build=False)
    assert env_of("torch-1.3")["where"] == "fingerprint"


def test_a_users_interpreter_keeps_the_users_variables_over_the_stacks(monkeypatch):
    spec = STACKS["theano-0.9"]
    assert "device=cpu" in byo.env_vars(spec)["THEANO_FLAGS"]
    monkeypatch.setenv("THEANO_FLAGS", "device=cuda,floatX=float32")
    assert "THEANO_FLAGS" not in byo.env_vars(spec)


def test_the_fingerprint_command_carries_the_environments_preflight_reads(tmp_path):
    """`reproduce.py fingerprint --environments` writes the section `preflight --fingerprint` uses
    as the file states it (before, only `python -m reprokit.runners.env_probe` printed it). Here:
    this host's environments, put beside a stored H100 host's GPUs (driver 570.133.20, CUDA 12.8).
    Whether torch-1.3's cells can use those GPUs follows from what this host's torch is: a CPU build
    cannot; a CUDA build can only where the stored driver supports its CUDA (the GPU host of
    docs/gpu-run, torch 2.11.0+cu130, could not: CUDA 13.0 > 12.8)."""
    from reprokit.files import REPO

    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "fingerprint", "--environments",
                        "--no-build"], capture_output=True, text=True, timeout=600, cwd=str(REPO))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["kind"] == "host_fingerprint" and doc["environments"]["torch-1.3"]["framework"] == "torch"
    h100 = stored("h100")
    f = tmp_path / "h100-with-these-envs.json"
    f.write_text(json.dumps({**h100, "environments": doc["environments"]}))

    def preflight_cli(*extra):
        return subprocess.run([sys.executable, str(REPO / "reproduce.py"), "preflight", "--suite",
                               "stacked-lstm-2019", "--runner", "local", "--device", "gpu", "--fingerprint",
                               str(f), *extra], capture_output=True, text=True, timeout=600, cwd=str(REPO),
                              env={**os.environ, "COLUMNS": "250"})

    q = preflight_cli()
    out = " ".join((q.stdout + q.stderr).split())
    assert q.returncode == 0 and f"as {f} states them" in out, out
    q = preflight_cli("--json")
    assert q.returncode == 0, q.stderr
    verdicts = {cid: v for cid, v in json.loads(q.stdout).items() if cid.startswith("003/pytorch/")}
    assert verdicts
    env = doc["environments"]["torch-1.3"]
    sees_gpu = env["devices"] == ["cpu", "gpu"]
    driver_cuda = h100["nvidia"]["cuda_driver_version"]
    fits = sees_gpu and Version(env["cuda"]) <= Version(driver_cuda)
    for cid, v in verdicts.items():
        assert v["runnable"] is fits, (cid, v["reasons"])
        if not sees_gpu:
            assert "cannot use a GPU" in v["reasons"][0], v["reasons"]
        elif not fits:
            why = " ".join(v["reasons"])
            assert f"driver supports CUDA {driver_cuda} < {env['cuda']}" in why, why


def _gpu_run_fingerprint() -> dict:
    """The kit's fingerprint of the GPU host of docs/gpu-run (one H100 80GB HBM3, driver 580.159.04,
    CUDA 13.0), with the environments that host's probes recorded (the gpu-smoke run's run.json:
    torch 2.11.0+cu130 for the torch stacks, JAX 0.11.2 for jax-modern, all named with --python)."""
    gpu_run = ROOT / "docs" / "gpu-run"
    fp = json.loads((gpu_run / "fingerprint.json").read_text())
    (run,) = gpu_run.glob("*-gpu-smoke/run.json")
    return dict(fp, environments=json.loads(run.read_text())["environments"])


def test_preflight_on_the_real_h100_fingerprint_says_what_the_gpu_session_saw():
    """docs/gpu-run/session.log's preflight (local runner, --device gpu, on that host): the modern
    suite's PyTorch cells runnable on torch-modern and its JAX cells runnable on jax-modern with a
    warning that JAX's architecture coverage is unverified; stacked-lstm-2019's PyTorch cells
    runnable on torch-1.3. Here the same, from the stored fingerprint and environments alone."""
    fp = _gpu_run_fingerprint()
    h = preflight.host_from_fingerprint(fp)
    assert [g["name"] for g in fp["gpus"]] == ["NVIDIA H100 80GB HBM3"] and fp["nvidia"]["device_count"] == 1
    assert fp["nvidia"]["driver_version"] == "580.159.04" and fp["nvidia"]["cuda_driver_version"] == "13.0"
    assert fp["gpus"][0]["compute_capability"] == "9.0" and h is not None
    env_of = env_preflight.environments_for(fp, STACKS, other_host=True, build=False)
    modern = [c for c in suites.load_suite("modern").cells
              if c.implemented and c.stack in ("torch-modern", "jax-modern")]
    assert {c.stack for c in modern} == {"torch-modern", "jax-modern"}
    v = host_preflight.suite_verdicts(modern, fp, "local", "gpu", other_host=True, environments=env_of)
    for c in modern:
        assert v[c.id]["runnable"], (c.id, v[c.id]["reasons"])
        if c.framework not in ("pytorch", "jax"):  # source 002's Keras cells: no GPU checks ("-" there)
            continue
        checks = {x["name"]: x for x in v[c.id]["checks"]}
        assert all(x["ok"] for x in checks.values()), checks
        assert checks["gpu_count"]["detail"] == "cell needs 1 GPU(s), host has 1"
        if c.stack == "jax-modern":
            assert "jax 0.11.2" in checks["environment"]["detail"]
            assert any("architecture coverage of jax 0.11.2 is unverified" in r for r in v[c.id]["reasons"])
        else:
            assert "torch 2.11.0+cu130" in checks["environment"]["detail"] and v[c.id]["reasons"] == []
            assert "driver 580.159.04 >= 580 needed by CUDA 13.0" in checks["driver"]["detail"]
            assert "arch:torch 2.11.0+cu130" in checks  # sm_90 in its list: the H100's own SASS
    assert env_of.seen["torch-modern"]["where"] == env_of.seen["jax-modern"]["where"] == "fingerprint"
    lstm = cells("stacked-lstm-2019", "003/pytorch")
    v = host_preflight.suite_verdicts(lstm, fp, "local", "gpu", other_host=True, environments=env_of)
    assert lstm and all(v[c.id]["runnable"] for c in lstm), [v[c.id]["reasons"] for c in lstm]
    # the stored hand-made H100 (driver 570.133.20, CUDA 12.8) refuses that same CUDA 13.0 build
    old = dict(stored("h100"), environments=fp["environments"])
    v = host_preflight.suite_verdicts(lstm, old, "local", "gpu", other_host=True,
                                 environments=env_preflight.environments_for(old, STACKS, other_host=True,
                                                                             build=False))
    assert not any(v[c.id]["runnable"] for c in lstm)


def test_the_stored_h100_describes_its_gpus_as_fully_as_the_real_one():
    """Every known blocker is evaluated on the real H100 fingerprint and on the stored one (which
    lacked mig_mode until the real host showed that NVML records it: the MIG blocker was then 'not
    evaluated'); the GPU fields the kit reads are there in the real fingerprint's names and units."""
    chosen = [c for c in suites.load_suite("legacy-2017").cells if c.implemented]
    real, fixture = _gpu_run_fingerprint(), stored("h100")
    for fp in (real, fixture):
        v = host_preflight.suite_verdicts(chosen, fp, "docker", "gpu", other_host=True)
        assert not [r for x in v.values() for r in x["reasons"] if "not evaluated" in r]
    kinds = {k: type(val) for k, val in real["gpus"][0].items()}
    for g in fixture["gpus"]:
        assert {k: type(g[k]) for k in kinds if k in g} == {k: kinds[k] for k in g if k in kinds}
        assert {"mig_mode", "memory_total_bytes", "architecture", "compute_capability",
                "driver_version", "cuda_driver_version", "name", "clocks", "power_limit_w"} <= set(g)
        assert set(g["clocks"]) <= set(real["gpus"][0]["clocks"]) and g["name"] == real["gpus"][0]["name"]
