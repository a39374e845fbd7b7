"""Host and stack fingerprints (reprokit/probes/fingerprint.py, bench/stack_fingerprint.py).

Runs the real probes, and holds on a machine with an NVIDIA GPU and on one without: the host
fingerprint must say what NVML says there. The development machines have no NVIDIA driver, so the
real path taken there is "no driver"; the NVML success path is exercised with a fake binding
(FakeNVML below, whose every function exists in the installed nvidia-ml-py) and, on a GPU machine,
by the tests marked `gpu` (skipped elsewhere, saying why: tests/conftest.py).
"""
from __future__ import annotations

import ast
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import files
from reprokit.probes import fingerprint as fp

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
import stack_fingerprint as sfp  # noqa: E402

# platform.md: Theano 1.0.5 with numpy 1.23.5 needs an empty blas.ldflags or its import fails.
THEANO_FLAGS = "blas.ldflags=,floatX=float32,device=cpu"

SECRET = "s3cr3t-do-not-leak-4711"
SECRET_VARS = {
    "MY_API_TOKEN": SECRET + "-a",
    "AWS_SECRET_ACCESS_KEY": SECRET + "-b",
    "MXNET_API_KEY": SECRET + "-c",             # allowed prefix, denied name
    "CUDA_CACHE_PASSWORD": SECRET + "-d",       # allowed prefix, denied name
    "TF_TOKEN_app_terraform_io": SECRET + "-e",  # Terraform's TF_ prefix
    "TF_CUDNN_SESSION": SECRET + "-f",          # allowed prefix, denied name
}


def _dump(obj) -> str:
    return json.dumps(obj, sort_keys=True)


# -- host fingerprint -------------------------------------------------------------------------
def test_host_fingerprint_is_json_and_describes_this_machine():
    fpr = json.loads(_dump(fp.host_fingerprint()))
    assert fpr["fingerprint_version"] == 1
    cpu, mem, py = fpr["cpu"], fpr["memory"], fpr["python"]
    assert "error" not in cpu and "error" not in mem and "error" not in py
    assert cpu["logical_cores"] == os.cpu_count()
    assert cpu["model_name"] and cpu["vendor"]
    assert isinstance(cpu["flags"], list) and "sse2" in cpu["flags"]
    gov = cpu["scaling_governor"]
    assert (gov["per_cpu"] is None) == (gov["reason"] is not None)
    assert mem["total_bytes"] > 2**30
    assert py["version"] == platform.python_version() and py["executable"] == sys.executable
    assert fpr["os"]["distro"]["ID"]
    assert platform.node() not in set(_strings(fpr)), "the hostname must not be recorded"
    assert "hostname" not in _dump(fpr)


