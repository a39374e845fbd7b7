"""Source 000 (rnn-benchmarks) single-layer LSTM regression, Theano (variants "fastlstm", "lstm").

Workload (seed_workloads.md section 1): time-major input [seq, batch, hidden] of uniform random
float32, held in a theano.shared variable (nothing is transferred per iteration, as in the original);
one LSTM layer with input size = hidden size and no peepholes, written like the original's FastLSTM
class: one W[in, 4h], one U[h, 4h] and a bias b[4h] (all uniform in +-sqrt(6 / sum(shape))), the input
projection x.W + b computed for all steps at once, theano.scan over time for the recurrent part,
gates in the order input, forget, output, candidate; zero initial h and c. Cost = MEAN of squared
errors of the last step (the Theano script's loss; the TF script sums); plain SGD, lr 0.01.

Which network class produced the published Theano row is unverified (the README command hides the
network type; see seed_workloads.md 1.1 and 1.4 item 7, defect d000-theano-class). "fastlstm" (the
kit's as-published reading) runs FastLSTM. "lstm" is the other reading, the script's LSTM class:
eight separate gate matrices (W_x and W_h for the input, forget, cell and output gates), every
product inside the scan step (no input projection hoisted out of the loop), zero biases, the three
peephole matrices created but unused (their terms are commented out in the original), parameter
order w_xi, w_hi, w_xf, w_hf, w_xo, w_ho, w_xc, w_hc, b_i, b_c, b_o, b_f. Written from that
description (seed_workloads.md 1.1), not copied.

Compile time (defect d000-theano-cache: the published state of Theano's compile cache is unknown)
is measured in a controlled state, twice, each in a new Python process (this interpreter, this
environment), so neither depends on which cell ran before or in the same process:
  compile_time       COLD: Theano imported with a fresh, empty base_compiledir made for this cell,
                     so every C module of the graph is generated and compiled;
  compile_time_warm  WARM: a second process on that directory, now filled by the cold compile,
                     builds the same graph and times the same steps; Theano loads the compiled
                     modules instead of compiling them.
Both carry a `state` label. This process then compiles the graph once more, untimed, for the forward
and train loops (on the same directory when it imports Theano here, so that compile is warm).

Timing follows the original Theano script: the compile timer starts BEFORE the symbolic graph is
built and covers graph construction, theano.function compilation of the forward and the train
function, and one train call. Forward = f_forward() returning h[-1]; train = f_train() returning the
cost. Per-example values = seconds per batch / batch.

Python 3.5 syntax; imports only theano, numpy and the standard library.
"""
import atexit
import importlib
import os
import shutil
import sys
import tempfile

import real_work
import timing

try:  # imported as workloads.s000_theano by the harness, or directly in tests
    from workloads import _lstm000 as common
except ImportError:  # pragma: no cover
    import _lstm000 as common

FRAMEWORK = "theano"
VARIANTS = ("fastlstm", "lstm")
LEARNING_RATE = 0.01
COLD_STATE = "cold: fresh empty Theano compile cache"
WARM_STATE = "warm: Theano compile cache filled by the same graph's cold compile, new process"
API = {
    "fastlstm": "theano.scan FastLSTM (one W[in,4h], one U[h,4h], bias; x.W hoisted out of the "
                "scan) with theano.function; input in theano.shared",
    "lstm": "theano.scan LSTM class (8 gate matrices W_x*, W_h*, zero biases, every product inside "
            "the scan step; peephole matrices created, unused) with theano.function; input in "
            "theano.shared",
}


# Theano's own C helpers, compiled into the cache by `import theano` (lazylinker_ext; cutils_ext in
# Theano 0.9) or by the scan-loop probe (scan_perform) before any graph: not modules of the graph
SUPPORT_MODULES = ("lazylinker_ext", "cutils_ext", "scan_perform")


def _compiledir_state(path):
    """How full Theano's compile cache is: compiled graph modules live in one sub-directory each
    (Theano's own helper modules, SUPPORT_MODULES, are listed apart)."""
    if not os.path.isdir(path):
        return {"path": path, "existed": False, "entries": 0, "module_dirs": 0, "support": []}
    entries = [e for e in os.listdir(path) if not e.startswith(".")]
    dirs = [e for e in entries if os.path.isdir(os.path.join(path, e))]
    modules = [e for e in dirs if e not in SUPPORT_MODULES]
    return {"path": path, "existed": True, "entries": len(entries), "module_dirs": len(modules),
            "support": sorted(e for e in dirs if e in SUPPORT_MODULES)}


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


