"""Source 004, PyTorch comparison row: pytorch/examples word_language_model with 2 x 1500 LSTM.

YJ Choe reported "~100 ms per batch" for PyTorch's word_language_model example (0.4 era) with 2
layers, 1500 hidden units, batch 20, 35 steps and a "35k vocab" data set that is not named
(seed_workloads.md 5.2, 5.3 item 1). This cell runs the example's model and training step on
WikiText-2 (vocabulary 33,278), the example's default data set: the nearest sourced "35k"
vocabulary, not a known fact about the published run.

Model (the example's RNNModel, untied): Embedding(V, 1500) -> Dropout -> nn.LSTM(1500, 1500,
2 layers, dropout between layers) -> Dropout -> Linear(1500, V); embedding and decoder weights
uniform(-0.1, 0.1), decoder bias 0. Step: detach the carried hidden state, zero_grad, forward,
mean cross-entropy over the 35 x 20 targets, backward, clip_grad_norm(0.25), p -= lr * grad
(lr 20), loss read to the host (loss.item(), a device sync every batch as in the example).
Dropout 0.65 comes from the example README's 1500-unit command; YJ's flags are unpublished.

Timing: one sample = one training batch; time_per_batch in ms. The example printed
elapsed * 1000 / 200 over each 200 batches (a mean over a window); that mean over the timed
batches is in extra. THE GPU PATH HAS NEVER RUN ON A GPU.
Real-work check (bench/real_work.py): the float64 sum of squares of the embedding, the
LSTM and the decoder must each change over the timed batches.
Python 3.5 syntax; imports torch, numpy (if present) and the standard library.
"""
import corpora
import real_work
import timing

try:
    from workloads import _params as params_
except ImportError:  # pragma: no cover
    import _params as params_

FRAMEWORK = "torch"

GIVEN = params_.GIVEN  # the suite gives it: its one copy
DEFAULTS = {
    "dataset": GIVEN,
    "batch": GIVEN,
    "seq_len": GIVEN,
    "hidden": GIVEN,
    "emb": None,               # None: = hidden (the 1500-unit command sets --emsize 1500)
    "layers": GIVEN,
    "vocab": GIVEN,            # expected corpus vocabulary; checked
    "dropout": GIVEN,
    "lr": 20.0,
    "clip": 0.25,
    "tied": False,
    "seed": 1111,              # the example's default --seed
    "data_dir": None,          # WikiText-2 wiki.*.tokens; None: deterministic stand-in
    "sha256": None,
    "n_tokens": None,          # stand-in length (tests)
    "published_iterations": None,
}


def _params(ctx):
    p = params_.resolve(ctx, "s004_pytorch", DEFAULTS)
    if p["dataset"] != "wikitext-2":
        raise ValueError("s004_pytorch runs dataset 'wikitext-2' (the example's default) only, "
                         "got %r" % (p["dataset"],))
    return p


def _corpus(p):
    vocab = int(p["vocab"])
    if p["data_dir"]:
        if p["n_tokens"]:
            raise ValueError("n_tokens overrides the stand-in only, not data_dir")
        c = corpora.load_wikitext2(p["data_dir"], "standard", p["sha256"])["train"]
    else:
        args = {}
        if vocab != corpora.STAND_INS["wikitext-2"]["vocab_size"]:
            args["vocab_size"] = vocab
        if p["n_tokens"]:
            args["n_tokens"] = int(p["n_tokens"])
        c = corpora.stand_in("wikitext-2", "train", **args)
    if c.vocab_size != vocab:
        raise ValueError("params.vocab=%d but the corpus has %d types" % (vocab, c.vocab_size))
    return c


def _long_tensor(torch, tokens):
    try:
        import numpy
    except ImportError:
        return torch.LongTensor(list(tokens))
    return torch.from_numpy(numpy.frombuffer(tokens, dtype=numpy.int32).astype(numpy.int64))


