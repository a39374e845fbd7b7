"""Stack fingerprint: what a framework stack says about itself, from inside the stack.

    collect(framework) -> dict     framework: "torch", "tensorflow", "theano", "mxnet", "keras",
                                   "jax", "python" or None

Python 3.5 syntax (2.7-compatible where cheap), standard library only; the framework is imported
lazily and every sub-collection is guarded, so a failure becomes an "error" string and collect()
never raises. The result is JSON-serialisable and kept small (long texts are cut).

GPU: the torch and JAX device listings and the CUDA driver/runtime/cuDNN library probes ran on one
NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run): every cell's stack_fingerprint there
lists the H100 and CUDA 13.0 / cuDNN 9.19.0. The TensorFlow, Theano, MXNet and Keras GPU fields have
never run on a GPU; elsewhere these probes ran on CPU machines without a driver, where they report
null with a reason.

The environment allow-list and FINGERPRINT_VERSION below are the kit's only copy: the host loads this
module (reprokit/probes/fingerprint.py, through files.bench_module), since bench/ never imports the host
package; tests/probes/test_fingerprint.py checks that the host has no copy of its own.
"""
from __future__ import print_function

import ctypes
import datetime
import json
import os
import platform
import re
import sys

FINGERPRINT_VERSION = 1
FRAMEWORKS = ("torch", "tensorflow", "theano", "mxnet", "keras", "jax", "python")
TEXT_MAX = 4000          # longest single text kept (build configs, show_config output)
RESULT_MAX = 50000       # target size of the whole fingerprint as JSON

try:
    TEXT_TYPES = (str, unicode)  # noqa: F821 - Python 2
except NameError:
    TEXT_TYPES = (str,)

# -- environment allow-list (the host uses this one: reprokit/probes/fingerprint.py) ----------------
ENV_ALLOW_EXACT = (
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT", "CUDA_MODULE_LOADING", "CUDA_HOME", "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
    "CUDA_VERSION", "CUDA_DRIVER_VERSION", "CUDNN_VERSION", "CUBLAS_VERSION", "NCCL_VERSION",
    "CUBLAS_WORKSPACE_CONFIG", "GPUARRAY_CUDA_VERSION",
    "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_DYNAMIC", "OMP_WAIT_POLICY",
    "MKL_NUM_THREADS", "MKL_DYNAMIC", "MKL_THREADING_LAYER", "MKL_CBWR", "MKL_DEBUG_CPU_TYPE",
    "MKL_ENABLE_INSTRUCTIONS", "KMP_AFFINITY", "KMP_BLOCKTIME", "KMP_HW_SUBSET",
    "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_VERBOSE", "GOTO_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS",
    "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY",
    "TF_CPP_MIN_LOG_LEVEL", "TF_CPP_MIN_VLOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS", "TF_DETERMINISTIC_OPS",
    "TF_FORCE_GPU_ALLOW_GROWTH", "TF_GPU_ALLOCATOR", "TF_XLA_FLAGS", "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS", "TF_ENABLE_AUTO_MIXED_PRECISION", "TF_GPU_THREAD_MODE",
    "TF_USE_LEGACY_KERAS", "XLA_FLAGS",
    "THEANO_FLAGS", "THEANORC", "KERAS_BACKEND",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "TORCH_CUDNN_V8_API_DISABLED",
    "JAX_PLATFORMS", "JAX_ENABLE_X64", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "PYTHONHASHSEED", "PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD",
)
ENV_ALLOW_PREFIXES = ("TF_CUDNN_", "MXNET_", "CUDA_CACHE_")
ENV_DENY_SUBSTRINGS = (
    "TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH", "COOKIE",
    "SESSION", "PRIVATE", "SIGNATURE", "CERT", "PWD",
)
ENV_DENY_PREFIXES = (
    "AWS_", "AZURE_", "GCP_", "GOOGLE_", "GITHUB_", "GH_", "GITLAB_", "HF_", "HUGGING", "WANDB_",
    "NPM_", "DOCKER_", "SLACK_", "OPENAI_", "ANTHROPIC_",
)
ENV_VALUE_DENY = re.compile(
    r"(token|secret|passw(or)?d|api[_-]?key|access[_-]?key|bearer|authorization)\s*[=:]", re.IGNORECASE)
