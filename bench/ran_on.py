"""Where a cell's work ran, as its framework says after the cell: the cell result's `ran_on`.

A cell that asked for a GPU and whose framework ran on the CPU is an error, never a result (the
harness turns it into status "failed" with `mismatch`'s one-line reason). Only frameworks the cell
imported are asked (nothing is imported here, and CUDA is never initialised here):

* torch: torch.cuda.is_available() and whether the cell initialised CUDA (a CUDA tensor or kernel);
  the current device's name;
* TensorFlow: the GPUs it set up (tf.config logical devices, TF >= 1.14; device_lib in older 1.x),
  ops go there unless pinned: the TensorFlow workloads that pin a CPU cell to /cpu:0 say so;
* JAX: jax.devices()[0].platform (the default device every array goes to unless placed);
* Theano: theano.config.device and whether its GPU backend activated;
* MXNet: the GPUs it sees; which context the arrays used is the workload's to say
  (CellContext.record_ran_on), else "unknown" where GPUs exist.

A workload that knows better records its own (CellContext.record_ran_on), which is kept.

Python 3.5 syntax (2.7-compatible), standard library plus the framework; never imports reprokit.
"""
import sys
import warnings


def _err(e):
    return ("%s: %s" % (type(e).__name__, e)).strip().splitlines()[0][:200]


def detect(backend):
    """{"device": "gpu" | "cpu" | "unknown", "detail": "<what the framework said>"}."""
    if not backend:
        return {"device": "unknown", "detail": "the workload names no framework to ask"}
    mod = sys.modules.get(backend)
    if mod is None:
        return {"device": "unknown", "detail": "the cell never imported %s" % backend}
    fn = {"torch": _torch, "tensorflow": _tf, "jax": _jax, "theano": _theano,
          "mxnet": _mxnet}.get(backend)
    if fn is None:
        return {"device": "unknown", "detail": "no device check for framework %r" % backend}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            device, detail = fn(mod)
    except Exception as e:  # never costs a measurement
        device, detail = "unknown", "asking %s failed: %s" % (backend, _err(e))
    return {"device": device, "detail": detail}


def _torch(torch):
    tc = torch.cuda
    build = getattr(getattr(torch, "version", None), "cuda", None)
    if not tc.is_available():
        return "cpu", ("torch.cuda.is_available() is False (torch %s, CUDA build %s)"
                       % (torch.__version__, build or "none"))
    init = getattr(tc, "is_initialized", None)
    inited = init() if init is not None else getattr(tc, "_initialized", None)
    if inited is None:
        return "unknown", ("torch %s sees %d GPU(s); whether the cell used one, this version does "
                           "not say" % (torch.__version__, tc.device_count()))
    if not inited:
        return "cpu", ("torch %s sees %d GPU(s) but the cell never initialised CUDA: no tensor "
                       "or kernel of it ran on a GPU" % (torch.__version__, tc.device_count()))
    i = tc.current_device()
    name = getattr(tc, "get_device_name", None)  # not in the oldest releases
    return "gpu", "torch %s: CUDA initialised by the cell, current device cuda:%d%s" % (
        torch.__version__, i, " " + name(i) if name is not None else "")


def _tf(tf):
    built = getattr(getattr(tf, "test", None), "is_built_with_cuda", None)
    version = getattr(tf, "__version__", "?")
    if built is not None and not built():
        return "cpu", "TensorFlow %s is a build without CUDA" % version
    config = getattr(tf, "config", None)
    lister = getattr(config, "list_logical_devices", None) or \
        getattr(getattr(config, "experimental", None), "list_logical_devices", None)
    if lister is not None:
        names = [d.name for d in lister("GPU")]
    else:  # TF 1.x before 1.14
        from tensorflow.python.client import device_lib
        names = [d.name for d in device_lib.list_local_devices() if d.device_type == "GPU"]
    if not names:
        return "cpu", "TensorFlow %s set up no GPU device" % version
    return "gpu", "TensorFlow %s set up GPU devices %s (the default placement)" % (
        version, ", ".join(names))


def _jax(jax):
    d = jax.devices()[0]
    platform = str(d.platform).lower()
    kind = getattr(d, "device_kind", "")
    if platform in ("gpu", "cuda", "rocm"):
        return "gpu", "jax.devices()[0] is %s (%s, %s)" % (d, platform, kind)
    if platform == "cpu":
        return "cpu", "jax.devices()[0] is %s (platform cpu)" % (d,)
    return "unknown", "jax.devices()[0] is %s (platform %s)" % (d, platform)


def _theano(theano):
    device = str(theano.config.device)
    if not device.startswith(("gpu", "cuda")):
        return "cpu", "theano.config.device is %r" % device
    new = sys.modules.get("theano.gpuarray")
    old = sys.modules.get("theano.sandbox.cuda")
    if new is not None and getattr(new, "pygpu_activated", False):
        return "gpu", "theano.config.device is %r; the gpuarray backend activated" % device
    if old is not None and getattr(old, "cuda_enabled", False):
        return "gpu", "theano.config.device is %r; theano.sandbox.cuda enabled" % device
    return "cpu", ("theano.config.device is %r but no GPU backend activated (Theano falls back to "
                   "the CPU)" % device)


def _mxnet(mx):
    count = getattr(getattr(mx, "context", None), "num_gpus", None)
    n = count() if count is not None else len(mx.test_utils.list_gpus())
    if n == 0:
        return "cpu", "MXNet %s sees no GPU" % mx.__version__
    return "unknown", ("MXNet %s sees %d GPU(s); the workload did not say which context its arrays "
                       "used" % (mx.__version__, n))


def mismatch(asked, ran_on):
    """The one-line reason a cell fails when it asked for a GPU and ran on the CPU, else None."""
    if asked != "gpu" or (ran_on or {}).get("device") != "cpu":
        return None
    return ("the cell asked for a GPU but its work ran on the CPU (%s); run it in an environment "
            "whose framework sees the GPU (a GPU image, or a CUDA build of the framework), or with "
            "--device cpu" % ran_on.get("detail"))
