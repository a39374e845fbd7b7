"""GPU capability probe, JAX (stack jax-modern; suite gpu-smoke). See _probe.py for the checks.

GEMM: jax.numpy.dot under jax.jit (XLA's GEMM: cuBLAS/cuBLASLt on a GPU). LSTM step: the step
written in jax.numpy (x.W + h.U + b, sigmoid, tanh) under jax.jit, as the kit's JAX LSTM
(_jax_lstm.py) runs it; JAX has no cuDNN LSTM, so XLA's GEMM and fused elementwise kernels are the
stack's own path. One bias vector. Inputs are placed on the first device of the kind the cell
asks for; np.asarray of a result waits for it and copies it to the host.

The GPU path ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run),
suite gpu-smoke, stack jax-modern through JAX 0.11.2. On the CPU it runs with the installed JAX
(tests/plan/test_probes.py).

Python 3.5 syntax; imports only jax, numpy and the standard library.
"""
try:  # imported as workloads.probe_jax by the harness, or directly in tests
    from workloads import _probe as common
except ImportError:  # pragma: no cover
    import _probe as common

FRAMEWORK = "jax"


def run(ctx):
    p = common.settings(ctx)
    ptx_note = common.force_ptx_jit(ctx)  # before jax is imported
    import jax
    import jax.numpy as jnp
    import numpy as np

    gpu = ctx.device == "gpu"
    kind = "gpu" if gpu else "cpu"
    try:
        devices = jax.devices(kind)
    except RuntimeError as e:  # no backend of that kind
        raise common.ProbeFailure("the cell asks for a %s but JAX has none: %s" % (kind.upper(), e))
    dev = devices[0]
    a_np, b_np = common.gemm_inputs(np, p)
    x_np, h0_np, c0_np, w = common.lstm_inputs(np, p)
    hidden = p["hidden"]
    W = np.full((p["input"], 4 * hidden), w, dtype=np.float32)
    U = np.full((hidden, 4 * hidden), w, dtype=np.float32)
    bias = np.full((4 * hidden,), w, dtype=np.float32)
    a, b, x, h0, c0, W, U, bias = (jax.device_put(v, dev) for v in (a_np, b_np, x_np, h0_np, c0_np,
                                                                      W, U, bias))

    def step(x, h, c, W, U, bias):
        act = jnp.dot(x, W) + jnp.dot(h, U) + bias
        gate_i = jax.nn.sigmoid(act[:, 0:hidden])
        gate_f = jax.nn.sigmoid(act[:, hidden:2 * hidden])
        gate_o = jax.nn.sigmoid(act[:, 2 * hidden:3 * hidden])
        cand = jnp.tanh(act[:, 3 * hidden:4 * hidden])
        c_new = gate_f * c + gate_i * cand
        return gate_o * jnp.tanh(c_new), c_new

    f_gemm = jax.jit(jnp.dot)
    f_step = jax.jit(step)

    def gemm():
        return np.asarray(f_gemm(a, b))

    def lstm_step():
        h1, c1 = f_step(x, h0, c0, W, U, bias)
        return np.asarray(h1), np.asarray(c1)

    def loss(x, h, c, W, U, bias):
        return jnp.sum(step(x, h, c, W, U, bias)[0])

    f_grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3, 4, 5)))

    def lstm_grad():
        dx, dh, dc, dW, dU, db = f_grad(x, h0, c0, W, U, bias)
        total = sum(float(np.asarray(g, dtype=np.float64).sum()) for g in (dW, dU, db))
        return {"x": np.asarray(dx), "h0": np.asarray(dh), "c0": np.asarray(dc), "params": total}

    common.run_probe(ctx, np, p, "jax", jax.__version__, gemm, lstm_step,
                     "jax.jit(jax.numpy.dot) on %s" % dev,
                     "a jax.numpy LSTM step under jax.jit on %s" % dev,
                     ptx_note, ctx.device, n_bias=1, lstm_grad=lstm_grad)