ENV_VALUE_MAX = 2000

# Shared libraries of the CUDA stack, by file-name prefix, as they appear in /proc/self/maps.
# Old torch wheels bundle renamed copies (libcudart-<hash>.so.<ver>), hence prefixes.
CUDA_LIB_PREFIXES = ("libcudart", "libcudnn", "libcuda.so", "libcublas", "libnccl", "libnvrtc")
CUDART_SONAMES = ("libcudart.so", "libcudart.so.8.0", "libcudart.so.9.0", "libcudart.so.9.1",
                  "libcudart.so.9.2", "libcudart.so.10.0", "libcudart.so.10.1", "libcudart.so.10.2",
                  "libcudart.so.11.0", "libcudart.so.12", "libcudart.so.13")
CUDNN_SONAMES = ("libcudnn.so", "libcudnn.so.5", "libcudnn.so.6", "libcudnn.so.7", "libcudnn.so.8",
                 "libcudnn.so.9")
CUDA_DRIVER_SONAMES = ("libcuda.so.1", "libcuda.so")


def env_name_allowed(name):
    """True when `name` is on the allow-list and passes the deny fence."""
    upper = name.upper()
    if any(s in upper for s in ENV_DENY_SUBSTRINGS) or upper.startswith(ENV_DENY_PREFIXES):
        return False
    return name in ENV_ALLOW_EXACT or name.startswith(ENV_ALLOW_PREFIXES)


def allowed_env(environ=None):
    """The allow-listed environment variables, credential-looking values redacted."""
    environ = dict(os.environ if environ is None else environ)
    out = {}
    for name in sorted(environ):
        if not env_name_allowed(name):
            continue
        value = environ[name]
        if ENV_VALUE_DENY.search(value):
            value = "<redacted: value looks like a credential>"
        elif len(value) > ENV_VALUE_MAX:
            value = value[:ENV_VALUE_MAX] + "...<truncated>"
        out[name] = value
    return out


# -- helpers ---------------------------------------------------------------------------------
def _err(e):
    return ("%s: %s" % (type(e).__name__, e)).strip()[:500]


def _cut(text, limit=TEXT_MAX):
    if text is None:
        return None
    if not isinstance(text, TEXT_TYPES):
        text = str(text)
    if len(text) > limit:
        return text[:limit] + "...<truncated %d chars>" % (len(text) - limit)
    return text


def _jsonable(obj, depth=0):
    """A JSON-safe copy: unknown objects become (cut) strings."""
    if depth > 8:
        return _cut(repr(obj), 200)
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, bytes):
        return _cut(obj.decode("utf-8", "replace"))
    if isinstance(obj, TEXT_TYPES):
        return _cut(obj)
    if isinstance(obj, dict):
        return dict((str(k), _jsonable(v, depth + 1)) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_jsonable(v, depth + 1) for v in obj]
    return _cut(str(obj), 500)


def _guard(fn, *args):
    """Run one sub-collection; a failure becomes {"error": ...}."""
    try:
        return fn(*args)
    except Exception as e:  # the fingerprint never raises
        return {"error": _err(e)}


class _Fields(object):
    """Fills a dict field by field; a failing field is null and its error is kept."""

    def __init__(self, out):
        self.out = out
        self.errors = {}

    def add(self, key, fn):
        try:
            self.out[key] = fn()
        except Exception as e:
            self.out[key] = None
            self.errors[key] = _err(e)
        return self.out[key]

    def done(self):
        self.out["errors"] = self.errors
        return self.out


def _capture_stdout(fn):
    try:
        from io import StringIO
        buf = StringIO()
    except ImportError:  # pragma: no cover - Python 2
        from StringIO import StringIO
        buf = StringIO()
    old = sys.stdout
    sys.stdout = buf
    try:
        fn()
    finally:
        sys.stdout = old
    return buf.getvalue()


def _utcnow():
    return datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"


# -- python, platform, numpy ---------------------------------------------------------------------
def _python():
    return {"version": platform.python_version(), "implementation": platform.python_implementation(),
            "executable": sys.executable, "prefix": sys.prefix}