def _flags_with_compiledir(flags, base):
    """THEANO_FLAGS with base_compiledir set to `base` (any earlier setting dropped)."""
    kept = [f for f in (flags or "").split(",") if f and not f.startswith("base_compiledir=")]
    return ",".join(kept + ["base_compiledir=%s" % base])


def _import_theano(base_compiledir):
    """Import theano with `base_compiledir` as its compile cache. Returns theano."""
    if "theano" in sys.modules:
        raise RuntimeError("a controlled compile-cache state needs theano not yet imported in this "
                           "process")
    os.environ["THEANO_FLAGS"] = _flags_with_compiledir(os.environ.get("THEANO_FLAGS"),
                                                        base_compiledir)
    try:
        import theano
    except AttributeError as e:
        if "blas_opt_info" in str(e):
            raise RuntimeError(
                "Theano could not configure BLAS with this numpy (%s). Set THEANO_FLAGS to contain "
                "'blas.ldflags=' (Theano 1.0.x spelling; 'blas__ldflags' is not recognised by "
                "Theano 1.0.5). THEANO_FLAGS was %r" % (e, os.environ.get("THEANO_FLAGS")))
        raise
    return theano


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


def _compiled_scan_calls(fn):
    """Run fn() once, counting calls of Theano's compiled scan loop (scan_perform_ext.perform, which
    Scan's thunk looks up at every call): the evidence of which loop ran. Returns (fn(), calls)."""
    mod = sys.modules.get("theano.scan_module.scan_perform_ext")
    if mod is None or not hasattr(mod, "perform"):
        return fn(), 0
    real, calls = mod.perform, [0]

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)
    mod.perform = counted
    try:
        return fn(), calls[0]
    finally:
        mod.perform = real


def _scan_loop_text(driver, calls):
    """implementation.scan_loop: which scan loop ran, with its evidence."""
    mod = sys.modules.get("theano.scan_module.scan_perform_ext")
    if driver == "cython" and calls > 0:
        return ("compiled: Theano's Cython scan loop (scan_perform_ext.perform, scan_perform "
                "version %s; %d call(s) counted in one untimed forward)"
                % (getattr(mod, "version", "unknown"), calls))
    if driver == "cython":
        return ("python: scan_perform_ext imported, but no call of it was counted in one untimed "
                "forward (Scan.execute ran)")
    return "python: Theano's Scan.execute loop (the compiled scan_perform_ext is not available)"


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


