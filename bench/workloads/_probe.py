"""The GPU capability probe shared by the probe_<framework> workloads (suite gpu-smoke).

A probe answers, in seconds, "do this stack's own cuBLAS and cuDNN kernels run on this GPU, and do
they compute the right numbers?" before any benchmark is trusted on it (legacy_stacks.md 6, item 1):

* one float32 GEMM (a @ b, n x n) through the framework's matrix product (cuBLAS on a GPU);
* one LSTM step (one time step, batch x input -> hidden) through the framework's own RNN path (cuDNN
  where the framework has a cuDNN LSTM; the framework's GEMM and elementwise kernels otherwise);
* the same step's backward pass: the gradient of sum(h1) with respect to x, h0 and c0 and the sum of
  every parameter's gradient, through the framework's autodiff (cuDNN's backward-data and
  backward-weights kernels where it has them);
* each checked against a float64 NumPy reference computed in the same process, then timed; after
  the timing, the last timed call's result is digested and compared with the same call made once
  more, untimed (bench/real_work.py: the timed calls computed the checked result).

The shapes are the job's parameters: `n` (or `m`, `k` and `n`: an m x k by k x n GEMM), `batch`,
`input`, `hidden`. cuBLAS and cuDNN pick kernels by shape and phase, so the gpu-smoke suite gives each
probe the largest shape the kit's suites run on its stack (reprokit/data/suites/gpu-smoke.yaml,
checked against the suites by tests/plan/test_probes.py): a probe of toy shapes,
forward only, never touched the large GEMMs, the LSTM kernels or the backward kernels of the cells it
gates.

The LSTM step uses one constant for every weight and bias, so every gate of a unit sees the same
pre-activation z = w * (sum(x) + sum(h0) + n_bias): the reference is exact whatever order a
framework or cuDNN keeps its gates and weight matrices in (cuDNN's opaque parameter buffers
included); only the bias count differs (two bias vectors in cuDNN, PyTorch and MXNet, one in Keras
and in a hand-written cell). c0 differs per unit, so the outputs differ per unit. For the same
reason the sum of all parameter gradients is layout-free: sum over rows of D * (sum(x) + sum(h0) +
n_bias), D the row's gradient summed over its 4 x hidden pre-activations (lstm_grad_reference).

`CUDA_FORCE_PTX_JIT=1` (job parameter `cuda_force_ptx_jit`, which the host sets when preflight finds
that the stack reaches this GPU only through PTX): set in the environment before the framework is
imported, so the driver ignores every cubin and JIT-compiles PTX; whatever still runs has PTX for
all the kernels the probe touched (CUDA Ampere/Hopper compatibility guides, 1.3).

GPU path: the PyTorch and JAX probes ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26,
docs/gpu-run; suite gpu-smoke, stacks torch-0.1, torch-1.3 and torch-modern all through torch 2.11,
jax-modern through JAX 0.11.2; GEMM and LSTM step within tolerance). CUDA_FORCE_PTX_JIT was not asked
for there, and the probes of the TensorFlow, Theano, MXNet and Keras stacks have never run on a GPU.
On a CPU the same code runs (tests/plan/test_probes.py runs the probes of the modern stack, Theano
and MXNet on CPU through the local runner), which checks the arithmetic, the reference and the
recording, not a GPU.

Standard library and NumPy only; Python 3.5 syntax (2.7-compatible).
"""
import os

import real_work
import timing

DEFAULTS = {"n": 256, "batch": 16, "input": 64, "hidden": 64, "seed": 1234}
OPTIONAL = ("m", "k")  # an m x k by k x n GEMM; each defaults to n (a square one)
GEMM_REL_TOL = 1e-2   # of max |reference|: loose enough for TF32 GEMMs (10-bit mantissa), far
LSTM_ABS_TOL = 5e-3   # below what a wrong or missing kernel gives (zeros, NaN, garbage)
GRAD_REL_TOL = 1e-2   # of max |reference| per gradient, as the GEMM's