def _platform():
    return {"platform": platform.platform(), "system": platform.system(),
            "release": platform.release(), "machine": platform.machine(),
            "libc": " ".join(platform.libc_ver()).strip() or None}


def _numpy():
    import numpy
    out = {"version": numpy.__version__, "path": os.path.dirname(numpy.__file__)}
    f = _Fields(out)
    cfg = None
    try:
        cfg = numpy.show_config(mode="dicts")  # numpy >= 1.25
    except TypeError:
        cfg = None  # older numpy: show_config() takes no mode
    if isinstance(cfg, dict):
        deps = cfg.get("Build Dependencies") or {}
        out["config_source"] = "numpy.show_config(mode='dicts')"
        out["config"] = {"Build Dependencies": deps, "SIMD Extensions": cfg.get("SIMD Extensions")}
        out["blas"] = _dep_summary(deps.get("blas"))
        out["lapack"] = _dep_summary(deps.get("lapack"))
    else:
        mod = getattr(numpy, "__config__", None)
        infos = {}
        for name in dir(mod) if mod is not None else ():
            value = getattr(mod, name, None)
            if name.endswith("_info") and isinstance(value, dict):
                infos[name] = value
        if infos:
            out["config_source"] = "numpy.__config__ *_info dicts"
            out["config"] = infos
            out["blas"] = ", ".join(sorted(k for k, v in infos.items() if v and "lapack" not in k)) or None
            out["lapack"] = ", ".join(sorted(k for k, v in infos.items() if v and "lapack" in k)) or None
        else:
            out["config_source"] = "numpy.show_config() stdout"
            f.add("config_text", lambda: _cut(_capture_stdout(numpy.show_config)))
    f.add("threadpoolctl", _threadpools)
    return f.done()


def _dep_summary(dep):
    if not isinstance(dep, dict):
        return None
    return " ".join(str(dep.get(k)) for k in ("name", "version") if dep.get(k)) or None


def _threadpools():
    try:
        import threadpoolctl
    except ImportError:
        return {"available": False, "reason": "threadpoolctl not installed"}
    keep = ("user_api", "internal_api", "prefix", "version", "num_threads", "threading_layer",
            "architecture", "filepath")
    pools = [dict((k, p.get(k)) for k in keep) for p in threadpoolctl.threadpool_info()]
    return {"available": True, "version": threadpoolctl.__version__, "pools": pools}


# -- frameworks -------------------------------------------------------------------------------
def _torch(out):
    import torch
    f = _Fields(out)
    out["version"] = str(torch.__version__)
    f.add("git_version", lambda: torch.version.git_version)
    f.add("cuda", lambda: torch.version.cuda)
    f.add("cudnn_version", lambda: torch.backends.cudnn.version())
    f.add("cudnn_enabled", lambda: bool(torch.backends.cudnn.enabled))
    f.add("mkl_available", lambda: torch.backends.mkl.is_available())
    f.add("mkldnn_available", lambda: torch.backends.mkldnn.is_available())
    f.add("openmp_available", lambda: torch.backends.openmp.is_available())
    f.add("num_threads", torch.get_num_threads)
    f.add("build_config", lambda: _cut(torch.__config__.show()))
    f.add("parallel_info", lambda: _cut(torch.__config__.parallel_info(), 2000))
    available = f.add("cuda_available", torch.cuda.is_available)
    # architectures compiled into the binary; the attribute is looked up inside the guard: torch
    # before 1.8 has no get_arch_list (the environment probe of torch 1.0.0 met that)
    f.add("cuda_arch_list", lambda: torch.cuda.get_arch_list())
    if available:  # ran on one NVIDIA H100 (torch 2.11, docs/gpu-run)
        def devices():
            found = []
            for i in range(torch.cuda.device_count()):
                found.append({"index": i, "name": torch.cuda.get_device_name(i),
                              "capability": list(torch.cuda.get_device_capability(i))})
            return found
        f.add("devices", devices)
    else:
        out["devices"] = []
    return f.done()


