"""Shared pieces of the JAX workloads (s000_jax ... s004_jax): device set-up, the LSTM layer as a
jax.lax.scan, optimisers, losses, compilation and timing conventions.

Conventions every JAX workload follows:
  * Steps are jax.jit functions compiled ahead of time (jit(...).lower(args).compile()), so XLA
    compilation is measured on its own (extra.compile_s, and source 000's compile_time) and never
    falls inside a timed sample.
  * JAX dispatches asynchronously, on the CPU too: a call returns before the work is done. Every
    timed step therefore ends with jax.block_until_ready on the step's outputs, inside the timer.
  * Parameters and optimiser state are donated to the train step (updated in place where XLA can).

Python 3.5 syntax (2.7-compatible where cheap); imports jax only inside functions, never at module
import. The GPU paths (device "gpu") ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26,
docs/gpu-run) through s000_jax and s001_jax (JAX 0.11.2, fp32 and framework-defaults twins); those
of s002_jax, s003_jax and s004_jax have never run on a GPU.
"""
SYNC_DESC = ("jax.block_until_ready on the step's outputs inside the timer: JAX dispatches "
             "asynchronously (also on the CPU), so without it the timer would see only the "
             "dispatch")


def setup(ctx):
    """Import JAX for the cell's device. Returns (jax, jnp, lax, device)."""
    import jax

    if ctx.device != "gpu":
        # before any computation: keep a GPU build of jaxlib off the GPU for CPU cells
        try:
            jax.config.update("jax_platforms", "cpu")
        except Exception:  # already initialised: the device check below still holds
            pass
    import jax.numpy as jnp
    from jax import lax

    kind = "gpu" if ctx.device == "gpu" else "cpu"
    try:
        devices = jax.devices(kind)
    except RuntimeError:
        devices = []
    if not devices:
        raise RuntimeError("cell asks for a %s but JAX sees none (backend %s)"
                           % (kind.upper(), jax.default_backend()))
    return jax, jnp, lax, devices[0]


def describe(ctx, jax, api):
    import jaxlib
    ctx.describe(framework="jax", framework_version=jax.__version__,
                 jaxlib_version=getattr(jaxlib, "__version__", "?"),
                 backend=jax.default_backend(), api=api)
    ctx.note("Source published no JAX row: this JAX cell is a same-workload comparison point "
             "(modern control arm), written for this kit.")


def uniform(rng, shape, scale):
    """Host float32 array uniform in [-scale, scale) from a numpy RandomState (initialisation on
    the host: no XLA compilation per parameter shape)."""
    return rng.uniform(-scale, scale, size=shape).astype("float32")


def lstm_layer_params(rng, n_in, hidden, scale, zero_bias=False):
    """One LSTM layer as host arrays: input kernel [n_in, 4H], recurrent kernel [H, 4H], bias
    [4H]; gate order i, f, g (candidate), o. Put on the device with jax.device_put."""
    wx = uniform(rng, (n_in, 4 * hidden), scale)
    wh = uniform(rng, (hidden, 4 * hidden), scale)
    b = uniform(rng, (4 * hidden,), scale)
    return {"wx": wx, "wh": wh, "b": b * 0 if zero_bias else b}


def lstm_layer(jnp, lax, layer, xs, h0, c0, forget_bias=0.0):
    """Run one layer over time-major xs [T, B, in] with jax.lax.scan. The input projection of all
    steps is one product before the scan (as cuDNN and Theano's FastLSTM do); the scan carries
    (h, c) and does one [B, H] x [H, 4H] product per step. Returns (hs [T, B, H], (h, c))."""
    import jax
    gx = jnp.einsum("tbi,ig->tbg", xs, layer["wx"]) + layer["b"]
    wh = layer["wh"]

    def step(carry, g_t):
        h, c = carry
        z = g_t + jnp.dot(h, wh)
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f + forget_bias) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    (h, c), hs = lax.scan(step, (h0, c0), gx)
    return hs, (h, c)


# -- losses -------------------------------------------------------------------------------------

def xent(jax, jnp, logits, targets):
    """Per-token cross-entropy of integer targets, same leading shape as targets."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None].astype("int32"), axis=-1)[..., 0]


# -- optimisers (pytrees in, pytrees out) -----------------------------------------------------------

def sgd(jax, params, grads, lr):
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def adam_init(jax, jnp, params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": jax.tree_util.tree_map(jnp.zeros_like, params),
            "t": jnp.zeros((), "float32")}


def adam(jax, jnp, params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.Adam's update (bias-corrected, eps outside the root, no weight decay)."""
    t = state["t"] + 1.0
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1.0 - b1) * g, state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1.0 - b2) * g * g, state["v"], grads)
    c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
    new = jax.tree_util.tree_map(
        lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
    return new, {"m": m, "v": v, "t": t}


def clip_by_global_norm(jax, jnp, grads, max_norm):
    """tf.clip_by_global_norm: scale every gradient by max_norm / max(global_norm, max_norm)."""
    leaves = jax.tree_util.tree_leaves(grads)
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in leaves))
    scale = max_norm / jnp.maximum(norm, max_norm)
    return jax.tree_util.tree_map(lambda g: g * scale, grads), norm


def n_params(jax, tree):
    return int(sum(int(x.size) for x in jax.tree_util.tree_leaves(tree)))


# -- compilation and timing ---------------------------------------------------------------------

def compile_step(jax, fn, args, donate=()):
    """jax.jit(fn) lowered and compiled for these arguments. Returns (compiled, seconds)."""
    import timing
    t0 = timing.clock()
    compiled = jax.jit(fn, donate_argnums=tuple(donate)).lower(*args).compile()
    return compiled, timing.clock() - t0