# Known failure signatures (legacy_stacks.md 4.4): text in an error -> what it means.
SIGNATURES = (
    ("no kernel image is available", "no kernel image for this GPU (SASS-only kernels)"),
    ("CUBLAS_STATUS_EXECUTION_FAILED", "cuBLAS kernel failed to execute"),
    ("CUBLAS_STATUS_ARCH_MISMATCH", "cuBLAS architecture mismatch"),
    ("CUBLAS_STATUS_NOT_INITIALIZED", "cuBLAS did not initialise"),
    ("CUDNN_STATUS_EXECUTION_FAILED", "cuDNN kernel failed to execute"),
    ("CUDNN_STATUS_ARCH_MISMATCH", "cuDNN architecture mismatch"),
    ("cuDNN failed to initialize", "cuDNN did not initialise"),
    ("Invalid cuda version", "libgpuarray rejected the driver's CUDA version"),
    ("invalid value for --gpu-architecture", "NVRTC does not know this architecture"),
    ("invalid device function", "no kernel image for this GPU (invalid device function)"),
)


class ProbeFailure(RuntimeError):
    """A probe stage failed: the message is the cell's one-line reason (and the cache's error)."""


def settings(ctx):
    p = dict(DEFAULTS)
    p.update(dict((k, v) for k, v in ctx.params.items() if k in DEFAULTS or k in OPTIONAL))
    for key in OPTIONAL:
        p.setdefault(key, p["n"])
    for key in tuple(DEFAULTS) + OPTIONAL:
        p[key] = int(p[key])
        if p[key] < 1:
            raise ValueError("probe parameter %s must be a positive integer, not %r" % (key, p[key]))
    return p


def force_ptx_jit(ctx):
    """Set CUDA_FORCE_PTX_JIT=1 when the job asks for it on a GPU. Call BEFORE importing the
    framework (the driver reads it when CUDA initialises). Returns what was done, for the record."""
    wanted = bool(ctx.params.get("cuda_force_ptx_jit"))
    if wanted and ctx.device == "gpu":
        os.environ["CUDA_FORCE_PTX_JIT"] = "1"
        return "CUDA_FORCE_PTX_JIT=1 set before the framework was imported"
    if wanted:
        return "asked for, not set: the cell runs on the CPU, where it means nothing"
    return "not asked for (CUDA_FORCE_PTX_JIT=%s in the environment)" % (
        os.environ.get("CUDA_FORCE_PTX_JIT") or "unset")


def signature(text):
    for needle, meaning in SIGNATURES:
        if needle.lower() in text.lower():
            return meaning
    return None


def stage(name, fn):
    """Run one probe stage; any error becomes a ProbeFailure naming the stage and its signature."""
    try:
        return fn()
    except ProbeFailure:
        raise
    except Exception as e:
        text = ("%s: %s" % (type(e).__name__, e)).strip().splitlines()
        text = text[0] if text else type(e).__name__
        sig = signature(str(e))
        raise ProbeFailure("%s failed%s: %s" % (name, " (%s)" % sig if sig else "", text[:300]))


# -- inputs and references (NumPy, float64) ------------------------------------------------------
def gemm_inputs(np, p):
    """a [m, k] and b [k, n] (float32)."""
    rng = np.random.RandomState(p["seed"])
    a = rng.uniform(0.0, 1.0, (p.get("m", p["n"]), p.get("k", p["n"]))).astype(np.float32)
    b = rng.uniform(0.0, 1.0, (p.get("k", p["n"]), p["n"])).astype(np.float32)
    return a, b