def _build_and_compile(theano, variant, batch, seq, hidden, gpu_device):
    """Data, then (timed like the original script) graph construction, compilation of f_forward and
    f_train and one train call. Shared by the cold measurement (this process) and the warm one (a
    new process, _warm_probe). Returns a dict of the functions, parameters, data and timestamps."""
    import numpy as np
    import theano.tensor as T

    rng = np.random.RandomState(1234)
    x_host = rng.rand(seq, batch, hidden).astype(np.float32)  # time-major, as the original
    y_host = rng.rand(batch, hidden).astype(np.float32)
    x_data = theano.shared(x_host, name="x_data")  # created before the timer (host->device copy
    y_data = theano.shared(y_host, name="y_data")  # on a GPU; the original did the same)

    def glorot(shape_):
        bound = np.sqrt(6.0 / float(np.sum(shape_)))
        return rng.uniform(-bound, bound, size=shape_).astype(np.float32)

    h = hidden
    zeros = T.zeros((batch, hidden), dtype="float32")
    if variant == "lstm":
        names = ["w_xi", "w_hi", "w_ci", "w_xf", "w_hf", "w_cf", "w_xo", "w_ho", "w_co", "w_xc",
                 "w_hc"]
        inits = dict((n, glorot((hidden, hidden))) for n in names)  # input size = hidden size
    else:
        inits = {"W": glorot((hidden, 4 * hidden)), "U": glorot((hidden, 4 * hidden)),
                 "b": glorot((4 * hidden,))}

    # the sync function is chosen before the timer: looking it up imports theano.sandbox.cuda,
    # which on a GPU compiles its CUDA module with nvcc (not part of what the original timed)
    sync, sync_desc = _sync_for(theano, gpu_device)
    t_start = timing.clock()
    # ---- graph construction (inside the compile timer, as in the original) ----
    if variant == "lstm":
        w = dict((n, theano.shared(v, name=n)) for n, v in sorted(inits.items()))
        b = dict((g, theano.shared(np.zeros((hidden,), dtype=np.float32), name="b_" + g))
                 for g in "ifco")
        # the original's parameter list; the peephole matrices w_ci, w_cf, w_co stay out of it
        params = [w["w_xi"], w["w_hi"], w["w_xf"], w["w_hf"], w["w_xo"], w["w_ho"], w["w_xc"],
                  w["w_hc"], b["i"], b["c"], b["o"], b["f"]]

        def step(x_t, c_prev, h_prev):
            def gate(g):
                return T.dot(x_t, w["w_x" + g]) + T.dot(h_prev, w["w_h" + g]) + b[g]
            gate_i = T.nnet.sigmoid(gate("i"))
            gate_f = T.nnet.sigmoid(gate("f"))
            c_new = gate_f * c_prev + gate_i * T.tanh(gate("c"))
            gate_o = T.nnet.sigmoid(gate("o"))
            h_new = gate_o * T.tanh(c_new)
            return c_new, h_new

        (_, hs), _ = theano.scan(step, sequences=x_data, outputs_info=[zeros, zeros])
    else:
        W = theano.shared(inits["W"], name="W")
        U = theano.shared(inits["U"], name="U")
        b = theano.shared(inits["b"], name="b")
        params = [W, U, b]

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
    first_cost = float(f_train())
    if sync is not None:
        sync()
    t_end = timing.clock()
    return {
        "f_forward": f_forward, "f_train": f_train, "params": params, "y_host": y_host,
        "sync": sync, "sync_desc": sync_desc, "first_cost": first_cost,
        "seconds": t_end - t_start, "first_train_call_s": t_end - t_train_compiled,
        "breakdown": {
            "graph_construction": t_graph - t_start,
            "compile_forward_function": t_fwd_compiled - t_graph,
            "compile_train_function": t_train_compiled - t_fwd_compiled,
            "first_train_call": t_end - t_train_compiled,
        },
    }


PROBE_MARK = "REPROKIT-THEANO-COMPILE-PROBE "
_PROCESS_CACHE = []  # the base_compiledir this process imported Theano with (kept to its exit)


def _compile_probe(spec):
    """In a new process: import Theano on spec's base_compiledir, build and compile the graph, time
    it as the original script did, print one marked JSON line."""
    import json
    ftz_text = None
    if spec["ftz"]:
        ftz_text = common.ftz_daz_set(True)[1]
    theano = _import_theano(spec["base_compiledir"])
    cfg = theano.config
    before = _compiledir_state(cfg.compiledir)
    driver = _scan_driver()[0]
    gpu_device = str(cfg.device).startswith(("gpu", "cuda"))
    out = _build_and_compile(theano, spec["variant"], spec["batch"], spec["seq"], spec["hidden"],
                             gpu_device)
    after = _compiledir_state(cfg.compiledir)
    print(PROBE_MARK + json.dumps({
        "seconds": out["seconds"], "breakdown": out["breakdown"], "scan_driver": driver,
        "cache_before": before, "cache_after": after, "verdict": _cache_verdict(before, after),
        "ftz": ftz_text, "first_cost": out["first_cost"]}))
    sys.stdout.flush()


def _run_probe(variant, batch, seq, hidden, base_compiledir, ftz, timeout_s=1800):
    """_compile_probe in a child process (this interpreter, this environment); its record."""
    import json
    import subprocess
    bench = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = {"variant": variant, "batch": batch, "seq": seq, "hidden": hidden,
            "base_compiledir": base_compiledir, "ftz": ftz}
    code = ("import sys, json; sys.path.insert(0, %r); from workloads import s000_theano; "
            "s000_theano._compile_probe(json.loads(sys.argv[1]))" % bench)
    proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError("compile probe did not finish in %d s" % timeout_s)
    text = out.decode("utf-8", "replace")
    for line in text.splitlines():
        if line.startswith(PROBE_MARK):
            return json.loads(line[len(PROBE_MARK):])
    last = [x for x in text.strip().splitlines() if x.strip()][-1:] or ["no output"]
    raise RuntimeError("compile probe failed (exit %s): %s"
                       % (proc.returncode, last[0][:300]))


