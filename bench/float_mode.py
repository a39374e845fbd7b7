"""The float precision a cell ran at: set what its source used, then read back what held.

Not to be confused with bench/precision.py (the adaptive stopping rule of the timing budget).

The 2017-2019 numbers were measured in fp32 on GPUs without TF32. On Ampere (sm_80) and later,
several frameworks run float32 matrix products, convolutions or cuDNN RNNs as TF32 by default:

* PyTorch >= 1.7: `torch.backends.cudnn.allow_tf32` defaults to True (cuDNN convolutions and RNNs);
  `torch.backends.cuda.matmul.allow_tf32` defaulted to True in 1.7-1.11, False from 1.12
  (pytorch.org/docs notes/cuda.html "TensorFloat-32 (TF32) on Ampere (and later) devices");
  `torch.set_float32_matmul_precision` (1.12+) is the same switch for matmuls;
  TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32 over it (docs cuda_environment_variables).
* TensorFlow >= 2.4: "TensorFloat-32 is enabled by default"
  (tf.config.experimental.enable_tensor_float_32_execution, TF 2.4 API docs).
* JAX: float32 dots at the default precision may use TF32 on recent GPUs; the config option
  `jax_default_matmul_precision` (env JAX_DEFAULT_MATMUL_PRECISION) sets it
  (docs.jax.dev "Matmul precision", jax.default_matmul_precision).
* Every framework through cuBLAS/cuDNN: NVIDIA_TF32_OVERRIDE=0 tells the NVIDIA libraries never to
  use TF32 (NVIDIA's TF32 notes; which CUDA and GPU have TF32 at all comes in the job file's
  facts.tf32, from reprokit/data/float_precision.yaml). It does not reach kernels a
  framework generates itself (XLA/Triton GEMMs in JAX), so JAX is judged by its own setting.

`requested` is "fp32" (the default: the sources' precision; TF32 off everywhere the framework
allows) or "framework_default" (nothing touched: what a user gets out of the box, a labelled twin
cell). `set_env` runs before the workload module (and so the framework) is imported, `apply`
after the framework is imported and before the workload runs, `record` after it ran. None of them
raises: a missing feature (an old version) is recorded as absent, a failure to apply a setting that
exists is recorded in `errors` (and the harness notes it), and the read-back decides `effective`.

Python 3.5 syntax (2.7-compatible), standard library plus the framework; never imports reprokit.
"""
import os
import re
import sys
import warnings

FP32 = "fp32"
DEFAULT = "framework_default"
REQUESTS = (FP32, DEFAULT)

# set before any framework is imported when fp32 is requested
FP32_ENV = (
    ("NVIDIA_TF32_OVERRIDE", "0"),              # cuBLAS/cuDNN >= 11: never TF32
    ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "0"),  # "1" would force TF32 over torch's own setting
    ("JAX_DEFAULT_MATMUL_PRECISION", "highest"),  # read when jax is imported
)
PRECISION_ENV = tuple(k for k, _ in FP32_ENV)
# autotune / algorithm-choice switches, recorded as found (never set here)
AUTOTUNE_ENV = ("TF_CUDNN_USE_AUTOTUNE", "TF_CUDNN_DETERMINISTIC", "TF_DETERMINISTIC_OPS",
                "XLA_FLAGS", "MXNET_CUDNN_AUTOTUNE_DEFAULT", "CUBLAS_WORKSPACE_CONFIG")
# frameworks whose Python-level switches `apply` sets (it imports them for that)
SETTABLE = ("torch", "tensorflow", "jax")
JAX_FP32 = ("highest", "float32", "f32_f32_f32")
JAX_TF32 = ("high", "tensorfloat32", "tf32_tf32_f32", "bfloat16_3x")


def check_request(requested):
    """The request, or a ValueError naming the allowed values (the cell then fails)."""
    if requested is None:
        return FP32
    if requested not in REQUESTS:
        raise ValueError("job cell precision %r is neither %s; fix the job file"
                         % (requested, " nor ".join(REQUESTS)))
    return requested


def version_tuple(text):
    """(major, minor) of a version string such as '0.1.12_2', '2.13.0+cpu', '1.8.0', '11' (minor 0);
    None."""
    m = re.match(r"\s*(\d+)(?:\.(\d+))?", str(text or ""))
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def _err(e):
    return ("%s: %s" % (type(e).__name__, e)).strip().splitlines()[0][:300]


def set_env(requested, environ=None):
    """For fp32, the precision environment variables (before the framework is imported). Returns
    the precision variables as they are now (unset ones left out)."""
    environ = os.environ if environ is None else environ
    if requested == FP32:
        for key, value in FP32_ENV:
            environ[key] = value
    return dict((k, environ[k]) for k in PRECISION_ENV if k in environ)