def _tensorflow(out):
    import tensorflow as tf
    f = _Fields(out)
    out["version"] = tf.__version__

    def git_version():
        if hasattr(tf, "version") and hasattr(tf.version, "GIT_VERSION"):
            return tf.version.GIT_VERSION
        return getattr(tf, "__git_version__", None)
    f.add("git_version", git_version)
    f.add("built_with_cuda", tf.test.is_built_with_cuda)

    def build_info():
        if not hasattr(tf.sysconfig, "get_build_info"):
            return {"reason": "tf.sysconfig.get_build_info() absent in TF %s" % tf.__version__}
        return dict(tf.sysconfig.get_build_info())
    f.add("build_info", build_info)

    def physical_devices():
        cfg = getattr(tf, "config", None)
        lister = getattr(cfg, "list_physical_devices", None)
        if lister is None:
            lister = getattr(getattr(cfg, "experimental", None), "list_physical_devices", None)
        if lister is None:
            # device_lib.list_local_devices() would initialise (and on TF 1.x reserve) the GPUs,
            # changing the cells that run after this fingerprint, so it is not called.
            return {"reason": "no physical-device listing in TF %s; device_lib not called "
                              "(it would initialise the GPUs)" % tf.__version__}
        return [{"name": d.name, "device_type": d.device_type} for d in lister()]
    f.add("physical_devices", physical_devices)

    def threads():
        t = tf.config.threading
        return {"intra_op": t.get_intra_op_parallelism_threads(),
                "inter_op": t.get_inter_op_parallelism_threads()}
    f.add("threads", threads)

    def mkl_enabled():
        try:
            from tensorflow.python.util import _pywrap_util_port
            return bool(_pywrap_util_port.IsMklEnabled())
        except ImportError:
            from tensorflow.python import pywrap_tensorflow
            return bool(pywrap_tensorflow.IsMklEnabled())
    f.add("mkl_enabled", mkl_enabled)
    return f.done()


def _theano_config(config, *names):
    """First of `names` (dotted or double-underscore spellings) that the config has."""
    last = None
    for name in names:
        obj = config
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
            return obj
        except AttributeError as e:
            last = e
    raise last


def _theano(out):
    import theano
    f = _Fields(out)
    out["version"] = theano.__version__
    c = theano.config
    f.add("device", lambda: c.device)
    f.add("floatX", lambda: c.floatX)
    f.add("mode", lambda: _theano_config(c, "mode"))
    f.add("optimizer", lambda: _theano_config(c, "optimizer"))
    f.add("linker", lambda: _theano_config(c, "linker"))
    f.add("cxx", lambda: _theano_config(c, "cxx"))
    f.add("blas_ldflags", lambda: _theano_config(c, "blas__ldflags", "blas.ldflags"))
    f.add("openmp", lambda: _theano_config(c, "openmp"))
    f.add("allow_gc", lambda: _theano_config(c, "allow_gc"))
    f.add("compiledir", lambda: _theano_config(c, "compiledir"))
    device = str(getattr(c, "device", ""))
    if device.startswith("cuda") or device.startswith("gpu"):  # never run on a GPU
        f.add("cuda_root", lambda: _theano_config(c, "cuda__root", "cuda.root"))
        f.add("dnn_enabled", lambda: _theano_config(c, "dnn__enabled", "dnn.enabled"))
        f.add("lib_cnmem", lambda: _theano_config(c, "lib__cnmem", "lib.cnmem"))
        f.add("gpuarray_preallocate",
              lambda: _theano_config(c, "gpuarray__preallocate", "gpuarray.preallocate"))

        def dnn_version():
            from theano.gpuarray import dnn
            return dnn.version()
        f.add("cudnn_version", dnn_version)
    return f.done()


def _mxnet(out):
    import mxnet as mx
    f = _Fields(out)
    out["version"] = mx.__version__

    def features():
        from mxnet.runtime import Features
        feats = Features()
        return {"enabled": sorted(k for k, v in feats.items() if v.enabled),
                "disabled": sorted(k for k, v in feats.items() if not v.enabled)}
    f.add("features", features)
    f.add("library", lambda: mx.libinfo.find_lib_path())
    f.add("num_gpus", lambda: mx.context.num_gpus())  # calls cudaGetDeviceCount; never run on a GPU
    return f.done()