def run(ctx):
    if ctx.variant not in (None,) + VARIANTS:
        raise ValueError("s000_theano: unknown variant %r (known: %s)" % (ctx.variant,
                                                                         ", ".join(VARIANTS)))
    variant = ctx.variant or "fastlstm"
    batch, seq, hidden = common.shape(ctx)
    ftz = common.flush_denormal_requested(ctx)

    # FTZ/DAZ before numpy/theano start any thread, so BLAS threads created later inherit it.
    numpy_was_imported = "numpy" in sys.modules
    prev_mxcsr, ftz_text = (None, "left at the process default (params.flush_denormal=false)")
    if ftz:
        prev_mxcsr, ftz_text = common.ftz_daz_set(True)
    # a compile cache of this cell's own, empty: the cold compile cannot depend on earlier cells
    cache_root = tempfile.mkdtemp(prefix="reprokit-theano-cache-")
    try:
        cold = _run_probe(variant, batch, seq, hidden, cache_root, ftz)
        warm = _run_probe(variant, batch, seq, hidden, cache_root, ftz)
        if "theano" not in sys.modules:  # this process compiles on the now warm cell cache
            _import_theano(cache_root)
            _PROCESS_CACHE.append(cache_root)
            atexit.register(shutil.rmtree, cache_root, True)
        import theano
        _run(ctx, theano, variant, batch, seq, hidden, ftz, ftz_text, numpy_was_imported,
             cold, warm)
    finally:
        if ftz:
            common.mxcsr_restore(prev_mxcsr)
        if cache_root not in _PROCESS_CACHE:
            shutil.rmtree(cache_root, ignore_errors=True)