# -- apply ------------------------------------------------------------------------------------------
def apply(requested, backend):
    """Set fp32 in `backend` (importing it: the workload would import it anyway). Returns
    {"set": [names set], "absent": [names this version lacks], "errors": [one line each]}.
    For framework_default, or a backend without switches, nothing is imported or set."""
    out = {"set": [], "absent": [], "errors": []}
    if requested != FP32 or backend not in SETTABLE:
        return out
    try:
        mod = __import__(backend)
    except Exception as e:
        out["errors"].append("import %s: %s" % (backend, _err(e)))
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if backend == "torch":
            _apply_torch(mod, out)
        elif backend == "tensorflow":
            _apply_tf(mod, out)
        else:
            _apply_jax(mod, out)
    return out


def _set_attr(out, name, obj, attr, value):
    if obj is None or not hasattr(obj, attr):
        out["absent"].append(name)
        return
    try:
        setattr(obj, attr, value)
        out["set"].append(name)
    except Exception as e:
        out["errors"].append("%s = %r: %s" % (name, value, _err(e)))


def _call(out, name, fn, *args):
    if fn is None:
        out["absent"].append(name)
        return
    try:
        fn(*args)
        out["set"].append(name)
    except Exception as e:
        out["errors"].append("%s%r: %s" % (name, tuple(args), _err(e)))


