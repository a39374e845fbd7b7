"""Shared helpers for the source-000 (rnn-benchmarks) LSTM workloads.

Standard library only, Python 3.5 syntax (2.7-compatible). Imported by s000_theano, s000_tensorflow
and s000_pytorch; never imports a framework.

The numerical finding these helpers exist for (measured here on x86-64; see each workload's notes):
with the original loss (TensorFlow's SUM of squared errors) and SGD lr 0.01, the first update moves
the LSTM weights from |w| <= 0.044 to |w| ~ 1 and most gate pre-activations to |x| > 20. The
sigmoid/tanh gates saturate and the backward pass then multiplies by derivatives like e^-|x|, so
about 1 % of the gradient entries are subnormal floats. x86 CPUs handle subnormal operands through a
slow microcode path, which makes a CPU train step ~10x slower than before the first update. GPUs
process subnormals at full speed, so the published M40 numbers never had this cost. Setting the
CPU's flush-to-zero (FTZ) and denormals-are-zero (DAZ) bits removes it. TensorFlow sets both on its
own thread-pool threads by default; PyTorch offers torch.set_flush_denormal; Theano offers nothing,
so ftz_daz_set() below sets the bits through glibc's fesetenv.
"""
import ctypes
import ctypes.util
import platform
import struct

# x86-64 MXCSR bits
MXCSR_DAZ = 0x0040
MXCSR_FTZ = 0x8000
MXCSR_DEFAULT_MASKS = 0x1F80  # all exceptions masked: what every sane process runs with
_FENV_SIZE = 32               # sizeof(fenv_t) on x86-64 glibc
_MXCSR_OFFSET = 28            # offsetof(fenv_t, __mxcsr) on x86-64 glibc

WORKLOAD_SUMMARY = (
    "source 000 workload: time-major input [seq, batch, hidden] of uniform random float32, one LSTM "
    "layer (input size = hidden size, no peepholes), target a uniform random [batch, hidden] matrix "
    "compared with the last time step's output, plain SGD lr 0.01")


def shape(ctx):
    """(batch, seq_len, hidden) from the cell params; only one layer exists in source 000."""
    p = ctx.params
    layers = int(p.get("layers", 1))
    if layers != 1:
        raise ValueError("source 000 is a single-layer LSTM; params.layers=%r" % layers)
    batch, seq, hidden = int(p["batch"]), int(p["seq_len"]), int(p["hidden"])
    if min(batch, seq, hidden) < 1:
        raise ValueError("batch, seq_len and hidden must be positive: %r" % ((batch, seq, hidden),))
    return batch, seq, hidden


def flush_denormal_requested(ctx):
    """Cell param `flush_denormal` (default True): run with FTZ/DAZ where the framework allows."""
    value = ctx.params.get("flush_denormal", True)
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "off")
    return bool(value)


def denormal_note(framework, state):
    """One note for the result: what was done about subnormal floats, and why."""
    return ("subnormal floats (%s): %s. Why it matters: with the TF script's SUM-of-squares loss "
            "and lr 0.01 the first SGD update saturates the LSTM gates and ~1-2%% of the "
            "backward-pass values become subnormal; without flush-to-zero that made a CPU train "
            "step 5-12x slower on the kit's x86 machine (microcode assists), a cost the original "
            "GPU runs never had. The loss and lr themselves are kept as published." % (
                framework, state))


def compile_state(ctx, cache):
    """The `state` label of a compile metric measured in a fresh process whose framework keeps no
    compile cache across processes here (`cache` says which cache is absent or off). On a GPU the
    CUDA driver's JIT cache can still hold PTX compiled by earlier cells; the stack fingerprint
    records its state (cuda_cache.cold)."""
    text = "fresh process, %s" % cache
    if ctx.device == "gpu":
        text += "; CUDA JIT cache as in stack_fingerprint.cuda_cache"
    return text


