"""Source 000 (rnn-benchmarks) single-layer LSTM regression, Theano (variant "fastlstm").

Workload (seed_workloads.md section 1): time-major input [seq, batch, hidden] of uniform random
float32, held in a theano.shared variable (nothing is transferred per iteration, as in the original);
one LSTM layer with input size = hidden size and no peepholes, written like the original's FastLSTM
class: one W[in, 4h], one U[h, 4h] and a bias b[4h] (all uniform in +-sqrt(6 / sum(shape))), the input
projection x.W + b computed for all steps at once, theano.scan over time for the recurrent part,
gates in the order input, forget, output, candidate; zero initial h and c. Cost = MEAN of squared
errors of the last step (the Theano script's loss; the TF script sums); plain SGD, lr 0.01.

Which network class produced the published Theano row is unverified (the README command hides the
network type; see seed_workloads.md 1.1 and 1.4 item 7). This cell runs FastLSTM.

Timing follows the original Theano script: the compile timer starts BEFORE the symbolic graph is
built and covers graph construction, theano.function compilation of the forward and the train
function, and one train call. Forward = f_forward() returning h[-1]; train = f_train() returning the
cost. Per-example values = seconds per batch / batch.

Python 3.5 syntax; imports only theano, numpy and the standard library.
"""
import importlib
import os
import shutil
import sys
import tempfile

import timing

try:  # imported as workloads.s000_theano by the harness, or directly in tests
    from workloads import _lstm000 as common
except ImportError:  # pragma: no cover
    import _lstm000 as common

FRAMEWORK = "theano"
VARIANTS = ("fastlstm",)
LEARNING_RATE = 0.01


def _compiledir_state(path):
    """How full Theano's compile cache is: compiled modules live in one sub-directory each."""
    if not os.path.isdir(path):
        return {"path": path, "existed": False, "entries": 0, "module_dirs": 0}
    entries = [e for e in os.listdir(path) if not e.startswith(".")]
    modules = [e for e in entries if os.path.isdir(os.path.join(path, e))]
    return {"path": path, "existed": True, "entries": len(entries), "module_dirs": len(modules)}


def _cache_verdict(before, after):
    grown = after["module_dirs"] - before["module_dirs"]
    if before["module_dirs"] == 0:
        return "cold (empty compile cache; %d modules compiled)" % grown
    if grown <= 0:
        return "warm (no new module in the compile cache)"
    return ("partly cold (%d modules added to the compile cache during the cell, by this cell or "
            "a concurrent Theano process sharing it; observed with Theano 1.0.5: a few DimShuffle "
            "modules are recompiled in every new process because their cache entry is not "
            "reused, so even a warm cache grows by some modules)" % grown)


def _import_theano(fresh_cache):
    """Import theano, optionally with a fresh (empty) base_compiledir. Returns (theano, tmpdir)."""
    tmpdir = None
    if fresh_cache:
        if "theano" in sys.modules:
            raise RuntimeError("params.theano_compiledir='fresh' needs theano not yet imported "
                               "in this process")
        tmpdir = tempfile.mkdtemp(prefix="reprokit-theano-cache-")
        flags = os.environ.get("THEANO_FLAGS", "")
        os.environ["THEANO_FLAGS"] = ",".join(
            [f for f in flags.split(",") if f] + ["base_compiledir=%s" % tmpdir])
    try:
        import theano
    except AttributeError as e:
        if "blas_opt_info" in str(e):
            raise RuntimeError(
                "Theano could not configure BLAS with this numpy (%s). Set THEANO_FLAGS to contain "
                "'blas.ldflags=' (Theano 1.0.x spelling; 'blas__ldflags' is not recognised by "
                "Theano 1.0.5). THEANO_FLAGS was %r" % (e, os.environ.get("THEANO_FLAGS")))
        raise
    return theano, tmpdir


def _scan_driver():
    """Theano runs a scan's time loop either in Cython (scan_perform.c, compiled on first use) or,
    when that module cannot be imported, in Python (Scan.execute). Theano 1.0.5's pre-generated
    scan_perform.c does not compile on CPython >= 3.11 (verified: errors on longintrepr.h,
    PyCode_New, exc_state.exc_type). Theano catches only ImportError there, so the failure would
    abort theano.function; marking the module absent makes Theano take its Python loop instead.
    Returns (driver, seconds spent probing, detail)."""
    name = "theano.scan_module.scan_perform_ext"
    if sys.version_info >= (3, 11):
        sys.modules[name] = None
        return "python", 0.0, ("Cython scan_perform skipped: Theano 1.0.5's scan_perform.c does not "
                               "compile on CPython %d.%d" % sys.version_info[:2])
    t0 = timing.clock()
    try:
        importlib.import_module(name)
        return "cython", timing.clock() - t0, "Cython scan_perform imported (compiled if needed)"
    except Exception as e:  # compile error: fall back to Theano's Python scan loop
        sys.modules[name] = None
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return "python", timing.clock() - t0, "Cython scan_perform failed (%s: %s)" % (
            type(e).__name__, first)