def _strings(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj


def test_host_fingerprint_says_what_nvml_says_here():
    """With a driver: one record per GPU NVML counts; without: no GPU and NVML's own reason."""
    fpr = fp.host_fingerprint()
    nv = fpr["nvidia"]
    if nv["available"]:
        assert len(fpr["gpus"]) == nv["device_count"] and nv["driver_version"]
        assert all(g["name"] and g["uuid"] for g in fpr["gpus"])
    else:
        assert fpr["gpus"] == []
        assert nv["reason"].startswith(("no NVIDIA driver: NVMLError", "NVML failed to initialise: ",
                                        "NVML bindings not importable"))


def test_nvml_gpus_alone_matches_host_fingerprint():
    gpus, nvidia = fp.nvml_gpus()
    fpr = fp.host_fingerprint()
    assert [(g["index"], g["uuid"], g["name"]) for g in gpus] == \
        [(g["index"], g["uuid"], g["name"]) for g in fpr["gpus"]]
    assert nvidia["available"] == fpr["nvidia"]["available"]
    assert nvidia.get("reason") == fpr["nvidia"].get("reason")


@pytest.mark.gpu
def test_host_fingerprint_describes_a_real_gpu():
    fpr = fp.host_fingerprint()
    nv = fpr["nvidia"]
    assert nv["available"] is True and nv["device_count"] >= 1 and nv["device_count"] == len(fpr["gpus"])
    assert nv["driver_version"] and nv["cuda_driver_version"].count(".") == 1
    for i, g in enumerate(fpr["gpus"]):
        assert g["index"] == i and g["uuid"].startswith("GPU-") and g["name"]
        assert g["memory_total_bytes"] > 2**30 and g["compute_capability"].count(".") == 1
        assert g["architecture"] and not g["architecture"].startswith("unknown"), g["architecture"]
        assert g["clocks"]["sm_max_mhz"] > 0
        assert (g["power_limit_w"] or 0) > 10 or "power_limit_w" in g["errors"], g["errors"]
        assert g["pci_bus_id"] and g["persistence_mode"] in (True, False)


# -- NVML with a fake binding (the real GPU path never ran) -----------------------------------
class NVMLError_NotSupported(Exception):  # noqa: N801 - the name pynvml uses
    pass


class NVMLError_DriverNotLoaded(Exception):  # noqa: N801
    pass


class FakeNVML:
    """Just enough of pynvml for one GPU whose driver lacks some calls."""
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, init_error=None):
        self.init_error = init_error
        self.shutdown_called = False

    def nvmlInit(self):
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdown_called = True

    def nvmlSystemGetDriverVersion(self):
        return b"550.54.15"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12040

    def nvmlSystemGetNVMLVersion(self):
        return "12.550.54.15"

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("handle", i)

    def nvmlDeviceGetName(self, h):
        return "Fake GPU"

    def nvmlDeviceGetUUID(self, h):
        return "GPU-fake"

    def nvmlDeviceGetPciInfo(self, h):
        return type("Pci", (), {"busId": b"00000000:3B:00.0"})()

    def nvmlDeviceGetMemoryInfo(self, h):
        return type("Mem", (), {"total": 16 * 2**30})()

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return (7, 0)

    def nvmlDeviceGetArchitecture(self, h):
        raise NVMLError_NotSupported("Not Supported")

    def nvmlDeviceGetClockInfo(self, h, c):
        return {1: 1380, 2: 877}[c]

    def nvmlDeviceGetMaxClockInfo(self, h, c):
        return {1: 1530, 2: 877}[c]

    def nvmlDeviceGetApplicationsClock(self, h, c):
        raise NVMLError_NotSupported("Not Supported")

    def nvmlDeviceGetPowerManagementLimit(self, h):
        return 300000

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 300000

    def nvmlDeviceGetPersistenceMode(self, h):
        return 1

    def nvmlDeviceGetEccMode(self, h):
        return [1, 0]

    def nvmlDeviceGetPerformanceState(self, h):
        return 0
    # nvmlDeviceGetMigMode, GetComputeMode, GetTemperature, GetVbiosVersion are missing on purpose


def test_the_fake_binding_calls_only_what_the_installed_one_has_with_its_parameters():
    """FakeNVML stands for pynvml: each of its functions must exist in the installed nvidia-ml-py and
    take as many arguments as it may be called with (tests/probes/test_nvml_api.py checks that the kit's own
    calls exist)."""
    import inspect

    import pynvml

    names = [n for n in vars(FakeNVML) if n.startswith("nvml")]
    assert len(names) >= 15
    for name in names:
        assert hasattr(pynvml, name), name
        params = inspect.signature(getattr(pynvml, name)).parameters.values()
        required = sum(1 for p in params if p.default is inspect.Parameter.empty)
        mine = len(inspect.signature(getattr(FakeNVML(), name)).parameters)
        assert required <= mine <= len(params), name


def test_nvml_gpus_records_each_failing_call_as_null_with_error():
    fake = FakeNVML()
    gpus, nvidia = fp.nvml_gpus(fake)
    assert fake.shutdown_called
    assert nvidia["available"] is True
    assert nvidia["driver_version"] == "550.54.15" and nvidia["cuda_driver_version"] == "12.4"
    (gpu,) = gpus
    assert gpu["name"] == "Fake GPU" and gpu["uuid"] == "GPU-fake"
    assert gpu["pci_bus_id"] == "00000000:3B:00.0"
    assert gpu["driver_version"] == "550.54.15" and gpu["cuda_driver_version"] == "12.4"
    assert gpu["compute_capability"] == "7.0" and gpu["memory_total_bytes"] == 16 * 2**30
    assert gpu["clocks"]["sm_current_mhz"] == 1380 and gpu["clocks"]["mem_max_mhz"] == 877
    assert gpu["power_limit_w"] == 300.0 and gpu["persistence_mode"] is True
    assert gpu["ecc_mode"] == {"current": True, "pending": False}
    assert gpu["performance_state"] == "P0"
    assert gpu["architecture"] is None and "NotSupported" in gpu["errors"]["architecture"]
    assert gpu["clocks"]["sm_applications_mhz"] is None
    assert gpu["mig_mode"] is None and "AttributeError" in gpu["errors"]["mig_mode"]
    json.dumps(gpus)


