"""Source 000 (rnn-benchmarks) single-layer LSTM regression in JAX (variant "scan").

Workload (seed_workloads.md section 1, as s000_pytorch): time-major input [seq, batch, hidden] of
uniform random float32 already on the device, one LSTM layer with input size = hidden size (one
input kernel, one recurrent kernel, one bias, all uniform(+-1/sqrt(hidden)) like nn.LSTM's default),
zero initial state; target a uniform random [batch, hidden] matrix compared with the last step's
output; SUM of squared errors (as the TF script); plain SGD, lr 0.01. Source 000 published no JAX
row: this cell is a same-workload comparison point on a current stack.

Implementation: jax.lax.scan over time (_jax_lstm.lstm_layer: the input projection of all steps as
one product, one recurrent product per step), forward and train step each jax.jit-compiled ahead of
time. compile_time = parameter initialisation + XLA compilation of the train step + one train step
(the closest analogue of the other frameworks' boundary); the forward step's compilation is in
extra.compile_breakdown_s and outside every timer. Per-example values = seconds per batch / batch;
every timed step ends with jax.block_until_ready.

Subnormal floats (see _lstm000.py): with params.flush_denormal (default true) FTZ+DAZ are set on
the calling thread through glibc before JAX starts its threads (they inherit it), as s000_theano
does; XLA's own CPU threads may flush regardless (not checked in its source). Recorded either way.

Python 3.5 syntax; imports jax, numpy and the standard library.
"""
import real_work
import timing

try:  # imported as workloads.s000_jax by the harness, or directly in tests
    from workloads import _jax_lstm as jl
    from workloads import _lstm000 as common
except ImportError:  # pragma: no cover
    import _jax_lstm as jl
    import _lstm000 as common

FRAMEWORK = "jax"
VARIANTS = ("scan",)
LEARNING_RATE = 0.01


def run(ctx):
    if ctx.variant not in (None,) + VARIANTS:
        raise ValueError("s000_jax: unknown variant %r (known: %s)"
                         % (ctx.variant, ", ".join(VARIANTS)))
    batch, seq, hidden = common.shape(ctx)
    ftz = common.flush_denormal_requested(ctx)
    prev, ftz_text = None, "left at the process default (params.flush_denormal=false)"
    if ftz:  # before JAX creates its thread pools, so they inherit it
        prev, ftz_text = common.ftz_daz_set(True)
    try:
        _run(ctx, batch, seq, hidden, ftz, ftz_text)
    finally:
        if ftz:
            common.mxcsr_restore(prev)


def _xla_cache(jax):
    """Which XLA compilation cache the compile started from: JAX's persistent cache is off unless
    jax_compilation_cache_dir is set (then its contents are whatever earlier processes left)."""
    try:
        path = jax.config.jax_compilation_cache_dir
    except AttributeError:
        path = None
    if not path:
        return "no persistent compile cache (JAX's XLA compilation cache off)"
    return "JAX persistent compilation cache at %s, contents not controlled" % path


def _run(ctx, batch, seq, hidden, ftz, ftz_text):
    jax, jnp, lax, device = jl.setup(ctx)
    with jax.default_device(device):
        import numpy as np
        rng = np.random.RandomState(1234)
        x = jax.device_put(rng.rand(seq, batch, hidden).astype(np.float32))
        y = jax.device_put(rng.rand(batch, hidden).astype(np.float32))
        jax.block_until_ready((x, y))
        zeros = jnp.zeros((batch, hidden), "float32")

        def last_output(params, xs):
            hs, _ = jl.lstm_layer(jnp, lax, params, xs, zeros, zeros)
            return hs[-1]

        def loss_fn(params, xs, ys):
            return jnp.sum((last_output(params, xs) - ys) ** 2)

        def train(params, xs, ys):
            loss, grads = jax.value_and_grad(loss_fn)(params, xs, ys)
            return jl.sgd(jax, params, grads, LEARNING_RATE), loss

        t0 = timing.clock()
        params = jax.device_put(jl.lstm_layer_params(rng, hidden, hidden, 1.0 / hidden ** 0.5))
        jax.block_until_ready(params)
        t_init = timing.clock()
        train_c, _ = jl.compile_step(jax, train, (params, x, y), donate=(0,))
        t_compiled = timing.clock()
        state = {"params": params}

        def train_step():
            state["params"], loss = train_c(state["params"], x, y)
            jax.block_until_ready((state["params"], loss))
            return loss

        first_loss = float(train_step())
        t_end = timing.clock()
        forward_c, forward_compile_s = jl.compile_step(jax, last_output, (state["params"], x))

        def forward_step():
            out = forward_c(state["params"], x)
            jax.block_until_ready(out)
            return out

        ctx.record_single("compile_time", t_end - t0, "s",
                          "parameter initialisation, XLA compilation of the jitted train step "
                          "(jit.lower.compile) and one train step (device init and the forward "
                          "step's compilation excluded)", sync_desc=jl.SYNC_DESC,
                          state=common.compile_state(ctx, _xla_cache(jax)))
        ctx.extra["compile_breakdown_s"] = {"init_params": t_init - t0,
                                            "compile_train": t_compiled - t_init,
                                            "first_train_step": t_end - t_compiled,
                                            "compile_forward_excluded": forward_compile_s}
        jl.describe(ctx, jax, "jax.lax.scan LSTM (input projection hoisted out of the scan), "
                              "jax.value_and_grad, SGD as a pytree map; jax.jit ahead of time")
        ctx.note(common.WORKLOAD_SUMMARY + "; cost = SUM of squared errors of the last step (as "
                 "the original TF script); weights uniform(+-1/sqrt(hidden)), one bias vector "
                 "(nn.LSTM has two); data and weights from numpy RandomState(1234).")
        ctx.note(common.denormal_note("JAX", ftz_text))
        ctx.extra["flush_denormal"] = {"requested": ftz, "how": "_lstm000.ftz_daz_set on the "
                                       "calling thread before JAX started its threads"}

        def weights():  # read after the steps (donated buffers: always the current params)
            return dict((name, float(np.asarray(leaf, dtype=np.float64).sum()))
                        for name, leaf in sorted(state["params"].items()))

        def digest(out):  # mean |h[-1]| in float64, outside the timer
            return float(np.abs(np.asarray(out, dtype=np.float64)).mean())

        ctx.measure("forward_time_per_example", forward_step, unit="ms", kind="ms_per_item",
                    items=batch, sync_desc=jl.SYNC_DESC,
                    method="one jitted forward pass over the whole sequence (lax.scan), last "
                           "step returned; input already on the device",
                    real_work=real_work.Check("forward", output=digest,
                                              reference=lambda: digest(forward_step())))
        ctx.measure("train_time_per_example", train_step, unit="ms", kind="ms_per_item",
                    items=batch, sync_desc=jl.SYNC_DESC,
                    method="one jitted step: forward, sum-of-squares loss on the last step, "
                           "jax.value_and_grad, SGD update (parameters donated)",
                    real_work=real_work.Check("train", state=weights))
        common.record_first_vs_later(ctx, t_end - t_compiled, batch)
        common.record_both_as_published(ctx, batch)
        last = forward_step()
        ctx.extra["numerics"] = {
            "loss_first_train_step": first_loss,
            "loss_after_timed_train": float(jnp.sum((last - y) ** 2)),
            "last_output_frac_abs_gt_0.999": float(jnp.mean(jnp.abs(last) > 0.999)),
        }
