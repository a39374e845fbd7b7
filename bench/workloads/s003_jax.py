"""Source 003 (lcy-seso/Carrot stacked LSTM LM on PTB) in JAX: the model of s003_pytorch, jitted.

Model (seed_workloads.md 4.1): Embedding(10001, 128) -> 3 stacked LSTM layers of 256 -> Linear(256,
10001); zero initial state every batch; mean cross-entropy; Adam lr 1e-3; [128, 50] batches of
overlapping stride-3 PTB windows, unshuffled (bench/workloads/_lm003.py, shared with the PyTorch and
TensorFlow workloads). Initialisation as PyTorch's defaults. Source 003 published no JAX row.

Variants (params.phase is forward | train), each a jax.jit-compiled step, layers depth-outer (each
layer's jax.lax.scan runs over the whole sequence before the next layer):
  jit_scan                one [in, 4H] input product for all steps before the scan and one
                          [H, 4H] recurrent product per step (_jax_lstm.lstm_layer): the layout of
                          the cuDNN / static variants.
  jit_scan_fine_grained   the fine-grained cell of s003_pytorch inside the scan: separate W and U
                          per gate, 8 products per step.

Timing as _lm003.sample: warm-up batches, then the timed batches from batch 1 again. A batch is
sliced inside the jitted step from the windows already on the device (index passed in). Forward =
the jitted model returning the logits; train = one jitted step (forward, loss, gradients, Adam) and
the loss formatted with '%.4f' as the original's debug message. Every step ends with
jax.block_until_ready (JAX dispatches asynchronously). XLA compilation happens before the warm-up
and is recorded in extra.compile_s.
Python 3.5 syntax; imports jax, numpy and the standard library.
"""
import real_work

from workloads import _jax_lstm as jl
from workloads import _lm003

FRAMEWORK = "jax"
VARIANTS = ("jit_scan", "jit_scan_fine_grained")
API = {
    "jit_scan": "jax.jit of Embedding + 3 x jax.lax.scan LSTM (input projection hoisted, one "
                "recurrent product per step) + Linear",
    "jit_scan_fine_grained": "jax.jit of Embedding + 3 x jax.lax.scan over a fine-grained cell "
                             "(8 products per step) + Linear",
}


def _init(np, variant, seed, vocab, emb, hidden, layers):
    """Host arrays, initialised as PyTorch's defaults (embedding N(0, 1), the rest uniform)."""
    rng = np.random.RandomState(seed)
    k = 1.0 / hidden ** 0.5
    cells = []
    for n in [emb] + [hidden] * (layers - 1):
        if variant == "jit_scan":
            cells.append(jl.lstm_layer_params(rng, n, hidden, k))
        else:
            cells.append({"w": [jl.uniform(rng, (n, hidden), k) for _ in range(4)],
                          "u": [jl.uniform(rng, (hidden, hidden), k) for _ in range(4)],
                          "b": [jl.uniform(rng, (hidden,), k) for _ in range(4)]})
    return {"emb": rng.standard_normal((vocab, emb)).astype(np.float32), "cells": cells,
            "head_w": jl.uniform(rng, (hidden, vocab), k), "head_b": jl.uniform(rng, (vocab,), k)}


def _fine_grained_layer(jax, jnp, lax, cell, xs, hidden):
    w, u, b = cell["w"], cell["u"], cell["b"]
    zeros = jnp.zeros((xs.shape[1], hidden), "float32")

    def step(carry, x):
        h, c = carry
        i = jax.nn.sigmoid(jnp.dot(x, w[0]) + jnp.dot(h, u[0]) + b[0])
        f = jax.nn.sigmoid(jnp.dot(x, w[1]) + jnp.dot(h, u[1]) + b[1])
        g = jnp.tanh(jnp.dot(x, w[2]) + jnp.dot(h, u[2]) + b[2])
        o = jax.nn.sigmoid(jnp.dot(x, w[3]) + jnp.dot(h, u[3]) + b[3])
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return (h, c), h

    _, hs = lax.scan(step, (zeros, zeros), xs)
    return hs


