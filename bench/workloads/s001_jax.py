"""Source 001 (k-kawakami/rnn_benchmark) word-level LSTM language model in JAX (variant "word_lm").

The model and step of s001_pytorch restated in JAX: Embedding(V, 1024) -> one LSTM layer of 1024
(jax.lax.scan, _jax_lstm.lstm_layer) -> softmax projection TIED to the embedding (plus its own
bias); V = 33,279 (33,278 corpus types + one unused id); batch 128 x seq 128; cross-entropy SUMMED
over the 16,384 targets; Adam lr 0.002 (torch.optim.Adam's update); stateful truncated BPTT (the
final state of a batch is the next batch's initial state, outside the gradient). Data: the corpus is
cut into 128 streams, batch b holds chunk b of every stream (as s001_pytorch), all batches on the
device before timing. Initialisation follows PyTorch's defaults (embedding N(0, 1), LSTM and bias
uniform(+-1/sqrt(H))); source 001 published no JAX row.

Timing: one sample = one batch; train and eval steps are jax.jit-compiled ahead of time
(extra.compile_s) and every timed step ends with jax.block_until_ready, so train_wps/eval_wps time
the whole computation. The published protocol read no result inside its timer (on a GPU that times
kernel launches, section 2.2); with JAX's asynchronous dispatch that would time dispatch only on
the CPU too, so the synced loop is the only one run and its samples are recorded under both
train_wps and train_wps_synced (same for eval). Eval is a plain forward + loss (JAX builds no
autograd graph; the original's non-volatile eval did).
Real-work check (bench/real_work.py), on both names of each loop: train, the float64 sum
of squares of the embedding (tied), LSTM and softmax bias must each change over the timed steps;
eval, the last timed batch's summed loss must equal the same batch evaluated again untimed.
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
VARIANTS = ("word_lm",)
ITEMS_UNIT = "words/s"

DEFAULTS = params_.WORD_LM_001


def _params(ctx):
    p = params_.resolve(ctx, "s001_jax", DEFAULTS, VARIANTS)
    if p["dataset"] != "wikitext-2" or int(p["layers"]) != 1 or not p["tied"]:
        raise ValueError("s001_jax runs the published model only: wikitext-2, 1 layer, tied")
    if int(p["emb"]) != int(p["hidden"]):
        raise ValueError("tied weights need emb == hidden, got %r and %r" % (p["emb"], p["hidden"]))
    return p


def _split(p, name):
    extra = {"vocab_size": p["vocab_override"]} if p["vocab_override"] else {}
    if p.get("data_dir") and extra:
        raise ValueError("vocab_override applies to the stand-in only, not to data_dir")
    return corpora.open_corpus(params_.wikitext2_name(p), name, p.get("data_dir"), p["sha256"],
                               **extra)


def _batches(np, jax, tokens, batch, seq):
    """Device arrays x, targets [n_batches, batch, seq]: the corpus cut into `batch` streams, batch
    b holds chunk b of every stream (as s001_pytorch), so row r of batch b continues row r of b-1."""
    per = batch * seq
    nb = (len(tokens) - 1) // per
    if nb < 1:
        raise ValueError("corpus of %d tokens is too small for one %dx%d batch"
                         % (len(tokens), batch, seq))
    flat = np.frombuffer(tokens, dtype=np.int32, count=nb * per + 1)

    def arrange(a):  # [batch, nb, seq] -> [nb, batch, seq]
        return jax.device_put(np.ascontiguousarray(a.reshape(batch, nb, seq).transpose(1, 0, 2)))
    return arrange(flat[:-1]), arrange(flat[1:]), nb


def run(ctx):
    import numpy as np

    p = _params(ctx)
    batch, seq, hidden = int(p["batch"]), int(p["seq_len"]), int(p["hidden"])
    items = batch * seq
    jax, jnp, lax, device = jl.setup(ctx)
    train_c, valid_c = _split(p, "train"), _split(p, "valid")
    vocab = train_c.vocab_size + 1  # the original: len(vocab) + 1, one id never used
    if p["vocab"] is not None and int(p["vocab"]) != vocab:
        raise ValueError("params.vocab=%s but the corpus gives V = %d types + 1 = %d"
                         % (p["vocab"], train_c.vocab_size, vocab))
    with jax.default_device(device):
        _run(ctx, p, np, jax, jnp, lax, train_c, valid_c, vocab, batch, seq, hidden, items)


def _run(ctx, p, np, jax, jnp, lax, train_c, valid_c, vocab, batch, seq, hidden, items):
    train_b = _batches(np, jax, train_c.tokens, batch, seq)
    valid_b = _batches(np, jax, valid_c.tokens, batch, seq)
    rng = np.random.RandomState(int(p["seed"]))
    scale = 1.0 / hidden ** 0.5
    params = jax.device_put({"emb": rng.standard_normal((vocab, hidden)).astype(np.float32),
                             "lstm": jl.lstm_layer_params(rng, hidden, hidden, scale),
                             "dec_b": jl.uniform(rng, (vocab,), scale)})
    opt = jl.adam_init(jax, jnp, params)
    lr = float(p["lr"])

    def loss_fn(params, state, xs_all, ts_all, i):
        x = lax.dynamic_index_in_dim(xs_all, i, keepdims=False)  # batch i: [batch, seq]
        t = lax.dynamic_index_in_dim(ts_all, i, keepdims=False)
        xs = jnp.take(params["emb"], x.T, axis=0)          # [seq, batch, H], time-major
        hs, state = jl.lstm_layer(jnp, lax, params["lstm"], xs, state[0], state[1])
        logits = jnp.dot(hs, params["emb"].T) + params["dec_b"]  # tied projection
        return jnp.sum(jl.xent(jax, jnp, logits, t.T)), state

    def train(params, opt, state, xs_all, ts_all, i):
        (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, state, xs_all,
                                                                         ts_all, i)
        params, opt = jl.adam(jax, jnp, params, grads, opt, lr)
        return params, opt, state, loss

    def evaluate(params, state, xs_all, ts_all, i):
        return loss_fn(params, state, xs_all, ts_all, i)

    zero = (jnp.zeros((batch, hidden), "float32"), jnp.zeros((batch, hidden), "float32"))
    i0 = np.int32(0)
    train_x, train_s = jl.compile_step(jax, train, (params, opt, zero) + train_b[:2] + (i0,),
                                       donate=(0, 1))
    eval_x, eval_s = jl.compile_step(jax, evaluate, (params, zero) + valid_b[:2] + (i0,))
    ctx.extra["compile_s"] = {"train_step": train_s, "eval_step": eval_s,
                              "note": "jax.jit(...).lower(...).compile(), before and outside "
                                      "every timer"}
    model = {"params": params, "opt": opt}

    def stepper(batches, train_mode):
        pos = {"i": 0, "state": zero}

        def step():
            i = pos["i"]
            if i >= batches[2]:  # end of the split: start again from a zero state
                i, pos["state"] = 0, zero
            pos["i"] = i + 1
            xs_all, ts_all = batches[0], batches[1]
            if train_mode:
                model["params"], model["opt"], pos["state"], loss = train_x(
                    model["params"], model["opt"], pos["state"], xs_all, ts_all, np.int32(i))
                jax.block_until_ready((model["params"], model["opt"], loss))
            else:
                loss, pos["state"] = eval_x(model["params"], pos["state"], xs_all, ts_all,
                                            np.int32(i))
                jax.block_until_ready((loss, pos["state"]))
            return loss
        step.pos = pos  # read by the real-work check, outside the timer
        return step

    def digest(tree):
        """Float64 sum of squares of every leaf, on the host (a plain sum would miss updates
        whose entries sum to zero, as a softmax layer's gradient does over the classes)."""
        return float(sum(np.square(np.asarray(leaf, dtype=np.float64)).sum()
                         for leaf in jax.tree_util.tree_leaves(tree)))

    def weights():
        """Digest per part: the embedding (tied: also the softmax weight), the LSTM, the softmax
        bias."""
        w = model["params"]
        return {"embedding": digest(w["emb"]), "lstm": digest(w["lstm"]),
                "softmax_bias": digest(w["dec_b"])}

    def checked_stepper(batches, train_mode):
        """(step, its real-work check, an after-step hook). Train: every part of the weights must
        move over the timed steps. Eval: the last timed batch's summed loss against the same batch
        from the same carried state, evaluated again untimed after the timing; the hook notes,
        outside the timer, which batch and state each step starts from."""
        step = stepper(batches, train_mode)
        if train_mode:
            return step, real_work.Check("train", state=weights), None
        box = {"next": (step.pos["i"], step.pos["state"])}

        def watch():
            box["last_in"] = box["next"]  # what the step just run started from
            box["next"] = (step.pos["i"], step.pos["state"])

        def reference():
            i, state = box["last_in"]
            if i >= batches[2]:  # as the step: the end of the split restarts from a zero state
                i, state = 0, zero
            loss, _ = eval_x(model["params"], state, batches[0], batches[1], np.int32(i))
            return float(loss)
        return step, real_work.Check("forward", output=float, reference=reference), watch

    loss_log = {}

    def measure(kind, batches, train_mode, method):
        name = kind + "_wps"
        budget = ctx.budget(name)
        if ctx.protocol != "published":
            budget.warmup = max(1, budget.warmup)
        losses = []
        step, check, watch = checked_stepper(batches, train_mode)

        def after(loss):
            losses.append(float(loss))
            if watch is not None:
                watch()
        t = timing.sample(step, budget, after=after, before_timed=check.before)
        loss_log[kind] = [v / items for v in losses[len(t["warmup_seconds"]):]]
        for metric in (name, name + "_synced"):
            ctx.record_timed(metric, t, ITEMS_UNIT, "items_per_s", items, method,
                             jl.SYNC_DESC + "; %s and %s are the same timed iterations"
                             % (name, name + "_synced"))
        ctx.check_real_work([name, name + "_synced"], check, t)  # one loop, both names

    measure("train", train_b, True,
            "one batch of %dx%d target tokens: embedding, lax.scan LSTM, tied softmax "
            "projection, summed cross-entropy, jax.value_and_grad, Adam step, all in one jitted "
            "step; LSTM state carried from the previous batch; batch i sliced inside the step "
            "from the split already on the device; loss read to the host after the timer "
            "stops" % (batch, seq))
    measure("eval", valid_b, False,
            "one validation batch of %dx%d target tokens: jitted forward and summed "
            "cross-entropy, state carried; loss read to the host after the timer stops"
            % (batch, seq))

    jl.describe(ctx, jax, "jnp.take embedding + jax.lax.scan LSTM + tied jnp.dot projection; "
                          "Adam written as a pytree map; jax.jit ahead of time")
    if train_c.stand_in:
        ctx.substitute("WikiText-2 v1 wiki.train.tokens / wiki.valid.tokens as read by "
                       "k-kawakami (blank lines emit nothing)",
                       "deterministic stand-in token ids %s/train and /valid (bench/corpora.py %s)"
                       % (train_c.name, corpora.GENERATOR),
                       "no params.data_dir given; speed depends on shapes and token counts only")
    ctx.note("Timing differs from the published protocol on purpose: every timed step is "
             "synchronised (block_until_ready); train_wps/*_synced are the same samples.")
    ctx.note("Eval is a forward pass without any gradient bookkeeping (the original built the "
             "autograd graph in eval); the published dropout 0.5 has no effect on one layer and "
             "is omitted, as in s001_pytorch.")
    ctx.extra["dataset"] = {"train": train_c.label(), "valid": valid_c.label()}
    ctx.extra["loss_per_token"] = loss_log
    ctx.extra["model"] = {"vocab_model": vocab, "corpus_types": train_c.vocab_size,
                          "hidden": hidden, "layers": 1, "tied": True,
                          "parameters": jl.n_params(jax, model["params"]),
                          "batches_per_epoch": {"train": train_b[2], "valid": valid_b[2]}}