def _run(ctx, theano, variant, batch, seq, hidden, ftz, ftz_text, numpy_was_imported, cold, warm):
    import numpy as np

    cfg = theano.config
    gpu_device = str(cfg.device).startswith(("gpu", "cuda"))
    if ctx.device == "gpu" and not gpu_device:
        raise RuntimeError("cell asks for a GPU but theano.config.device is %r" % cfg.device)
    if cfg.floatX != "float32":
        ctx.note("theano.config.floatX is %r; all shared variables here are float32 anyway"
                 % cfg.floatX)
    cache_before = _compiledir_state(cfg.compiledir)
    scan_driver, scan_probe_s, scan_detail = _scan_driver()

    built = _build_and_compile(theano, variant, batch, seq, hidden, gpu_device)
    f_forward, f_train, params = built["f_forward"], built["f_train"], built["params"]
    sync, sync_desc, y_host = built["sync"], built["sync_desc"], built["y_host"]
    first_cost = built["first_cost"]
    cache_after = _compiledir_state(cfg.compiledir)

    boundary = ("as the original Theano script: timer starts before the symbolic graph is built; "
                "covers graph construction, theano.function compilation of the forward and the "
                "train function and one train call; measured in a new Python process")
    ctx.record_single(
        "compile_time", cold["seconds"], "s",
        boundary + ". COLD: this cell's own, empty Theano compile cache (base_compiledir made for "
        "the cell), so C code generation and g++ ran for every module (%s)" % cold["verdict"],
        sync_desc=sync_desc, state=COLD_STATE)
    ctx.record_single(
        "compile_time_warm", warm["seconds"], "s",
        boundary + ". WARM: the same Theano compile cache as the cold compile left it, so Theano "
        "loads compiled modules instead of generating them (%s)" % warm["verdict"],
        sync_desc=sync_desc, state=WARM_STATE)
    for probe, label in ((cold, "cold"), (warm, "warm")):
        if probe["scan_driver"] != scan_driver:
            ctx.note("the %s compile probe ran the %s scan loop, this process the %s one"
                     % (label, probe["scan_driver"], scan_driver))

    ctx.describe(framework="theano", framework_version=theano.__version__, api=API[variant])
    ctx.note(common.WORKLOAD_SUMMARY + "; Theano cost = MEAN of squared errors of the last step "
             "(as the original Theano script; the TF script used a sum).")
    if variant == "lstm":
        ctx.note("network class (defect d000-theano-class): the published Theano row does not say "
                 "which class ran; this cell runs the script's 8-matrix LSTM class, the other "
                 "reading beside the kit's FastLSTM cells (unverified which one produced the row)")
    else:
        ctx.note("network class (defect d000-theano-class): the published Theano row does not say "
                 "which class ran; this cell runs FastLSTM (one W, one U, bias, scan over time); "
                 "the other reading, the 8-matrix LSTM class, is variant 'lstm' (unverified which "
                 "one produced the row).")
    ctx.note("Theano compile cache: compile_time is COLD (a new process on a fresh, empty "
             "base_compiledir made for this cell: %s), compile_time_warm is WARM (a second new "
             "process on the cache the cold compile filled: %s). Neither depends on the cells run "
             "before. The forward/train loops use functions this process compiled once more, "
             "untimed (its compile cache: %s)" % (cold["verdict"], warm["verdict"],
                                                  _cache_verdict(cache_before, cache_after)))
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
    if ftz:
        state = "FTZ+DAZ set through glibc fesetenv before numpy/theano were imported: %s%s" % (
            ftz_text, "" if not numpy_was_imported else
            " (numpy was already imported, so BLAS threads it had started keep their own setting)")
    else:
        state = ftz_text
    ctx.note(common.denormal_note("Theano has no switch for it", state) + " With Theano's MEAN "
             "loss the gradients are batch*hidden times smaller than with TF's sum, so the gates "
             "do not saturate and the effect is not expected here.")

    ctx.extra["compile_breakdown_s"] = cold["breakdown"]
    ctx.extra["compile_warm_breakdown_s"] = warm["breakdown"]
    ctx.extra["theano_compiledir"] = {
        "cold": {k: cold[k] for k in ("cache_before", "cache_after", "verdict")},
        "warm": {k: warm[k] for k in ("cache_before", "cache_after", "verdict")},
        "this_process": {"before": cache_before, "after": cache_after,
                         "verdict": _cache_verdict(cache_before, cache_after),
                         "compile_s": built["seconds"]}}
    ctx.extra["scan_driver"] = {"driver": scan_driver, "probe_s": scan_probe_s,
                                "detail": scan_detail}
    ctx.extra["flush_denormal"] = {"requested": ftz, "how": ftz_text}

    def forward_step():
        return f_forward()

    def train_step():
        return f_train()

    def weights():  # float64 sum of each trained shared variable (get_value: a host copy), by name
        return dict((p.name, float(np.asarray(p.get_value(), dtype=np.float64).sum()))
                    for p in params)

    def digest(out):  # mean |h[-1]| in float64 (f_forward already returned it to the host)
        return float(np.mean(np.abs(np.asarray(out, dtype=np.float64))))

    ctx.measure("forward_time_per_example", forward_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="f_forward(): whole sequence through scan, returns h[-1] (input already "
                       "in a theano.shared, nothing transferred in)",
                real_work=real_work.Check("forward", output=digest,
                                          reference=lambda: digest(f_forward())))
    ctx.measure("train_time_per_example", train_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="f_train(): forward, mean-squared-error cost of the last step, gradients, "
                       "SGD update of %s (all in one theano.function); returns the cost"
                       % ("the 8 gate matrices and 4 biases" if variant == "lstm" else "W, U, b"),
                real_work=real_work.Check("train", state=weights))
    common.record_first_vs_later(ctx, built["first_train_call_s"], batch)
    common.record_both_as_published(ctx, batch)
    last_out, scan_calls = _compiled_scan_calls(f_forward)  # one untimed forward for the record
    last_out = np.asarray(last_out)
    ctx.describe(scan_loop=_scan_loop_text(scan_driver, scan_calls))
    ctx.extra["scan_driver"]["compiled_calls_in_untimed_forward"] = scan_calls
    ctx.extra["numerics"] = {
        "cost_first_train_call": first_cost,
        "cost_after_timed_train": float(np.mean((last_out - y_host) ** 2)),
        "last_output_frac_abs_gt_0.999": float(np.mean(np.abs(last_out) > 0.999)),
        "weights_abs_max_after": {p.name: float(np.abs(p.get_value()).max()) for p in params},
    }