LOG_INTERVAL = 200  # the example's --log-interval default


def record_as_published(ctx, t):
    """The example's figure beside the per-batch samples: train() prints elapsed * 1000 /
    log_interval, elapsed being the wall time since the epoch start (then since the last print),
    when batch % 200 == 0 and batch > 0 (pytorch/examples word_language_model/main.py, read at
    0f4dca7): the first print covers batches 0..200, 201 batches divided by 200. Recorded for that
    first window, this cell's warm-up batches being its first batches; fewer batches give a
    labelled partial estimate."""
    seconds = list(t["warmup_seconds"]) + list(t["raw_seconds"])
    gap = max(0.0, t["wall_seconds"] - sum(seconds)) / len(seconds)
    n = LOG_INTERVAL + 1
    upto = seconds[:n]
    ctx.record_as_published(
        "time_per_batch", "log_window_ms_per_batch",
        "the example's printed ms/batch of its first log window: wall seconds from the epoch start "
        "to the end of batch %d (%d batches) x 1000 / %d" % (LOG_INTERVAL, n, LOG_INTERVAL),
        "time_per_item", [{"seconds": upto, "warmup": len(t["warmup_seconds"]),
                           "other_seconds": gap * len(upto),
                           "items_per_iteration": float(LOG_INTERVAL) / n}],
        planned_iterations=n, scale=1000.0)


