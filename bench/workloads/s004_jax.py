"""Source 004 (YJ Choe, TFCudnnLSTM): the TensorFlow PTB tutorial's "large" word LM in JAX.

The model and training step of s004_tensorflow (seed_workloads.md 5.1, ptb_word_lm.py LargeConfig)
restated in JAX (variant "scan"): embedding 1500 -> dropout keep 0.35 -> 2 LSTM layers of 1500 as
jax.lax.scan (_jax_lstm.lstm_layer, forget_bias 0, zero cell bias), dropout on every layer's output
(as BasicLSTMCell + DropoutWrapper) -> untied softmax over 10,000 words; every other variable
uniform(+-0.04); loss = sum over the 35 steps of the batch-mean cross-entropy; gradients clipped to
global norm 10; plain SGD, lr 1.0; the final LSTM state of a step is the next step's initial state.
Input: the [20, N/20] id matrix of ptb_producer on the device, window i sliced inside the step
(index advanced on the host, wrapping at the epoch end). Source 004 published no JAX row.

Timing: one sample = one jitted train step (slice, forward with dropout, loss, gradients, clip,
update), the loss read to the host and every output ready (jax.block_until_ready) inside the timer;
train_wps = 20 * 35 / seconds, time_per_batch in ms. XLA compilation is in extra.compile_s, outside
every timer. Real-work check (bench/real_work.py) on both metrics: the float64 sum of
squares of the embedding, LSTM and softmax parameters must each change over the timed steps.
Python 3.5 syntax; imports jax, numpy and the standard library.
"""
import corpora
import real_work
import timing

try:
    from workloads import _jax_lstm as jl
    from workloads import _params as params_
except ImportError:  # pragma: no cover
    import _jax_lstm as jl
    import _params as params_

FRAMEWORK = "jax"
VARIANTS = ("scan",)

DEFAULTS = params_.PTB_LARGE_004  # gpus: one GPU at most (no multi-GPU path here)


def _params(ctx):
    p = params_.resolve(ctx, "s004_jax", DEFAULTS, VARIANTS)
    if p["dataset"] != "ptb":
        raise ValueError("s004_jax runs dataset 'ptb' only, got %r" % (p["dataset"],))
    if int(p["gpus"]) > 1:
        raise ValueError("s004_jax has no multi-GPU path (params.gpus=%s)" % p["gpus"])
    return p


def _corpus(p):
    vocab = int(p["vocab"])
    extra = {}
    if not p.get("data_dir"):
        if vocab != corpora.STAND_INS["ptb"]["vocab_size"]:
            extra["vocab_size"] = vocab
        if p["n_tokens"]:
            extra["n_tokens"] = int(p["n_tokens"])
    elif p["n_tokens"]:
        raise ValueError("n_tokens overrides the stand-in only, not data_dir")
    c = corpora.open_corpus("ptb", "train", p.get("data_dir"), p["sha256"], **extra)
    if c.vocab_size > vocab:
        raise ValueError("corpus has %d types, more than params.vocab=%d" % (c.vocab_size, vocab))
    return c