def lstm_inputs(np, p):
    """x [batch, input], h0 and c0 [batch, hidden] (float32) and the weight constant w."""
    rng = np.random.RandomState(p["seed"] + 1)
    x = rng.uniform(0.0, 1.0, (p["batch"], p["input"])).astype(np.float32)
    h0 = rng.uniform(0.0, 1.0, (p["batch"], p["hidden"])).astype(np.float32)
    c0 = rng.uniform(-1.0, 1.0, (p["batch"], p["hidden"])).astype(np.float32)
    w = 0.5 / (p["input"] + p["hidden"] + 2)  # z about 0.25: no gate saturates
    return x, h0, c0, float(np.float32(w))


def lstm_reference(np, x, h0, c0, w, n_bias):
    """(h1, c1) of one LSTM step with every weight and bias equal to w (float64)."""
    x, h0, c0 = (np.asarray(v, dtype=np.float64) for v in (x, h0, c0))
    z = w * (x.sum(axis=1) + h0.sum(axis=1) + n_bias)
    gate = 1.0 / (1.0 + np.exp(-z))
    cand = np.tanh(z)
    c1 = gate[:, None] * c0 + (gate * cand)[:, None]
    h1 = gate[:, None] * np.tanh(c1)
    return h1, c1


def lstm_grad_reference(np, x, h0, c0, w, n_bias):
    """The gradient of L = sum(h1) of one LSTM step with every weight and bias equal to w (float64):
    {"x": dL/dx, "h0": dL/dh0, "c0": dL/dc0, "params": the sum of dL/dparameter over every weight
    and bias}. Each row's 4 x hidden pre-activations all equal z; with g = sigmoid(z),
    cand = tanh(z), c1 = g c0 + g cand and h1 = g tanh(c1):
    dL/dc1 = g (1 - tanh(c1)^2), dL/dc0 = g dL/dc1, and the gradients of the row's pre-activations
    sum to D = sum over units of g (1 - g) (dL/dc1 (cand + c0) + tanh(c1)) + dL/dc1 g (1 - cand^2)
    (input, forget and output gates, then the candidate). Every x and h0 entry feeds every
    pre-activation with weight w: dL/dx = dL/dh0 = w D; a weight's gradient is its pre-activation's
    times its input, a bias's the pre-activation's own."""
    x, h0, c0 = (np.asarray(v, dtype=np.float64) for v in (x, h0, c0))
    sx, sh = x.sum(axis=1), h0.sum(axis=1)
    z = w * (sx + sh + n_bias)
    g = 1.0 / (1.0 + np.exp(-z))
    cand = np.tanh(z)
    c1 = g[:, None] * c0 + (g * cand)[:, None]
    tc1 = np.tanh(c1)
    dc1 = g[:, None] * (1.0 - tc1 ** 2)
    gp = (g * (1.0 - g))[:, None]
    d = (gp * (dc1 * (cand[:, None] + c0) + tc1) + dc1 * (g * (1.0 - cand ** 2))[:, None]).sum(axis=1)
    return {"x": np.repeat((w * d)[:, None], x.shape[1], axis=1),
            "h0": np.repeat((w * d)[:, None], h0.shape[1], axis=1),
            "c0": g[:, None] * dc1,
            "params": float((d * (sx + sh + n_bias)).sum())}


def check_lstm_grad(np, got, x, h0, c0, w, n_bias):
    """Each gradient `got` has (x, h0, c0 arrays; params a number) against lstm_grad_reference."""
    ref = lstm_grad_reference(np, x, h0, c0, w, n_bias)
    out = {}
    for name in ("x", "h0", "c0", "params"):
        if name not in got:
            continue
        want = np.asarray(ref[name], dtype=np.float64)
        have = np.asarray(got[name], dtype=np.float64).reshape(want.shape)
        if not np.all(np.isfinite(have)):
            raise ProbeFailure("LSTM backward returned non-finite d%s values (NaN or inf)" % name)
        err = float(np.max(np.abs(have - want)) / max(float(np.max(np.abs(want))), 1e-30))
        if err > GRAD_REL_TOL:
            raise ProbeFailure("LSTM backward d%s differs from the CPU reference: max |error| / max "
                               "|ref| = %.3g > %g" % (name, err, GRAD_REL_TOL))
        out["max_rel_error_" + name] = err
    out["tolerance"] = GRAD_REL_TOL
    out["checked"] = sorted(k for k in ("x", "h0", "c0", "params") if k in got)
    return out