def _path(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _apply_torch(torch, out):
    _set_attr(out, "torch.backends.cuda.matmul.allow_tf32", _path(torch, "backends.cuda.matmul"),
              "allow_tf32", False)
    _set_attr(out, "torch.backends.cudnn.allow_tf32", _path(torch, "backends.cudnn"),
              "allow_tf32", False)
    _call(out, "torch.set_float32_matmul_precision", getattr(torch, "set_float32_matmul_precision",
                                                             None), "highest")


def _apply_tf(tf, out):
    _call(out, "tf.config.experimental.enable_tensor_float_32_execution",
          _path(tf, "config.experimental.enable_tensor_float_32_execution"), False)


def _apply_jax(jax, out):
    config = getattr(jax, "config", None)
    _call(out, "jax.config.update('jax_default_matmul_precision')",
          getattr(config, "update", None), "jax_default_matmul_precision", "highest")


# -- read back --------------------------------------------------------------------------------------
def _get(settings, name, fn):
    """settings[name] = fn() when it works; a missing feature is left out (recorded as absent)."""
    try:
        value = fn()
    except Exception:
        return None
    if value is not None and not isinstance(value, (bool, int, float, str)):
        value = str(value)
    settings[name] = value
    return value


def _torch_state(torch, settings, autotune):
    cudnn = _path(torch, "backends.cudnn")
    matmul = _path(torch, "backends.cuda.matmul")
    if matmul is not None and hasattr(matmul, "allow_tf32"):
        _get(settings, "torch.backends.cuda.matmul.allow_tf32", lambda: bool(matmul.allow_tf32))
    if cudnn is not None and hasattr(cudnn, "allow_tf32"):
        _get(settings, "torch.backends.cudnn.allow_tf32", lambda: bool(cudnn.allow_tf32))
    if hasattr(torch, "get_float32_matmul_precision"):
        _get(settings, "torch.get_float32_matmul_precision", torch.get_float32_matmul_precision)
    for name in ("backends.fp32_precision", "backends.cuda.matmul.fp32_precision",
                 "backends.cudnn.fp32_precision", "backends.cudnn.rnn.fp32_precision",
                 "backends.cudnn.conv.fp32_precision", "backends.mkldnn.fp32_precision"):
        parent, _, attr = name.rpartition(".")
        obj = _path(torch, parent)
        if obj is not None and hasattr(obj, attr):
            _get(settings, "torch." + name, lambda o=obj, a=attr: getattr(o, a))
    _get(settings, "torch.__version__", lambda: torch.__version__)
    _get(settings, "torch.version.cuda", lambda: _path(torch, "version").cuda)
    if cudnn is not None:
        for attr in ("benchmark", "deterministic", "enabled"):
            if hasattr(cudnn, attr):
                _get(autotune, "cudnn_" + attr, lambda a=attr: bool(getattr(cudnn, a)))
    if hasattr(torch, "are_deterministic_algorithms_enabled"):
        _get(autotune, "deterministic_algorithms", torch.are_deterministic_algorithms_enabled)


def _torch_gpu(torch):
    """Compute capability (major, minor) of the current CUDA device, only where the cell already
    initialised CUDA (never initialised here)."""
    tc = torch.cuda
    init = getattr(tc, "is_initialized", None)
    inited = init() if init is not None else getattr(tc, "_initialized", False)
    if not inited:
        return None
    return tuple(tc.get_device_capability(tc.current_device()))


def _torch_switches(settings):
    """[(name, True when it allows TF32)] of the switches read back."""
    out = []
    for name in ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32"):
        if name in settings:
            out.append((name, bool(settings[name])))
    prec = settings.get("torch.get_float32_matmul_precision")
    if prec is not None:
        out.append(("torch.get_float32_matmul_precision=%s" % prec, prec != "highest"))
    return out


def _tf_state(tf, settings, autotune):
    _get(settings, "tf.__version__", lambda: tf.__version__)
    enabled = _path(tf, "config.experimental.tensor_float_32_execution_enabled")
    if enabled is not None:
        _get(settings, "tf.config.experimental.tensor_float_32_execution_enabled",
             lambda: bool(enabled()))
    info = _path(tf, "sysconfig.get_build_info")
    if info is not None:
        _get(settings, "tf.sysconfig.cuda_version", lambda: info().get("cuda_version"))
        _get(settings, "tf.sysconfig.cudnn_version", lambda: info().get("cudnn_version"))
    built = _path(tf, "test.is_built_with_cuda")
    if built is not None:
        _get(settings, "tf.test.is_built_with_cuda", lambda: bool(built()))
    autotune["tf_cudnn_use_autotune"] = os.environ.get("TF_CUDNN_USE_AUTOTUNE")


def _tf_gpu(tf):
    """Compute capability of TensorFlow's first GPU (TF >= 2.3), or None."""
    lister = _path(tf, "config.list_physical_devices") or \
        _path(tf, "config.experimental.list_physical_devices")
    details = _path(tf, "config.experimental.get_device_details")
    if lister is None or details is None:
        return None
    gpus = lister("GPU")
    if not gpus:
        return None
    cc = details(gpus[0]).get("compute_capability")
    return tuple(cc) if cc else None


def _keras_policy(settings):
    """A Keras mixed-precision policy other than float32 runs lower than fp32: read it where Keras
    is already imported (never imported here)."""
    for name in ("keras", "tf_keras"):
        k = sys.modules.get(name)
        if k is None:
            continue
        fn = _path(k, "config.dtype_policy") or _path(k, "mixed_precision.global_policy")
        if fn is not None:
            _get(settings, name + ".dtype_policy", lambda f=fn: f().name)


def _jax_state(jax, settings, autotune):
    _get(settings, "jax.__version__", lambda: jax.__version__)
    _get(settings, "jax.config.jax_default_matmul_precision",
         lambda: jax.config.jax_default_matmul_precision)
    autotune["xla_flags"] = os.environ.get("XLA_FLAGS")


def _jax_gpu(jax):
    d = jax.devices()[0]
    cc = getattr(d, "compute_capability", None)
    return version_tuple(cc) if cc else None


def _theano_state(theano, settings, autotune):
    cfg = theano.config
    _get(settings, "theano.__version__", lambda: theano.__version__)
    _get(settings, "theano.config.floatX", lambda: cfg.floatX)
    _get(settings, "theano.config.device", lambda: cfg.device)
    for attr in ("algo_fwd", "algo_bwd_filter", "algo_bwd_data"):
        _get(autotune, "dnn.conv." + attr, lambda a=attr: getattr(cfg.dnn.conv, a))


def _mxnet_state(mx, settings, autotune):
    _get(settings, "mxnet.__version__", lambda: mx.__version__)
    autotune["mxnet_cudnn_autotune_default"] = os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT")


def record(requested, backend, applied, env, ran_on, tf32=None):
    """The cell result's `precision` record (docs/FORMATS.md): what was asked, the framework's
    switches and autotune state as read back now, and `effective` with a one-line `why`. `ran_on`
    is the cell's ran_on record ({"device": "gpu" | "cpu" | "unknown", ...}); `tf32` the job file's
    facts.tf32 (reprokit/data/float_precision.yaml: min_compute_capability, min_cuda, since), which
    this module keeps no copy of."""
    rec = {"requested": requested, "effective": "unknown", "why": "", "settings": {},
           "env": dict(env or {}), "autotune": {}}
    applied = applied or {}
    for key in ("set", "absent", "errors"):
        if applied.get(key):
            rec[key if key != "set" else "applied"] = list(applied[key])
    try:
        effective, why = _decide(backend, rec, (ran_on or {}).get("device", "unknown"), tf32)
    except Exception as e:  # never costs a measurement
        effective, why = "unknown", "could not read the precision back: %s" % _err(e)
    rec["effective"], rec["why"] = effective, why
    return rec


def _decide(backend, rec, device, tf32=None):
    settings, autotune, env = rec["settings"], rec["autotune"], rec["env"]
    mod = sys.modules.get(backend) if backend else None
    capability = None
    switches = []  # (name, allows TF32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if backend == "torch" and mod is not None:
            _torch_state(mod, settings, autotune)
            switches = _torch_switches(settings)
            if device == "gpu":
                capability = _safe(_torch_gpu, mod)
        elif backend == "tensorflow" and mod is not None:
            _tf_state(mod, settings, autotune)
            _keras_policy(settings)
            name = "tf.config.experimental.tensor_float_32_execution_enabled"
            if name in settings:
                switches = [(name, bool(settings[name]))]
            if device == "gpu":
                capability = _safe(_tf_gpu, mod)
        elif backend == "jax" and mod is not None:
            _jax_state(mod, settings, autotune)
            _keras_policy(settings)
            prec = settings.get("jax.config.jax_default_matmul_precision")
            switches = [("jax.config.jax_default_matmul_precision=%s" % prec,
                         str(prec).lower() not in JAX_FP32)]
            if device == "gpu":
                capability = _safe(_jax_gpu, mod)
        elif backend == "theano" and mod is not None:
            _theano_state(mod, settings, autotune)
        elif backend == "mxnet" and mod is not None:
            _mxnet_state(mod, settings, autotune)
    for key in AUTOTUNE_ENV:
        if key in os.environ:
            autotune.setdefault("env", {})[key] = os.environ[key]
    if capability is not None:
        settings["gpu_compute_capability"] = "%d.%d" % tuple(capability[:2])
    lower = [(k, v) for k, v in settings.items() if k.endswith("dtype_policy")
             and v not in (None, "float32")]
    if lower:
        return "unknown", "%s is %s: the workload's layers may compute below float32" % lower[0]
    if not backend:
        return "unknown", "the workload names no framework whose precision could be read"
    if device == "cpu":
        return _cpu(backend, settings)
    if device != "gpu":
        return "unknown", "where the work ran is unknown, so is its precision"
    return _gpu(backend, settings, env, capability, switches, tf32)


def _safe(fn, arg):
    try:
        return fn(arg)
    except Exception:
        return None


def _cpu(backend, settings):
    reduced = [(k, v) for k, v in settings.items()
               if k in ("torch.get_float32_matmul_precision", "torch.backends.mkldnn.fp32_precision")
               and v not in ("highest", "none", "ieee", None)]
    if reduced:
        return "unknown", ("ran on the CPU with %s=%s, which may compute float32 products in a lower "
                           "precision" % reduced[0])
    return "fp32", "ran on the CPU: TF32 is a GPU tensor-core mode; float32 ran as fp32"


def _gpu(backend, settings, env, capability, switches, tf32):
    if not tf32:
        return "unknown", ("the job file carries no TF32 facts (facts.tf32, written by the kit's "
                           "planner), so whether TF32 exists here is not decided")
    cuda = settings.get("torch.version.cuda") or settings.get("tf.sysconfig.cuda_version")
    major = version_tuple(cuda)
    min_cuda = version_tuple(tf32["min_cuda"])
    if major is not None and major < min_cuda:
        return "fp32", "built with CUDA %s (< %s): no TF32" % (cuda, tf32["min_cuda"])
    min_cc = version_tuple(tf32["min_compute_capability"])
    if capability is not None and tuple(capability[:2]) < min_cc:
        return "fp32", ("GPU compute capability %d.%d has no TF32 tensor cores (%s and later)"
                        % (tuple(capability[:2]) + (tf32["min_compute_capability"],)))
    since = version_tuple((tf32.get("since") or {}).get(backend))
    version = version_tuple(settings.get("%s.__version__" % ("tf" if backend == "tensorflow"
                                                              else backend)))
    if since and version is not None and version < since and major is None:
        return "fp32", ("%s %d.%d predates TF32 (first in %d.%d, the first CUDA %s builds)"
                        % ((backend,) + version[:2] + since[:2] + (tf32["min_cuda"],)))
    on = [name for name, allows in switches if allows]
    if switches and not on:
        return "fp32", "TF32 off as read back: %s" % ", ".join(n for n, _ in switches)
    if env.get("NVIDIA_TF32_OVERRIDE") == "0" and backend != "jax":
        return "fp32", ("NVIDIA_TF32_OVERRIDE=0: cuBLAS and cuDNN never use TF32%s"
                        % (" (though %s is on)" % ", ".join(on) if on else ""))
    where = ("on compute capability %d.%d" % tuple(capability[:2])) if capability else \
        "(GPU compute capability not read)"
    if on and capability is not None:
        return "tf32", "%s allows TF32 %s: float32 products may run as TF32" % (", ".join(on), where)
    if on:
        return "unknown", "%s allows TF32 %s" % (", ".join(on), where)
    return "unknown", "the %s build says nothing about TF32 on this GPU" % (backend or "cell's")