def run(ctx):
    import numpy as np

    p = _params(ctx)
    batch, steps = int(p["batch"]), int(p["seq_len"])
    hidden, layers, vocab = int(p["hidden"]), int(p["layers"]), int(p["vocab"])
    keep, scale = float(p["keep_prob"]), float(p["init_scale"])
    corpus = _corpus(p)
    batch_len = len(corpus.tokens) // batch
    epoch_size = (batch_len - 1) // steps
    if epoch_size < 1:
        raise ValueError("corpus of %d tokens gives no %dx%d batch"
                         % (len(corpus.tokens), batch, steps))
    jax, jnp, lax, device = jl.setup(ctx)
    rng = np.random.RandomState(int(p["seed"]))
    ids = np.frombuffer(corpus.tokens, dtype=np.int32, count=batch * batch_len)
    with jax.default_device(device):
        data = jax.device_put(ids.reshape(batch, batch_len))  # ptb_producer's layout
        params = jax.device_put({
            "emb": jl.uniform(rng, (vocab, hidden), scale),
            "cells": [jl.lstm_layer_params(rng, hidden, hidden, scale, zero_bias=True)
                      for _ in range(layers)],
            "softmax_w": jl.uniform(rng, (hidden, vocab), scale),
            "softmax_b": jl.uniform(rng, (vocab,), scale)})
        zero = [(jnp.zeros((batch, hidden), "float32"), jnp.zeros((batch, hidden), "float32"))
                for _ in range(layers)]

        def dropout(key, x):
            if keep >= 1.0:
                return x
            return jnp.where(jax.random.bernoulli(key, keep, x.shape), x / keep, 0.0)

        def loss_fn(params, state, data, i, key):
            keys = jax.random.split(key, layers + 1)
            x = lax.dynamic_slice(data, (0, i * steps), (batch, steps))
            y = lax.dynamic_slice(data, (0, i * steps + 1), (batch, steps))
            h = dropout(keys[0], jnp.take(params["emb"], x.T, axis=0))  # [steps, batch, H]
            final = []
            for k, cell in enumerate(params["cells"]):
                h, (h_last, c_last) = jl.lstm_layer(jnp, lax, cell, h, state[k][0], state[k][1])
                final.append((h_last, c_last))
                h = dropout(keys[k + 1], h)
            logits = jnp.dot(h, params["softmax_w"]) + params["softmax_b"]
            cost = jnp.sum(jl.xent(jax, jnp, logits, y.T)) / batch  # sum over steps of means
            return cost, final

        def train(params, state, data, i, key):
            key, sub = jax.random.split(key)
            (cost, final), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                params, state, data, i, sub)
            grads, norm = jl.clip_by_global_norm(jax, jnp, grads, float(p["max_grad_norm"]))
            return jl.sgd(jax, params, grads, float(p["lr"])), final, cost, key

        key = jax.random.PRNGKey(int(p["seed"]))
        train_c, compile_s = jl.compile_step(jax, train, (params, zero, data, np.int32(0), key),
                                             donate=(0,))
        model = {"params": params, "state": zero, "key": key, "i": 0}
        losses = []

        def step():
            i = model["i"]
            model["params"], model["state"], cost, model["key"] = train_c(
                model["params"], model["state"], data, np.int32(i), model["key"])
            jax.block_until_ready((model["params"], model["state"], cost))
            model["i"] = (i + 1) % epoch_size
            losses.append(float(cost))

        def digest(tree):
            """Float64 sum of squares of every leaf, on the host: a plain sum would not move the
            softmax under SGD (its gradient sums to zero over the classes)."""
            return float(sum(np.square(np.asarray(leaf, dtype=np.float64)).sum()
                             for leaf in jax.tree_util.tree_leaves(tree)))

        def weights():
            w = model["params"]
            return {"embedding": digest(w["emb"]), "lstm": digest(w["cells"]),
                    "softmax": digest([w["softmax_w"], w["softmax_b"]])}

        # every part of the weights must move over the timed steps (digests after the warm-up)
        check = real_work.Check("train", state=weights)
        t = timing.sample(step, ctx.budget("train_wps"), before_timed=check.before)
    losses = losses[len(t["warmup_seconds"]):]
    words = batch * steps
    method = ("one jitted training step: slice the [%d, %d] input and target windows on the "
              "device, embedding, dropout keep %s, %d x %d lax.scan LSTM, softmax over %d, summed "
              "sequence loss, gradients, clip to global norm %s, SGD update; final LSTM state "
              "kept on the device for the next step; cost read to the host"
              % (batch, steps, keep, layers, hidden, vocab, p["max_grad_norm"]))
    ctx.record_timed("train_wps", t, "words/s", "items_per_s", words, method, jl.SYNC_DESC)
    ctx.record_timed("time_per_batch", t, "ms", "ms", 1, method, jl.SYNC_DESC)
    ctx.check_real_work(["train_wps", "time_per_batch"], check, t)  # the same samples
    raw, warm = t["raw_seconds"], t["warmup_seconds"]
    ctx.extra["cumulative_wps"] = {
        "timed_steps": words * len(raw) / sum(raw),
        "from_epoch_start": words * (len(raw) + len(warm)) / (sum(raw) + sum(warm)),
        "method": "as s004_tensorflow: the tutorial's cumulative average over the timed steps, "
                  "and with the warm-up step(s) included",
    }
    ctx.extra["compile_s"] = {"train_step": compile_s,
                              "note": "jax.jit(...).lower(...).compile(), outside every timer"}
    ctx.extra["loss"] = losses
    ctx.extra["dataset"] = corpus.label()
    ctx.extra["model"] = {"parameters": jl.n_params(jax, model["params"]),
                          "epoch_size": epoch_size}
    jl.describe(ctx, jax, "jax.jit train step: jnp.take embedding, jax.lax.scan LSTM layers, "
                          "dropout via jax.random.bernoulli, clip by global norm and SGD as "
                          "pytree maps")
    ctx.substitute("TensorFlow 1.8 graph with BasicLSTMCell / LSTMBlockCell / CudnnLSTM",
                   "the same model and step in JAX %s (lax.scan LSTM, dropout on each layer's "
                   "output as BasicLSTMCell + DropoutWrapper)" % jax.__version__,
                   "modern control arm: the workload on a current framework")
    if corpus.stand_in:
        ctx.substitute("PTB ptb.train.txt (929,589 words)",
                       "deterministic stand-in token ids (bench/corpora.py %s)" % corpora.GENERATOR,
                       "no params.data_dir given; speed depends on shapes only")
    ctx.note("Samples are single steps after %d untimed warm-up step(s); the LSTM state stays on "
             "the device between steps (the tutorial fetched it to the host and fed it back)."
             % len(warm))