def check_gemm(np, got, a, b):
    ref = np.dot(a.astype(np.float64), b.astype(np.float64))
    got = np.asarray(got, dtype=np.float64)
    if got.shape != ref.shape:
        raise ProbeFailure("GEMM returned shape %s, expected %s" % (got.shape, ref.shape))
    if not np.all(np.isfinite(got)):
        raise ProbeFailure("GEMM returned non-finite values (NaN or inf)")
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    if err > GEMM_REL_TOL:
        raise ProbeFailure("GEMM result differs from the CPU reference: max |error| / max |ref| = "
                           "%.3g > %g" % (err, GEMM_REL_TOL))
    return {"max_rel_error": err, "tolerance": GEMM_REL_TOL, "shape": list(ref.shape)}


def check_lstm(np, h1, c1, x, h0, c0, w, n_bias):
    ref_h, ref_c = lstm_reference(np, x, h0, c0, w, n_bias)
    out = {}
    for name, got, ref in (("h", h1, ref_h), ("c", c1, ref_c)):
        got = np.asarray(got, dtype=np.float64).reshape(ref.shape)
        if not np.all(np.isfinite(got)):
            raise ProbeFailure("LSTM step returned non-finite %s values (NaN or inf)" % name)
        err = float(np.max(np.abs(got - ref)))
        if err > LSTM_ABS_TOL:
            raise ProbeFailure("LSTM step %s differs from the CPU reference: max |error| = %.3g > %g"
                               % (name, err, LSTM_ABS_TOL))
        out["max_abs_error_" + name] = err
    out.update({"tolerance": LSTM_ABS_TOL, "weight": w, "bias_vectors": n_bias})
    return out


# -- the real-work check of the timed calls (bench/real_work.py) ------------------------------------
def _mean_abs(np, value):
    return float(np.mean(np.abs(np.asarray(value, dtype=np.float64))))


def digest_gemm(np, c):
    """mean |a @ b| in float64 (inputs in [0, 1): never near zero)."""
    return _mean_abs(np, c)


def digest_lstm(np, hc):
    """mean |h1| + mean |c1| in float64."""
    return _mean_abs(np, hc[0]) + _mean_abs(np, hc[1])


def digest_grad(np, grads):
    """The gradients' digest: mean |d| of each gradient array (x, h0, c0) plus |sum of the parameter
    gradients|, whichever the probe returns, in float64."""
    total = 0.0
    for name in ("x", "h0", "c0"):
        if name in grads:
            total += _mean_abs(np, grads[name])
    if "params" in grads:
        total += abs(float(grads["params"]))
    return total


def _stage_check(np, name, fn, digest):
    """The timed calls' real-work check: the last one's result digested against fn() called once
    more after the timing (the stage's own float64 NumPy reference was checked before timing)."""
    return real_work.Check("forward", output=lambda result: digest(np, result),
                           reference=lambda: digest(np, stage(name, fn)))