def run(ctx):
    import numpy as np

    p = _lm003.params(ctx, "s003_jax")
    variant, phase, batch, seq = ctx.variant, p["phase"], p["batch"], p["seq_len"]
    if variant not in VARIANTS:
        raise ValueError("unknown variant %r for s003_jax (known: %s)"
                         % (variant, ", ".join(VARIANTS)))
    jax, jnp, lax, device = jl.setup(ctx)
    hidden = p["hidden"]
    xs, ys, nb = _lm003.prepare(ctx, p)
    with jax.default_device(device):
        x_all = jax.device_put(np.frombuffer(xs, dtype=np.int32).reshape(nb, batch, seq))
        y_all = jax.device_put(np.frombuffer(ys, dtype=np.int32).reshape(nb, batch, seq))
        params = jax.device_put(_init(np, variant, p["seed"], p["vocab"], p["emb"], hidden,
                                      p["layers"]))
        opt = jl.adam_init(jax, jnp, params)

        def logits_fn(params, x_all, i):
            x = lax.dynamic_index_in_dim(x_all, i, keepdims=False)      # [batch, seq]
            h = jnp.take(params["emb"], x.T, axis=0)                     # [seq, batch, emb]
            zeros = jnp.zeros((batch, hidden), "float32")
            for cell in params["cells"]:
                if variant == "jit_scan":
                    h, _ = jl.lstm_layer(jnp, lax, cell, h, zeros, zeros)
                else:
                    h = _fine_grained_layer(jax, jnp, lax, cell, h, hidden)
            return jnp.dot(h, params["head_w"]) + params["head_b"]      # [seq, batch, vocab]

        def loss_fn(params, x_all, y_all, i):
            y = lax.dynamic_index_in_dim(y_all, i, keepdims=False)
            return jnp.mean(jl.xent(jax, jnp, logits_fn(params, x_all, i), y.T))

        def train(params, opt, x_all, y_all, i):
            loss, grads = jax.value_and_grad(loss_fn)(params, x_all, y_all, i)
            params, opt = jl.adam(jax, jnp, params, grads, opt, 1e-3)
            return params, opt, loss

        i0 = np.int32(0)
        if phase == "forward":
            step_c, compile_s = jl.compile_step(jax, logits_fn, (params, x_all, i0))
        else:
            step_c, compile_s = jl.compile_step(jax, train, (params, opt, x_all, y_all, i0),
                                                donate=(0, 1))
        ctx.extra["compile_s"] = {"step": compile_s, "note": "jax.jit(...).lower(...).compile() "
                                  "before the warm-up, outside every timer"}
        feed = _lm003.Feed(lambda: range(nb))
        model = {"params": params, "opt": opt}
        counter = [0]
        last = [None]  # (batch index, logits) of the latest forward step, replaced by the next

        def forward_step():
            i = np.int32(feed.next())
            last[0] = (i, step_c(model["params"], x_all, i))
            jax.block_until_ready(last[0][1])
            return last[0]

        def train_step():
            model["params"], model["opt"], loss = step_c(model["params"], model["opt"], x_all,
                                                         y_all, np.int32(feed.next()))
            jax.block_until_ready((model["params"], model["opt"], loss))
            counter[0] += 1
            return "batch %d, loss_value = %.4f" % (counter[0], float(loss))

        if phase == "forward":
            check = real_work.Check("forward", output=lambda got: _mean_abs(np, got[1]),
                                    reference=lambda: _mean_abs(np, step_c(
                                        model["params"], x_all, last[0][0])))
        else:
            check = real_work.Check("train", state=lambda: _part_sums(jax, np, model["params"]))
        t = _lm003.sample(ctx, forward_step if phase == "forward" else train_step,
                          before_timed=feed.restart, real_work=check)

    jl.describe(ctx, jax, API[variant])
    if feed.wraps:
        ctx.note("the data ran out %d time(s) and iteration restarted at batch 1" % feed.wraps)
    ctx.extra["iteration"] = ("warm-up batches 1..%d, then iteration restarts: timed batches "
                              "1..n" % ctx.budget("time_per_batch").warmup)
    ctx.extra["model"] = {"parameters": jl.n_params(jax, model["params"]), "variant": variant}
    if phase == "forward":
        ctx.note("forward: a pure function of the parameters, no gradient bookkeeping (the "
                 "published PyTorch forward built the autograd graph)")
        ctx.note("each forward batch's logits are kept until the next batch's replace them (the "
                 "original's `output = model(x)`), for the real-work check against an untimed rerun")
        method = ("one batch: slice of the device windows, jitted model (embedding, 3 scanned "
                  "LSTM layers, Linear) returning the logits; no loss, no gradients")
    else:
        method = ("one batch: one jitted step (slice, forward, mean cross_entropy, "
                  "jax.value_and_grad, Adam(lr=1e-3)), then '%.4f' formatting of the loss as the "
                  "original's debug message")
    _lm003.record(ctx, t, batch, method, jl.SYNC_DESC, real_work=check)


def _part_sums(jax, np, params):
    """The real-work check's digest of the trainable weights: a float64 sum per part of the model."""
    parts = {"embedding": params["emb"], "rnn": params["cells"],
             "head": [params["head_w"], params["head_b"]]}
    return dict((k, sum(float(np.asarray(a, dtype=np.float64).sum())
                        for a in jax.tree_util.tree_leaves(v))) for k, v in parts.items())


def _mean_abs(np, logits):
    """The real-work check's digest of a forward output: the float64 mean of |logits|."""
    return float(np.abs(np.asarray(logits)).mean(dtype=np.float64))