@pytest.mark.parametrize("error, prefix", [
    (NVMLError_DriverNotLoaded("Driver Not Loaded"), "no NVIDIA driver: "),
    (RuntimeError("permission denied"), "NVML failed to initialise: "),
])
def test_nvml_init_failure_is_data(error, prefix):
    gpus, nvidia = fp.nvml_gpus(FakeNVML(init_error=error))
    assert gpus == [] and nvidia["available"] is False
    assert nvidia["reason"].startswith(prefix) and str(error) in nvidia["reason"]


# -- host parsers on fixed input --------------------------------------------------------------
CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Test CPU
cpu MHz\t\t: 2000.5
physical id\t: 0
core id\t\t: 0
flags\t\t: sse2 avx fma

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Test CPU
cpu MHz\t\t: 2100.0
physical id\t: 0
core id\t\t: 0
flags\t\t: sse2 avx fma
"""


def test_parse_cpuinfo_counts_physical_cores_and_sorts_flags():
    info = fp.parse_cpuinfo(CPUINFO)
    assert info["model_name"] == "Test CPU" and info["vendor"] == "GenuineIntel"
    assert info["physical_cores"] == 1  # two hyperthreads of one core
    assert info["mhz"] == [2000.5, 2100.0]
    assert info["flags"] == ["avx", "fma", "sse2"]
    assert fp.parse_cpuinfo("processor : 0\n")["physical_cores"] is None


def test_scaling_governors_present_and_absent(tmp_path):
    assert fp.scaling_governors(str(tmp_path))["per_cpu"] is None
    assert "cpufreq" in fp.scaling_governors(str(tmp_path))["reason"]
    for i, gov in ((0, "performance"), (1, "powersave"), (10, "performance")):
        d = tmp_path / ("cpu%d" % i) / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
    got = fp.scaling_governors(str(tmp_path))
    assert got == {"per_cpu": {"cpu0": "performance", "cpu1": "powersave", "cpu10": "performance"},
                   "reason": None}
    assert list(got["per_cpu"]) == ["cpu0", "cpu1", "cpu10"]


def test_version_decoding():
    assert fp.cuda_version_str(12080) == "12.8" and fp.cuda_version_str(None) is None
    assert sfp._cuda_int_str(9000) == "9.0" and sfp._cuda_int_str(10010) == "10.1"
    assert sfp.cudnn_version_str(6021) == "6.0.21" and sfp.cudnn_version_str(7605) == "7.6.5"
    assert sfp.cudnn_version_str(90100) == "9.1.0"


def test_loaded_cuda_libraries_reads_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 1 /opt/torch/lib/libcudart-1b201d85.so.10.1\n"
        "7f01-7f02 r-xp 00000000 08:01 2 /usr/lib/libcudnn.so.7.6.2\n"
        "7f02-7f03 r-xp 00000000 08:01 3 /usr/lib/libm.so.6\n"
        "7f03-7f04 rw-p 00000000 00:00 0 \n")
    assert sfp.loaded_cuda_libraries(str(maps)) == [
        "/opt/torch/lib/libcudart-1b201d85.so.10.1", "/usr/lib/libcudnn.so.7.6.2"]


# -- secrets never leak -----------------------------------------------------------------------
def test_secrets_never_appear_in_either_fingerprint(monkeypatch):
    for k, v in SECRET_VARS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("THEANO_FLAGS", "device=cpu,password=" + SECRET)  # allowed name, bad value
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("MXNET_ENGINE_TYPE", "NaiveEngine")
    host = _dump(fp.host_fingerprint())
    stack = _dump(sfp.collect("python"))
    for text, env in ((host, fp.allowed_env()), (stack, sfp.allowed_env())):
        assert SECRET not in text
        for name in SECRET_VARS:
            assert name not in text
        # the allow-list still works, so the test would notice a deny fence that blocks everything
        assert env["OMP_NUM_THREADS"] == "3" and env["MXNET_ENGINE_TYPE"] == "NaiveEngine"
        assert env["THEANO_FLAGS"].startswith("<redacted")


def test_the_host_uses_the_one_allow_list_of_bench():
    """One copy across the host/stack boundary: the host's allow-list, fences and version are bench's."""
    for name in ("ENV_ALLOW_EXACT", "ENV_ALLOW_PREFIXES", "ENV_DENY_SUBSTRINGS", "ENV_DENY_PREFIXES",
                 "ENV_VALUE_DENY", "ENV_VALUE_MAX", "FINGERPRINT_VERSION", "env_name_allowed", "allowed_env"):
        assert getattr(fp, name) is getattr(fp._STACK, name), name
    assert fp._STACK.__file__ == str(files.BENCH / "stack_fingerprint.py")
    assert "ENV_ALLOW_EXACT = (" not in Path(fp.__file__).read_text()  # no second copy in the host
    probe = list(fp.ENV_ALLOW_EXACT) + list(SECRET_VARS) + [
        "PATH", "HOME", "TF_CLI_CONFIG_FILE", "TF_CUDNN_USE_AUTOTUNE", "MXNET_GPU_WORKER_NTHREADS"]
    assert [fp.env_name_allowed(n) for n in probe] == [sfp.env_name_allowed(n) for n in probe]
    assert not any(fp.env_name_allowed(n) for n in SECRET_VARS)
    assert all(fp.env_name_allowed(n) for n in fp.ENV_ALLOW_EXACT)  # no allowed name trips the deny fence
    assert not fp.env_name_allowed("TF_CLI_CONFIG_FILE") and not fp.env_name_allowed("PATH")


# -- stack fingerprint with real frameworks ---------------------------------------------------
def _check_stack(fpr: dict) -> None:
    text = _dump(fpr)
    assert len(text) < 50_000
    assert fpr["kind"] == "stack_fingerprint" and fpr["python"]["version"] == platform.python_version()
    assert fpr["numpy"]["version"] and fpr["numpy"]["blas"]
    cudnn = fpr["cuda_libraries"]["cudnn"]
    if cudnn["version"] is None:  # no cuDNN on this machine: says why and what it tried
        assert cudnn["reason"] and isinstance(cudnn["tried"], list)
    else:  # a machine with cuDNN (a CUDA build of a framework brings one)
        assert cudnn["version_str"] and cudnn["library"] and cudnn["function"] == "cudnnGetVersion"
    assert fpr["image"]["id"] is None and fpr["image"]["reason"]


def test_collect_torch_reports_the_imported_version():
    """collect() runs in a fresh interpreter, as the kit runs it (a cell's own process): in this test
    process another framework imported earlier may have loaded its own cuDNN first (on the GPU host of
    docs/gpu-run, JAX's CUDA plugin loaded cuDNN 9.14 before torch, built against 9.19, asked for it),
    and the fingerprint would then rightly record that error, which says nothing about the kit."""
    import torch
    fpr = _run_collect(sys.executable, "torch", dict(os.environ))
    _check_stack(fpr)
    fw = fpr["framework"]
    assert fw["name"] == "torch" and fw["version"] == torch.__version__
    assert fw["errors"] == {}
    # what the installed torch says: a CPU build here, a CUDA build on a GPU machine
    assert fw["cuda"] == torch.version.cuda and fw["cuda_available"] is torch.cuda.is_available()
    assert [d["name"] for d in fw["devices"]] == [torch.cuda.get_device_name(i)
                                                  for i in range(torch.cuda.device_count())
                                                  if torch.cuda.is_available()]
    assert "PyTorch built with" in fw["build_config"]
    assert any(p.startswith("torch==") for p in fpr["packages"]["packages"])


def test_collect_tensorflow_reports_the_imported_version():
    # Precondition: TensorFlow installed (the `frameworks` extra's tensorflow-cpu, which CI installs:
    # scripts/test.sh), as the other framework tests state theirs (tests/probes/test_gpu_peak.py).
    tf = pytest.importorskip("tensorflow", reason="TensorFlow is not installed here (pip install "
                             "'.[frameworks]' installs tensorflow-cpu, as CI does)")
    fpr = sfp.collect("tensorflow")
    _check_stack(fpr)
    fw = fpr["framework"]
    assert fw["name"] == "tensorflow" and fw["version"] == tf.__version__
    assert fw["errors"] == {}
    # what the installed TensorFlow says (tensorflow-cpu in pyproject.toml: no GPU on any machine)
    assert fw["built_with_cuda"] is tf.test.is_built_with_cuda()
    assert fw["build_info"]["is_cuda_build"] is tf.sysconfig.get_build_info()["is_cuda_build"]
    assert [d["device_type"] for d in fw["physical_devices"]] == \
        [d.device_type for d in tf.config.list_physical_devices()]
    assert "CPU" in [d["device_type"] for d in fw["physical_devices"]]


def test_collect_missing_or_unknown_framework_is_data_not_an_exception():
    missing = sfp.collect("mxnet")["framework"]  # not installed on the host
    assert missing["version"] is None and "mxnet" in missing["error"]
    unknown = sfp.collect("caffe")["framework"]
    assert "unknown framework" in unknown["error"]
    assert sfp.collect(None)["framework"] is None
    assert sfp.collect("python")["framework"]["version"] == platform.python_version()


def _run_collect(python: str, framework: str, env: dict) -> dict:
    code = ("import json, sys; sys.path.insert(0, %r); import stack_fingerprint as s; "
            "print(json.dumps(s.collect(%r)))" % (str(BENCH), framework))
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=180,
                         env=env, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _theano_pin() -> tuple[str, dict]:
    """(the Theano version the local runner's chosen environment pins, its numpy), as venvs chose it."""
    from reprokit.catalog import suites
    from reprokit.runners import venvs
    e = venvs.environment_for("theano-0.9", suites.load_stacks()["theano-0.9"], say=lambda *_: None)
    pins = dict(r.split("==", 1) for r in e.chosen.get("requirements") or [] if "==" in r)
    return pins.get("theano", "1.0.5"), pins


def test_collect_theano_in_its_venv(theano_python):
    env = dict(os.environ, THEANO_FLAGS=THEANO_FLAGS)
    fw = _run_collect(theano_python, "theano", env)["framework"]
    if not os.environ.get("REPROKIT_THEANO_PYTHON"):  # the version of the candidate venvs chose
        assert fw["version"] == _theano_pin()[0], fw
    assert fw["device"] == "cpu" and fw["floatX"] == "float32" and fw["blas_ldflags"] == ""
    assert fw["errors"] == {}


def test_collect_theano_import_failure_becomes_an_error_string(theano_python):
    # Without the blas.ldflags flag Theano 1.0.5's import fails on numpy 1.23 (platform.md).
    if _theano_pin()[0] != "1.0.5":
        pytest.skip("the chosen Theano environment is not the 1.0.5 stand-in this failure belongs to")
    env = {k: v for k, v in os.environ.items() if k != "THEANO_FLAGS"}
    fpr = _run_collect(theano_python, "theano", env)
    assert fpr["framework"]["version"] is None and "blas_opt_info" in fpr["framework"]["error"]
    assert fpr["numpy"]["version"] == "1.23.5"


# -- old-Python compatibility of bench/stack_fingerprint.py -----------------------------------
def test_stack_fingerprint_parses_as_python_35():
    src = (BENCH / "stack_fingerprint.py").read_text()
    tree = ast.parse(src, feature_version=(3, 5))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "reprokit" not in imported
    assert not any(isinstance(n, (ast.JoinedStr, ast.AnnAssign)) for n in ast.walk(tree))


OLD_PYTHONS = [Path(os.path.expanduser("~/.pyenv/versions/%s/bin/python" % v)) for v in ("2.7.18", "3.6.15")]


@pytest.mark.parametrize("python", OLD_PYTHONS, ids=lambda p: p.parts[-3])
def test_stack_fingerprint_runs_on_old_interpreters(python):
    """No 3.5 interpreter exists here; 2.7 and 3.6 bracket it (stdlib only, no numpy there)."""
    if not python.exists():
        pytest.skip("no interpreter at %s" % python)
    fpr = _run_collect(str(python), "python", dict(os.environ))
    assert fpr["kind"] == "stack_fingerprint" and "error" not in fpr
    assert "numpy" in fpr["numpy"]["error"]  # not installed there: recorded, not raised
    assert fpr["packages"]["source"].startswith("*.dist-info")
    assert fpr["packages"]["count"] >= 1