def run(ctx):
    import torch
    nn = torch.nn

    p = _params(ctx)
    batch, bptt = int(p["batch"]), int(p["seq_len"])
    hidden, layers = int(p["hidden"]), int(p["layers"])
    emb = int(p["emb"] or hidden)
    gpu = ctx.device == "gpu"
    if gpu and not torch.cuda.is_available():
        raise RuntimeError("cell asks for a GPU but torch.cuda.is_available() is False")
    torch.manual_seed(int(p["seed"]))
    dev = torch.device("cuda" if gpu else "cpu")

    corpus = _corpus(p)
    vocab = corpus.vocab_size
    flat = _long_tensor(torch, corpus.tokens)
    nbatch = flat.size(0) // batch  # batchify: [n, batch], column b = the b-th stretch of text
    source = flat.narrow(0, 0, nbatch * batch).view(batch, -1).t().contiguous().to(dev)
    if source.size(0) < bptt + 2:
        raise ValueError("corpus of %d tokens gives no %dx%d batch" % (flat.size(0), bptt, batch))

    class RNNModel(nn.Module):
        def __init__(self):
            super(RNNModel, self).__init__()
            self.drop = nn.Dropout(float(p["dropout"]))
            self.encoder = nn.Embedding(vocab, emb)
            self.rnn = nn.LSTM(emb, hidden, layers, dropout=float(p["dropout"]))
            self.decoder = nn.Linear(hidden, vocab)
            if p["tied"]:
                self.decoder.weight = self.encoder.weight
            self.encoder.weight.data.uniform_(-0.1, 0.1)
            self.decoder.bias.data.zero_()
            self.decoder.weight.data.uniform_(-0.1, 0.1)

        def forward(self, x, state):
            out, state = self.rnn(self.drop(self.encoder(x)), state)
            return self.decoder(self.drop(out)).view(-1, vocab), state

    model = RNNModel().to(dev)
    model.train()
    criterion = nn.CrossEntropyLoss()
    lr, clip = float(p["lr"]), float(p["clip"])
    params = list(model.parameters())
    pos = {"i": 0, "state": None}
    losses = []

    def zero_state():
        return tuple(torch.zeros(layers, batch, hidden, device=dev) for _ in range(2))

    def train_step():
        i = pos["i"]
        if i + 1 + bptt > source.size(0):  # end of the epoch: start again
            i, pos["state"] = 0, None
        pos["i"] = i + bptt
        x, y = source[i:i + bptt], source[i + 1:i + 1 + bptt].reshape(-1)
        state = zero_state() if pos["state"] is None else tuple(
            s.detach() for s in pos["state"])
        model.zero_grad()
        out, pos["state"] = model(x, state)
        loss = criterion(out, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        with torch.no_grad():
            for q in params:
                q.add_(q.grad, alpha=-lr)
        losses.append(loss.item())  # host read: the example's per-batch sync

    def digest(tensors):
        """Float64 sum of squares: under plain SGD a plain sum of the decoder would not move (the
        softmax gradient sums to zero over the classes)."""
        return sum(float(q.detach().double().pow(2).sum()) for q in tensors)

    def weights():
        """Digest per part: the embedding, the LSTM, the decoder (tied: its bias only)."""
        head = [model.decoder.bias] if p["tied"] else [model.decoder.weight, model.decoder.bias]
        return {"embedding": digest([model.encoder.weight]), "lstm": digest(model.rnn.parameters()),
                "decoder": digest(head)}

    # every part of the weights must move over the timed batches (digests taken after the warm-up)
    check = real_work.Check("train", state=weights)
    budget = ctx.budget("time_per_batch")
    t = timing.sample(train_step, budget, before_timed=check.before)
    losses = losses[len(t["warmup_seconds"]):]
    sync = ("implicit: loss.item() reads the loss to the host every batch (as the example)"
            if gpu else "n/a: CPU execution is synchronous")
    ctx.record_timed("time_per_batch", t, "ms", "ms", 1,
                     "one training batch of %d x %d tokens: detach the carried state, zero_grad, "
                     "embedding + dropout %s, %d-layer nn.LSTM(%d), dropout, Linear(%d -> %d), "
                     "mean cross-entropy, backward, clip_grad_norm(%s), SGD update p -= %s * "
                     "grad, loss.item(); data already on the device"
                     % (bptt, batch, p["dropout"], layers, hidden, hidden, vocab, clip, lr), sync)
    raw = t["raw_seconds"]
    record_as_published(ctx, t)
    ctx.check_real_work(["time_per_batch"], check, t)
    ctx.describe(framework="torch", framework_version=torch.__version__,
                 api="pytorch/examples word_language_model RNNModel('LSTM') restated: "
                     "nn.Embedding + nn.LSTM (cuDNN on GPU) + nn.Linear; manual SGD")
    ctx.substitute("PyTorch 0.4 (pytorch/examples word_language_model, 2018)",
                   "installed PyTorch %s, the same model and step" % torch.__version__,
                   "PyTorch 0.4 has no wheel for Python 3.11; clip_grad_norm_ and "
                   "add_(grad, alpha=-lr) are today's spellings of the same operations")
    ctx.substitute("an unstated '35k vocab' data set",
                   "WikiText-2 (vocabulary 33,278), the example's default data set%s"
                   % ("" if not corpus.stand_in else ", as the deterministic stand-in "
                      "(bench/corpora.py %s)" % corpora.GENERATOR),
                   "the published data set is not named; WikiText-2's 33,278 types are the "
                   "nearest sourced ~35k vocabulary (seed_workloads.md 5.2)")
    ctx.note("Dropout %s and emsize = nhid = %d follow the example README's 1500-unit command; "
             "YJ's exact flags are unpublished (unverified)." % (p["dropout"], hidden))
    ctx.extra["window_mean_ms"] = {
        "timed_batches": 1000.0 * sum(raw) / len(raw),
        "method": "the example's figure: elapsed * 1000 / log_interval over a window of 200 "
                  "batches; here the mean over the timed batches",
    }
    ctx.extra["loss"] = losses
    ctx.extra["dataset"] = corpus.label()
    ctx.extra["model"] = {"vocab": vocab, "emb": emb, "hidden": hidden, "layers": layers,
                          "batches_per_epoch": (source.size(0) - 1 + bptt - 1) // bptt,
                          "parameters": sum(int(q.numel()) for q in params)}