def _keras(out):
    import keras
    f = _Fields(out)
    out["version"] = keras.__version__
    backend = f.add("backend", lambda: keras.backend.backend())
    f.add("floatx", lambda: keras.backend.floatx())
    f.add("image_data_format", lambda: keras.backend.image_data_format())
    if backend in ("tensorflow", "theano", "jax", "torch", "mxnet"):
        out["backend_framework"] = _framework(backend)
    return f.done()


def _jax(out):
    import jax
    f = _Fields(out)
    out["version"] = jax.__version__

    def jaxlib_version():
        import jaxlib
        return getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
    f.add("jaxlib_version", jaxlib_version)
    f.add("default_backend", lambda: jax.default_backend())
    f.add("devices", lambda: [{"id": d.id, "platform": d.platform,
                               "kind": getattr(d, "device_kind", None)} for d in jax.devices()])
    return f.done()


_COLLECTORS = {"torch": _torch, "tensorflow": _tensorflow, "theano": _theano, "mxnet": _mxnet,
               "keras": _keras, "jax": _jax}


def _framework(name):
    out = {"name": name, "version": None}
    if name == "python":
        out["version"] = platform.python_version()
        return out
    if name not in _COLLECTORS:
        out["error"] = "unknown framework %r (known: %s)" % (name, ", ".join(FRAMEWORKS))
        return out
    try:
        return _COLLECTORS[name](out)
    except Exception as e:  # import failure or anything the field guards did not catch
        out["error"] = _err(e)
        return out


# -- CUDA stack through ctypes --------------------------------------------------------------------
_OWN_LOADS = set()  # CUDA libraries mapped into the process by this module's own dlopen() calls


def loaded_cuda_libraries(maps_path="/proc/self/maps"):
    """Paths of CUDA-stack shared libraries mapped into this process."""
    found = set()
    with open(maps_path) as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6:
                path = parts[5].strip()
                if os.path.basename(path).startswith(CUDA_LIB_PREFIXES):
                    found.add(path)
    return sorted(found)