def _sync_for(theano, gpu):
    """The original called theano.sandbox.cuda.synchronize() (old CUDA backend, Theano 0.9).
    NEVER RUN ON A GPU HERE. Outputs are copied to host by theano.function anyway, so each call
    returns only after the device work it depends on has finished."""
    if not gpu:
        return None, None
    try:
        import theano.sandbox.cuda as old_cuda  # Theano <= 0.9 old backend
        if getattr(old_cuda, "cuda_available", False) and hasattr(old_cuda, "synchronize"):
            return old_cuda.synchronize, "theano.sandbox.cuda.synchronize() after each iteration"
    except Exception:  # removed in Theano 1.0; gpuarray backend instead
        pass
    return None, "implicit: theano.function copies its output (h[-1] or the cost) to host"


def run(ctx):
    if ctx.variant not in (None,) + VARIANTS:
        raise ValueError("s000_theano: unknown variant %r (known: %s)" % (ctx.variant,
                                                                         ", ".join(VARIANTS)))
    batch, seq, hidden = common.shape(ctx)
    ftz = common.flush_denormal_requested(ctx)
    fresh = str(ctx.params.get("theano_compiledir", "default")).lower() == "fresh"

    # FTZ/DAZ before numpy/theano start any thread, so BLAS threads created later inherit it.
    numpy_was_imported = "numpy" in sys.modules
    prev_mxcsr, ftz_text = (None, "left at the process default (params.flush_denormal=false)")
    if ftz:
        prev_mxcsr, ftz_text = common.ftz_daz_set(True)
    tmpdir = None
    try:
        theano, tmpdir = _import_theano(fresh)
        _run(ctx, theano, batch, seq, hidden, ftz, ftz_text, numpy_was_imported, fresh)
    finally:
        if ftz:
            common.mxcsr_restore(prev_mxcsr)
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _run(ctx, theano, batch, seq, hidden, ftz, ftz_text, numpy_was_imported, fresh):
    import numpy as np
    import theano.tensor as T

    cfg = theano.config
    gpu_device = str(cfg.device).startswith(("gpu", "cuda"))
    if ctx.device == "gpu" and not gpu_device:
        raise RuntimeError("cell asks for a GPU but theano.config.device is %r" % cfg.device)
    if cfg.floatX != "float32":
        ctx.note("theano.config.floatX is %r; all shared variables here are float32 anyway"
                 % cfg.floatX)
    cache_before = _compiledir_state(cfg.compiledir)
    scan_driver, scan_probe_s, scan_detail = _scan_driver()

    rng = np.random.RandomState(1234)
    x_host = rng.rand(seq, batch, hidden).astype(np.float32)  # time-major, as the original
    y_host = rng.rand(batch, hidden).astype(np.float32)
    x_data = theano.shared(x_host, name="x_data")  # created before the timer (host->device copy
    y_data = theano.shared(y_host, name="y_data")  # on a GPU; the original did the same)

    def glorot(shape_):
        bound = np.sqrt(6.0 / float(np.sum(shape_)))
        return rng.uniform(-bound, bound, size=shape_).astype(np.float32)

    w_init = glorot((hidden, 4 * hidden))
    u_init = glorot((hidden, 4 * hidden))
    b_init = glorot((4 * hidden,))

    t_start = timing.clock()
    # ---- graph construction (inside the compile timer, as in the original) ----
    W = theano.shared(w_init, name="W")
    U = theano.shared(u_init, name="U")
    b = theano.shared(b_init, name="b")
    params = [W, U, b]
    h = hidden

    def step(pre_t, c_prev, h_prev):
        act = pre_t + T.dot(h_prev, U)
        gate_i = T.nnet.sigmoid(act[:, 0 * h:1 * h])
        gate_f = T.nnet.sigmoid(act[:, 1 * h:2 * h])
        gate_o = T.nnet.sigmoid(act[:, 2 * h:3 * h])
        cand = T.tanh(act[:, 3 * h:4 * h])
        c_new = gate_f * c_prev + gate_i * cand
        h_new = gate_o * T.tanh(c_new)
        return c_new, h_new

    preact = T.dot(x_data, W) + b  # [seq, batch, 4h], one GEMM for all steps
    zeros = T.zeros((batch, hidden), dtype="float32")
    (_, hs), _ = theano.scan(step, sequences=preact, outputs_info=[zeros, zeros])
    output = hs[-1]
    cost = T.mean((output - y_data) ** 2)
    grads = T.grad(cost, params)
    lr = np.float32(LEARNING_RATE)
    updates = [(p, p - lr * g) for p, g in zip(params, grads)]
    t_graph = timing.clock()
    f_forward = theano.function([], output, name="f_forward")
    t_fwd_compiled = timing.clock()
    f_train = theano.function([], cost, updates=updates, name="f_train")
    t_train_compiled = timing.clock()
    sync, sync_desc = _sync_for(theano, gpu_device)
    first_cost = float(f_train())
    if sync is not None:
        sync()
    t_end = timing.clock()

    cache_after = _compiledir_state(cfg.compiledir)
    verdict = _cache_verdict(cache_before, cache_after)
    ctx.record_single(
        "compile_time", t_end - t_start, "s",
        "as the original Theano script: timer starts before the symbolic graph is built; covers "
        "graph construction, theano.function compilation of the forward and the train function "
        "(C code generation and g++ unless Theano's compile cache already holds it) and one train "
        "call. Theano compile cache: %s" % verdict,
        sync_desc=sync_desc, state="Theano compile cache " + verdict.split(" (")[0])

    ctx.describe(framework="theano", framework_version=theano.__version__,
                 api="theano.scan FastLSTM (one W[in,4h], one U[h,4h], bias) with "
                     "theano.function; input in theano.shared")
    ctx.note(common.WORKLOAD_SUMMARY + "; Theano cost = MEAN of squared errors of the last step "
             "(as the original Theano script; the TF script used a sum).")
    ctx.note("network class: the published Theano row does not say which class ran; this cell runs "
             "FastLSTM (one W, one U, bias, scan over time); the other candidate, the 8-matrix LSTM "
             "class, is not implemented (unverified which one produced the row).")
    ctx.note("Theano compile cache %s: %s; %d module dirs before, %d after. A warm cache skips C "
             "compilation, so compile_time depends on it. %s"
             % (cache_before["path"], verdict, cache_before["module_dirs"],
                cache_after["module_dirs"],
                "params.theano_compiledir='fresh': a new empty base_compiledir was used "
                "(cold start)." if fresh else "The stack's default compiledir was used."))
    blas_flags = str(cfg.blas.ldflags)
    ctx.note("theano.config: device=%s floatX=%s mode=%s linker=%s blas.ldflags=%r openmp=%s "
             "cxx=%r%s" % (cfg.device, cfg.floatX, cfg.mode, cfg.linker, blas_flags, cfg.openmp,
                           cfg.cxx, "" if blas_flags else
                           "; with empty blas.ldflags Theano calls BLAS through numpy's C API "
                           "(numpy's own BLAS library)"))
    if scan_driver == "python":
        ctx.substitute("theano.scan time loop in Cython (Theano's scan_perform extension)",
                       "Theano's pure-Python scan loop (Scan.execute); the per-step inner function "
                       "and all other ops are still compiled C",
                       scan_detail + "; adds Python overhead per time step (more at seq 100)")
    else:
        ctx.note("theano.scan time loop: %s, %.2f s spent before the compile timer"
                 % (scan_detail, scan_probe_s))
    if fresh:
        ctx.substitute("Theano compile cache in its (unrecorded) 2017 state",
                       "a fresh, empty compile cache",
                       "params.theano_compiledir='fresh' asked for a cold-cache compile time")
    if ftz:
        state = "FTZ+DAZ set through glibc fesetenv before numpy/theano were imported: %s%s" % (
            ftz_text, "" if not numpy_was_imported else
            " (numpy was already imported, so BLAS threads it had started keep their own setting)")
    else:
        state = ftz_text
    ctx.note(common.denormal_note("Theano has no switch for it", state) + " With Theano's MEAN "
             "loss the gradients are batch*hidden times smaller than with TF's sum, so the gates "
             "do not saturate and the effect is not expected here.")

    ctx.extra["compile_breakdown_s"] = {
        "graph_construction": t_graph - t_start,
        "compile_forward_function": t_fwd_compiled - t_graph,
        "compile_train_function": t_train_compiled - t_fwd_compiled,
        "first_train_call": t_end - t_train_compiled,
    }
    ctx.extra["theano_compiledir"] = {"before": cache_before, "after": cache_after,
                                      "verdict": verdict, "fresh_requested": fresh}
    ctx.extra["scan_driver"] = {"driver": scan_driver, "probe_s": scan_probe_s,
                                "detail": scan_detail}
    ctx.extra["flush_denormal"] = {"requested": ftz, "how": ftz_text}

    def forward_step():
        f_forward()

    def train_step():
        f_train()

    ctx.measure("forward_time_per_example", forward_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="f_forward(): whole sequence through scan, returns h[-1] (input already "
                       "in a theano.shared, nothing transferred in)")
    ctx.measure("train_time_per_example", train_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="f_train(): forward, mean-squared-error cost of the last step, gradients, "
                       "SGD update of W, U, b (all in one theano.function); returns the cost")
    common.record_first_vs_later(ctx, t_end - t_train_compiled, batch)
    common.record_both_as_published(ctx, batch)
    last_out = np.asarray(f_forward())  # one untimed forward for the record
    ctx.extra["numerics"] = {
        "cost_first_train_call": first_cost,
        "cost_after_timed_train": float(np.mean((last_out - y_host) ** 2)),
        "last_output_frac_abs_gt_0.999": float(np.mean(np.abs(last_out) > 0.999)),
        "weights_abs_max_after": {p.name: float(np.abs(p.get_value()).max()) for p in params},
    }