def record_first_vs_later(ctx, first_step_seconds, batch):
    """extra["train_first_vs_later"]: the train step inside compile_time (initial weights, plus
    one-time setup) against the median timed train step (weights after >= 1 update). A large
    ratio with flush-to-zero off is the subnormal slowdown described above."""
    samples = sorted(ctx.metrics.get("train_time_per_example", {}).get("samples", []))
    first = 1000.0 * first_step_seconds / batch
    later = samples[len(samples) // 2] if samples else None
    ctx.extra["train_first_vs_later"] = {
        "first_step_ms_per_example": first,
        "later_median_ms_per_example": later,
        "later_over_first": (later / first) if later and first > 0 else None,
    }


PUBLISHED_ITERATIONS = 1000  # n_batch in the original scripts (seed_workloads.md 1.2)


def record_as_published(ctx, name, batch):
    """The source's own figure beside the per-iteration samples: the original timed n_batch = 1000
    iterations right after the compile step (no other warm-up) with one clock and printed elapsed /
    (1000 x batch), i.e. the MEAN over the iterations, not a median. Computed from every iteration
    this cell ran after its compile step (warm-up included, as the original had none), each
    iteration's own seconds summed (the sampler's bookkeeping between iterations left out); fewer
    than 1000 iterations give a labelled partial estimate."""
    m = ctx.metrics[name]
    warm = list(m.get("warmup_seconds", []))
    planned = (ctx.params.get("published_iterations") or {}).get(name, PUBLISHED_ITERATIONS)
    ctx.record_as_published(
        name, "mean_over_iterations",
        "mean over the %d iterations timed right after compile: elapsed seconds / (%d x %d "
        "examples), in ms per example (rnn.py's s/sample x 1000)" % (planned, planned, batch),
        "time_per_item",
        [{"seconds": warm + list(m["raw_seconds"]), "warmup": len(warm), "other_seconds": 0.0,
          "items_per_iteration": batch}], planned_iterations=planned, scale=1000.0)


def record_both_as_published(ctx, batch):
    """record_as_published for the forward and the train metric."""
    for name in ("forward_time_per_example", "train_time_per_example"):
        record_as_published(ctx, name, batch)


# -- FTZ/DAZ for the calling thread through glibc (used where the framework has no switch) --------

def _libm():
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    name = ctypes.util.find_library("m") or "libm.so.6"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(lib, "fegetenv") or not hasattr(lib, "fesetenv"):
        return None
    return lib


def mxcsr_get():
    """The calling thread's MXCSR register, or None where it cannot be read this way."""
    lib = _libm()
    if lib is None:
        return None
    buf = ctypes.create_string_buffer(_FENV_SIZE)
    if lib.fegetenv(buf) != 0:
        return None
    value = struct.unpack_from("<I", buf.raw, _MXCSR_OFFSET)[0]
    if value & MXCSR_DEFAULT_MASKS != MXCSR_DEFAULT_MASKS:
        return None  # layout not as expected: refuse rather than write garbage
    return value


def mxcsr_set(value):
    """Write MXCSR of the calling thread (glibc fesetenv copies fenv_t.__mxcsr into the register).
    Returns the value read back, or None when not possible."""
    lib = _libm()
    if lib is None or mxcsr_get() is None:
        return None
    buf = ctypes.create_string_buffer(_FENV_SIZE)
    if lib.fegetenv(buf) != 0:
        return None
    raw = bytearray(buf.raw)
    struct.pack_into("<I", raw, _MXCSR_OFFSET, int(value) & 0xFFFF)
    new = ctypes.create_string_buffer(bytes(raw), _FENV_SIZE)
    if lib.fesetenv(new) != 0:
        return None
    return mxcsr_get()


def ftz_daz_set(enable):
    """Set or clear FTZ and DAZ for the calling thread. Threads created afterwards by this thread
    inherit the setting (Linux pthread_create copies the floating-point environment); threads that
    already exist keep theirs. Returns (previous MXCSR or None, text describing what happened)."""
    before = mxcsr_get()
    if before is None:
        return None, "not available (needs x86-64 Linux with glibc fegetenv/fesetenv)"
    bits = MXCSR_FTZ | MXCSR_DAZ
    after = mxcsr_set(before | bits if enable else before & ~bits)
    if after is None or bool(after & bits == bits) != bool(enable):
        return before, "could not change MXCSR (read back %r)" % (after,)
    # a functional check: with DAZ a subnormal double operand reads as zero
    tiny = struct.unpack("<d", struct.pack("<Q", 1))[0]  # 4.9e-324, the smallest subnormal
    flushed = (tiny * 1.0) == 0.0
    if bool(flushed) != bool(enable):
        return before, "MXCSR written (0x%04x) but arithmetic did not follow" % after
    return before, "MXCSR 0x%04x -> 0x%04x (FTZ+DAZ %s) on the calling thread" % (
        before, after, "on" if enable else "off")


def mxcsr_restore(previous):
    if previous is not None:
        mxcsr_set(previous)


def pick_preallocated(per_input_bytes, original_count=100, cap_bytes=256 * 1024 * 1024):
    """How many random inputs to pre-generate. The TF script kept 100; at seq 100 x hidden 1024
    that is 5.2 GB, so keep at most cap_bytes (at least 2, so the random choice still varies)."""
    fit = int(cap_bytes // max(1, int(per_input_bytes)))
    return max(2, min(int(original_count), fit))