def _cuda_int_str(v):
    return "%d.%d" % (v // 1000, (v % 1000) // 10)


def cudnn_version_str(v):
    """cuDNN's integer version: major*1000+minor*100+patch up to 8.x, major*10000+... from 9.x."""
    if v >= 10000:
        return "%d.%d.%d" % (v // 10000, (v % 10000) // 100, v % 100)
    return "%d.%d.%d" % (v // 1000, (v % 1000) // 100, v % 100)


def _query(lib, fn_name, by_ref):
    fn = getattr(lib, fn_name)
    if by_ref:
        value = ctypes.c_int()
        rc = fn(ctypes.byref(value))
        if rc != 0:
            raise RuntimeError("%s returned error code %d" % (fn_name, rc))
        return value.value
    fn.restype = ctypes.c_size_t
    return int(fn())


def _library_version(prefix, sonames, fn_name, by_ref, fmt, loaded):
    """Version from the first library that answers: those already loaded first, then sonames."""
    mine = [p for p in loaded if os.path.basename(p).startswith(prefix)]
    tried = []
    for path in mine + list(sonames):
        try:
            before = set(loaded_cuda_libraries())
            lib = ctypes.CDLL(path)
            _OWN_LOADS.update(set(loaded_cuda_libraries()) - before)
            value = _query(lib, fn_name, by_ref)
        except (OSError, AttributeError, RuntimeError) as e:
            tried.append("%s: %s" % (path, _err(e)))
            continue
        if path in mine:
            source = "loaded by this process"
        else:
            source = "dlopen %s (may differ from the framework's own copy)" % path
            resolved = [p for p in _OWN_LOADS if os.path.basename(p).startswith(prefix)]
            path = resolved[0] if len(resolved) == 1 else path
        return {"version": value, "version_str": fmt(value), "library": path, "source": source,
                "function": fn_name}
    return {"version": None, "reason": "no %s* loaded and none of %s loadable (no CUDA stack here?)"
            % (prefix, ", ".join(sonames)), "tried": [t[:200] for t in tried[:4]]}


def _cuda_libraries():
    # libraries the fingerprint dlopen()ed itself (on an earlier call) do not count as the stack's
    loaded = [p for p in loaded_cuda_libraries() if p not in _OWN_LOADS]
    out = {"loaded": loaded}
    out["cuda_runtime"] = _guard(_library_version, "libcudart", CUDART_SONAMES,
                                 "cudaRuntimeGetVersion", True, _cuda_int_str, loaded)
    out["cudnn"] = _guard(_library_version, "libcudnn", CUDNN_SONAMES, "cudnnGetVersion", False,
                          cudnn_version_str, loaded)
    out["cuda_driver"] = _guard(_library_version, "libcuda.so", CUDA_DRIVER_SONAMES,
                                "cuDriverGetVersion", True, _cuda_int_str, loaded)
    return out


# -- installed packages, image ------------------------------------------------------------------
_PACKAGES = []  # computed once per process: the harness collects a fingerprint after every cell


def _packages():
    if not _PACKAGES:
        _PACKAGES.append(_list_packages())
    return dict(_PACKAGES[0], packages=list(_PACKAGES[0]["packages"]))


def _list_packages():
    try:
        from importlib import metadata
    except ImportError:
        metadata = None
    seen = {}
    if metadata is not None:
        source = "importlib.metadata"
        for dist in metadata.distributions():
            name = dist.metadata["Name"]
            if name:
                seen.setdefault(name.lower().replace("_", "-"), "%s==%s" % (name, dist.version))
    else:
        source = "*.dist-info / *.egg-info names on sys.path"
        for entry in sys.path:
            if not os.path.isdir(entry):
                continue
            for fn in sorted(os.listdir(entry)):
                if fn.endswith((".dist-info", ".egg-info")):
                    stem = fn.rsplit(".", 1)[0]
                    parts = stem.split("-")
                    name = parts[0]
                    version = parts[1] if len(parts) > 1 else "unknown"
                    seen.setdefault(name.lower().replace("_", "-"), "%s==%s" % (name, version))
    return {"source": source, "count": len(seen), "packages": sorted(seen.values(), key=lambda p: p.lower())}


def _image():
    out = {"id": os.environ.get("REPROKIT_IMAGE_ID"), "digest": os.environ.get("REPROKIT_IMAGE_DIGEST")}
    if out["id"] is None and out["digest"] is None:
        out["reason"] = "REPROKIT_IMAGE_ID / REPROKIT_IMAGE_DIGEST not set by the runner"
    return out


# -- the whole stack ----------------------------------------------------------------------------
def _shrink(result):
    """Keep the fingerprint under RESULT_MAX characters of JSON."""
    if len(json.dumps(result)) <= RESULT_MAX:
        return result
    pk = result.get("packages")
    if isinstance(pk, dict) and isinstance(pk.get("packages"), list):
        pk["packages"] = pk["packages"][:300]
        pk["truncated"] = True
    if len(json.dumps(result)) <= RESULT_MAX:
        return result
    np_ = result.get("numpy")
    if isinstance(np_, dict) and "config" in np_:
        np_["config"] = _cut(json.dumps(np_["config"]), 2000)
    if len(json.dumps(result)) > RESULT_MAX:
        result["truncated_note"] = "fingerprint exceeds %d characters" % RESULT_MAX
    return result


def collect(framework=None):
    """The stack fingerprint for `framework` (see module doc). Never raises."""
    try:
        result = {
            "fingerprint_version": FINGERPRINT_VERSION,
            "kind": "stack_fingerprint",
            "collected": _utcnow(),
            "python": _guard(_python),
            "platform": _guard(_platform),
            "numpy": _guard(_numpy),
            "framework": _framework(framework) if framework is not None else None,
            "cuda_libraries": _guard(_cuda_libraries),
            "packages": _guard(_packages),
            "image": _guard(_image),
            "env": _guard(allowed_env),
        }
        return _shrink(_jsonable(result))
    except Exception as e:
        return {"fingerprint_version": FINGERPRINT_VERSION, "kind": "stack_fingerprint",
                "error": _err(e)}


if __name__ == "__main__":
    print(json.dumps(collect(sys.argv[1] if len(sys.argv) > 1 else None), indent=1, sort_keys=True))