# -- the probe itself ----------------------------------------------------------------------------
def run_probe(ctx, np, p, framework, version, gemm, lstm_step, gemm_api, lstm_api, ptx_note, device,
              n_bias, lstm_grad=None):
    """Check, then time, `gemm()` -> a @ b, `lstm_step()` -> (h1, c1) and `lstm_grad()` -> the
    gradients of sum(h1) ({"x", "h0", "c0", "params"}, any subset; see lstm_grad_reference) as NumPy
    arrays (each call copies its result to the host, which synchronises the device). Records the
    metrics gemm_time, lstm_step_time, lstm_backward_time (ms; the backward with its forward) and
    first_call_time (s: the first call of each, library initialisation and any PTX JIT included)
    and extra["probe"]."""
    a, b = gemm_inputs(np, p)
    x, h0, c0, w = lstm_inputs(np, p)
    t0 = timing.clock()
    got = stage("GEMM", gemm)
    t_gemm = timing.clock() - t0
    gemm_check = check_gemm(np, got, a, b)
    t0 = timing.clock()
    h1, c1 = stage("LSTM step", lstm_step)
    t_lstm = timing.clock() - t0
    lstm_check = check_lstm(np, h1, c1, x, h0, c0, w, n_bias)
    t_grad, grad_check = 0.0, None
    if lstm_grad is not None:
        t0 = timing.clock()
        grads = stage("LSTM backward", lstm_grad)
        t_grad = timing.clock() - t0
        grad_check = check_lstm_grad(np, grads, x, h0, c0, w, n_bias)
    ctx.record_single("first_call_time", t_gemm + t_lstm + t_grad, "s",
                      "first GEMM plus first LSTM step (and its first backward, where the probe has "
                      "one) of the process, results copied to the host: library initialisation and "
                      "any PTX JIT included")
    sync = "the result is copied to the host inside every timed call (this synchronises the device)"
    ctx.measure("gemm_time", lambda: stage("GEMM", gemm), unit="ms", kind="ms", items=1,
                method="one %dx%d by %dx%d float32 GEMM through %s, result copied to the host"
                       % (a.shape[0], a.shape[1], b.shape[0], b.shape[1], gemm_api), sync_desc=sync,
                real_work=_stage_check(np, "GEMM", gemm, digest_gemm))
    ctx.measure("lstm_step_time", lambda: stage("LSTM step", lstm_step), unit="ms", kind="ms",
                items=1, method="one LSTM step (batch %d, input %d, hidden %d) through %s, h and c "
                                "copied to the host" % (p["batch"], p["input"], p["hidden"], lstm_api),
                sync_desc=sync, real_work=_stage_check(np, "LSTM step", lstm_step, digest_lstm))
    if lstm_grad is not None:
        ctx.measure("lstm_backward_time", lambda: stage("LSTM backward", lstm_grad), unit="ms",
                    kind="ms", items=1,
                    method="one LSTM step and its backward (gradients of sum(h1): %s) through %s's "
                           "autodiff, gradients copied to the host"
                           % (", ".join(grad_check["checked"]), framework), sync_desc=sync,
                    real_work=_stage_check(np, "LSTM backward", lstm_grad, digest_grad))
    ctx.describe(framework=framework, framework_version=version,
                 api="probe: GEMM via %s; LSTM step via %s" % (gemm_api, lstm_api))
    ctx.note("Capability probe (bench/workloads/_probe.py): results checked against a float64 NumPy "
             "reference in the same process before timing; constant weights (%g) make the LSTM "
             "reference independent of the weight layout." % w)
    if device == "gpu":
        ctx.note("GPU path of this probe: its calls are checked against the framework's API list "
                 "(tests/containers/test_api_paths.py); the torch and JAX probes ran on one GPU during "
                 "development (an H100, torch 2.11 / JAX 0.11, docs/gpu-run), the others never have.")
    ctx.extra["probe"] = {
        "device": device, "cuda_force_ptx_jit": ptx_note, "gemm": gemm_check,
        "lstm_step": lstm_check, "lstm_backward": grad_check, "gemm_api": gemm_api,
        "lstm_api": lstm_api, "first_gemm_s": t_gemm, "first_lstm_step_s": t_lstm,
        "first_lstm_backward_s": t_grad if lstm_grad is not None else None,
        "shapes": {"gemm": [a.shape[0], a.shape[1], b.shape[1]],
                   "lstm": {"batch": p["batch"], "input": p["input"], "hidden": p["hidden"]}},
        "env": {"CUDA_FORCE_PTX_JIT": os.environ.get("CUDA_FORCE_PTX_JIT"),
                "CUDA_CACHE_PATH": os.environ.get("CUDA_CACHE_PATH")},
    }
