"""Source 001 (k-kawakami/rnn_benchmark): PyTorch word-level LSTM language model on WikiText-2.

Workload (seed_workloads.md section 2.1, code at 52623e4 that produced the published numbers):
Embedding(V, 1024) -> nn.LSTM(1024, 1024, 1 layer, batch_first) -> Linear(1024, V) with the
embedding and softmax weights TIED (the published "-tied 0" parses to True). V = 33,279: 33,278
train types plus one unused id. Batch 128 x seq 128; CrossEntropyLoss summed over the 16,384
targets; Adam lr 0.002; no clipping; stateful truncated BPTT (state carried across batches and
detached). Data sits on the device as [n_samples, 128] input/target tensors; a batch is a row slice.

Timing: the original timed forward + loss (+ zero_grad, backward, Adam step) per batch with no
device synchronisation inside the timer, and read the loss to the host after the timer stopped.
On a GPU that times kernel launches, not execution (section 2.2). So:
  * GPU: the as-published loop (train_wps, eval_wps) is timed faithfully, and a second loop with
    torch.cuda.synchronize() inside the timer gives train_wps_synced / eval_wps_synced.
    The GPU paths ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run),
    through torch 2.11 only: cells 001/pytorch/word_lm/b128-s128-h1024 (stack torch-0.1) and
    modern/001/pytorch/word_lm/b128-s32-h1024 with its framework-defaults twin, all four metrics.
  * CPU: execution is synchronous, so one loop is timed and recorded under both names.
wps per sample = batch * seq_len target tokens / seconds of that one batch.

Written for current PyTorch and, where cheap, for the 0.1.12 API of the original (Variable, 2-D
Linear input, size_average): the 0.1.12 path has not been run.
Real-work check (bench/real_work.py), per loop of samples, on the metrics it gave: train,
the float64 sum of squares of the embedding (tied softmax weight), LSTM and softmax bias must each
change over the timed batches; eval, the last timed batch's summed loss must equal the same batch
run again untimed, from the same carried state, after the timing.
Python 3.5 syntax; imports only torch (numpy if present) and the standard library.
"""
import corpora
import real_work
import timing

try:
    from workloads import _params as params_
    from workloads import _versions
except ImportError:  # pragma: no cover
    import _params as params_
    import _versions

FRAMEWORK = "torch"

DEFAULTS = params_.WORD_LM_001

ITEMS_UNIT = "words/s"


def _params(ctx):
    p = params_.resolve(ctx, "s001_pytorch", DEFAULTS)
    if p["dataset"] != "wikitext-2":
        raise ValueError("s001_pytorch runs dataset 'wikitext-2' only, got %r" % (p["dataset"],))
    if int(p["layers"]) != 1:
        raise ValueError("the published run has 1 LSTM layer, got layers=%r" % (p["layers"],))
    if p["tied"] and int(p["emb"]) != int(p["hidden"]):
        raise ValueError("tied weights need emb == hidden, got %r and %r" % (p["emb"], p["hidden"]))
    return p


def _corpora(p):
    name = params_.wikitext2_name(p)
    if p["data_dir"]:
        if p["vocab_override"]:
            raise ValueError("vocab_override applies to the stand-in only, not to data_dir")
        splits = corpora.load_wikitext2(p["data_dir"], p["reading"], p["sha256"])
        return splits["train"], splits["valid"]
    v = p["vocab_override"]
    return (corpora.stand_in(name, "train", vocab_size=v),
            corpora.stand_in(name, "valid", vocab_size=v))


def _long_tensor(torch, tokens, n):
    try:
        import numpy
    except ImportError:
        return torch.LongTensor(tokens[:n].tolist())
    return torch.from_numpy(numpy.frombuffer(tokens, dtype=numpy.int32, count=n)
                            .astype(numpy.int64))


def _layout(torch, tokens, batch, seq):
    """[n_batches * batch, seq] inputs and targets: the corpus is cut into `batch` streams and
    batch b holds chunk b of every stream, so row r of batch b continues row r of batch b - 1
    (what stateful truncated BPTT needs)."""
    per = batch * seq
    nb = (len(tokens) - 1) // per
    if nb < 1:
        raise ValueError("corpus of %d tokens is too small for one %dx%d batch"
                         % (len(tokens), batch, seq))
    flat = _long_tensor(torch, tokens, nb * per + 1)

    def arrange(t):
        return t.contiguous().view(batch, nb, seq).transpose(0, 1).contiguous().view(nb * batch,
                                                                                     seq)
    return arrange(flat.narrow(0, 0, nb * per)), arrange(flat.narrow(0, 1, nb * per)), nb


def _loss_value(loss):
    if hasattr(loss, "item"):  # PyTorch >= 0.4
        return float(loss.item())
    return float(loss.data[0])  # PyTorch 0.1.12 (never run here)


def _timed_loop(budget, step, warmup, sync=None, check=None, watch=None):
    """timing.sample with the loss read to the host after the timer stops (the original's
    loss.cpu() outside its timer). `check` (a real_work.Check) takes its weights digest after the
    warm-up; `watch(loss)` (optional) runs after each step, outside the timer, after the loss read.
    Returns (timing dict, losses of the timed iterations)."""
    losses = []

    def after(loss):
        losses.append(_loss_value(loss))
        if watch is not None:
            watch(loss)
    budget.warmup = warmup
    t = timing.sample(step, budget, sync=sync, after=after,
                      before_timed=check.before if check is not None else None)
    del losses[:len(t["warmup_seconds"])]
    return t, losses


def record_as_published(ctx, name, t, n_batches, batch, seq, epochs):
    """The source's figure beside the per-batch samples: per epoch, the epoch's target tokens / the
    sum of its batches' timed seconds (every batch timed, no warm-up: this cell's warm-up batches are
    the epoch's first batches), then the mean of the 10 per-epoch figures, train epochs (train_wps)
    or validation passes (eval_wps, printed under 'test wps'). Fewer batches or epochs give a labelled
    partial estimate."""
    warm = list(t["warmup_seconds"])
    ctx.record_as_published(
        name, "tokens_over_epoch_seconds_mean",
        "per epoch: %d x %d target tokens per batch x %d batches / the epoch's summed per-batch "
        "timed seconds; then the mean of the %d per-epoch figures%s"
        % (batch, seq, n_batches, epochs,
           " (the validation passes, printed under 'test wps')" if name.startswith("eval") else ""),
        "rate", timing.split_segments(warm + list(t["raw_seconds"]), n_batches, len(warm),
                                      batch * seq),
        planned_iterations=n_batches, planned_segments=epochs)


def run(ctx):
    import torch
    from torch.autograd import Variable  # a no-op wrapper in PyTorch >= 0.4

    p = _params(ctx)
    batch, seq = int(p["batch"]), int(p["seq_len"])
    emb, hidden = int(p["emb"]), int(p["hidden"])
    items = batch * seq
    gpu = ctx.device == "gpu"
    if gpu and not torch.cuda.is_available():
        raise RuntimeError("cell asks for a GPU but torch.cuda.is_available() is False")
    torch.manual_seed(int(p["seed"]))
    if gpu:  # ran on one NVIDIA H100 (torch 2.11, docs/gpu-run)
        torch.backends.cudnn.benchmark = True
        torch.cuda.manual_seed(int(p["seed"]))

    train_c, valid_c = _corpora(p)
    vocab = train_c.vocab_size + 1  # the original: len(vocab) + 1, one id never used
    if p["vocab"] is not None and int(p["vocab"]) != vocab:
        raise ValueError("params.vocab=%s but the corpus gives V = %d types + 1 = %d"
                         % (p["vocab"], train_c.vocab_size, vocab))
    train_x, train_t, nb_train = _layout(torch, train_c.tokens, batch, seq)
    valid_x, valid_t, nb_valid = _layout(torch, valid_c.tokens, batch, seq)
    if gpu:  # preloaded once, as the original: no per-step host-to-device copy
        train_x, train_t = train_x.cuda(), train_t.cuda()
        valid_x, valid_t = valid_x.cuda(), valid_t.cuda()

    nn = torch.nn

    class WordLM(nn.Module):
        def __init__(self):
            super(WordLM, self).__init__()
            self.encoder = nn.Embedding(vocab, emb)
            # the published dropout=0.5 is left out: no effect on a 1-layer nn.LSTM (section 2.1)
            self.rnn = nn.LSTM(emb, hidden, 1, bias=True, batch_first=True)
            self.decoder = nn.Linear(hidden, vocab)
            if p["tied"]:
                self.decoder.weight = self.encoder.weight

        def forward(self, x, state):
            out, state = self.rnn(self.encoder(x), state)
            # 2-D input to Linear, which PyTorch 0.1.12 requires
            return self.decoder(out.contiguous().view(-1, hidden)), state

    model = WordLM()
    if gpu:
        model = model.cuda()
    if _versions.at_least(torch, 0, 4, 1):  # `reduction` from PyTorch 0.4.1 on
        criterion = nn.CrossEntropyLoss(reduction="sum")
        ctx.substitute("nn.CrossEntropyLoss(size_average=False)",
                       "nn.CrossEntropyLoss(reduction='sum')",
                       "same summed loss; current PyTorch spells it with `reduction`")
    else:  # PyTorch 0.1.12, as published (never run here)
        criterion = nn.CrossEntropyLoss(size_average=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(p["lr"]))

    def zero_state():
        z = [torch.zeros(1, batch, hidden) for _ in range(2)]
        if gpu:
            z = [t.cuda() for t in z]
        return tuple(Variable(t) for t in z)

    def stepper(inputs, targets, n_batches, train):
        pos = {"i": 0, "state": zero_state()}

        def step():
            i = pos["i"]
            if i >= n_batches:  # end of the split (an epoch): start again from a zero state
                i, pos["state"] = 0, zero_state()
            pos["i"] = i + 1
            x = Variable(inputs.narrow(0, i * batch, batch))
            t = Variable(targets.narrow(0, i * batch, batch))
            logits, state = model(x, pos["state"])
            # truncated BPTT: the next batch starts from this state, detached from its graph
            pos["state"] = tuple(Variable(s.data) for s in state)
            loss = criterion(logits, t.contiguous().view(-1))
            if train:
                model.zero_grad()
                loss.backward()
                optimizer.step()
            return loss
        step.pos = pos  # read by the real-work check, outside the timer
        return step

    def digest(params):
        """Float64 sum of squares of the weights (a plain sum would miss updates whose entries
        sum to zero, as a softmax layer's gradient does over the classes)."""
        total = 0.0
        for q in params:
            w = q.data.double()
            total += float((w * w).sum())
        return total

    def weights():
        """Digest per part of the model: the embedding matrix (with tied weights also the softmax
        projection), the LSTM, and the softmax's own parameters (its bias; untied also its weight)."""
        head = [model.decoder.bias] if p["tied"] else [model.decoder.weight, model.decoder.bias]
        return {"embedding": digest([model.encoder.weight]), "lstm": digest(model.rnn.parameters()),
                "softmax": digest(head)}

    def checked_stepper(inputs, targets, n_batches, train):
        """(step, its real-work check, the after-step hook the check needs). Train: every part of
        the weights must move over the timed batches. Eval: the last timed batch's summed loss
        against the same batch from the same carried state, run again untimed after the timing;
        the hook notes outside the timer which batch and state each step starts from."""
        step = stepper(inputs, targets, n_batches, train)
        if train:
            return step, real_work.Check("train", state=weights), None
        box = {"next": (step.pos["i"], step.pos["state"])}

        def watch(_):
            box["last_in"] = box["next"]  # what the step just run started from
            box["next"] = (step.pos["i"], step.pos["state"])

        def reference():
            i, state = box["last_in"]
            if i >= n_batches:  # as the step: the end of the split restarts from a zero state
                i, state = 0, zero_state()
            logits, _ = model(Variable(inputs.narrow(0, i * batch, batch)), state)
            t = Variable(targets.narrow(0, i * batch, batch))
            return _loss_value(criterion(logits, t.contiguous().view(-1)))
        return step, real_work.Check("forward", output=_loss_value, reference=reference), watch

    def sync_gpu():  # ran on one NVIDIA H100 (torch 2.11, docs/gpu-run)
        torch.cuda.synchronize()

    ctx.describe(framework="torch", framework_version=torch.__version__,
                 api="torch.nn.Embedding + torch.nn.LSTM (cuDNN on GPU, native kernels on CPU) "
                     "+ torch.nn.Linear tied to the embedding; torch.optim.Adam")
    train_method = (
        "one batch of %dx%d target tokens: embedding, LSTM, tied softmax projection, summed "
        "cross-entropy, zero_grad, backward, Adam step; LSTM state carried from the previous "
        "batch and detached; batch = row slice of tensors already on the device; loss read to "
        "the host after the timer stops" % (batch, seq))
    eval_method = (
        "one validation batch of %dx%d target tokens: forward and summed cross-entropy, no "
        "backward, autograd graph built (the inputs were not volatile at the published commit); "
        "state carried and detached; loss read to the host after the timer stops" % (batch, seq))
    loss_log = {}
    protocol_published = ctx.protocol == "published"

    def measure(kind, step_args, method):
        name = kind + "_wps"
        budget = ctx.budget(name)
        warm = budget.warmup if protocol_published else max(1, budget.warmup)
        n_batches = step_args[2]
        if not gpu:
            step, check, watch = checked_stepper(*step_args)
            t, losses = _timed_loop(budget, step, warm, check=check, watch=watch)
            ctx.record_timed(name, t, ITEMS_UNIT, "items_per_s", items, method,
                             "none inside the timer (as published); CPU execution is "
                             "synchronous, so the timer covers the whole computation")
            ctx.record_timed(name + "_synced", t, ITEMS_UNIT, "items_per_s", items, method,
                             "n/a: CPU execution is synchronous; the same timed iterations as "
                             + name)
            record_as_published(ctx, name, t, n_batches, batch, seq, int(p["epochs"]))
            loss_log[kind] = losses
            ctx.check_real_work([name, name + "_synced"], check, t)  # one loop, both names
            return
        # GPU (ran on one NVIDIA H100, torch 2.11, docs/gpu-run): the published method, then a
        # synchronised loop; each loop's samples get their own real-work check.
        step, check, watch = checked_stepper(*step_args)
        t, losses = _timed_loop(budget, step, warm, check=check, watch=watch)
        ctx.record_timed(name, t, ITEMS_UNIT, "items_per_s", items, method,
                         "none (as published): no torch.cuda.synchronize() inside the timer; "
                         "the loss copy to the host after the timer is the only sync, so the "
                         "timer sees kernel launches, not GPU execution")
        record_as_published(ctx, name, t, n_batches, batch, seq, int(p["epochs"]))
        loss_log[kind] = losses
        ctx.check_real_work([name], check, t)
        sbudget = ctx.budget(name + "_synced")
        if sbudget.published_count is None:
            sbudget.published_count = budget.published_count
        step, check, watch = checked_stepper(*step_args)
        t, losses = _timed_loop(sbudget, step, warm, sync=sync_gpu, check=check, watch=watch)
        ctx.record_timed(name + "_synced", t, ITEMS_UNIT, "items_per_s", items, method,
                         "torch.cuda.synchronize() inside the timer after each iteration")
        loss_log[kind + "_synced"] = losses
        ctx.check_real_work([name + "_synced"], check, t)

    measure("train", (train_x, train_t, nb_train, True), train_method)
    measure("eval", (valid_x, valid_t, nb_valid, False), eval_method)

    # -- provenance and notes ------------------------------------------------------------------
    if train_c.stand_in:
        ctx.substitute(
            "WikiText-2 v1 wiki.train.tokens / wiki.valid.tokens as read by k-kawakami "
            "(blank lines emit nothing)",
            "deterministic stand-in token ids %s/train and /valid (bench/corpora.py, %s, seeds "
            "%d and %d)" % (train_c.name, corpora.GENERATOR, train_c.info["seed"],
                            valid_c.info["seed"]),
            "no params.data_dir given; speed depends on shapes and token counts only, which "
            "follow seed_workloads.md section 7 (train count an unverified estimate)")
    if gpu:
        ctx.note("GPU: train_wps/eval_wps time the published method (no synchronisation inside "
                 "the timer: launch time); *_synced time real execution. %s" % (
                     "This path (PyTorch >= 0.4.1) ran on one GPU during development (an H100 "
                     "under torch 2.11, docs/gpu-run); never on the publication's P100 or Titan X."
                     if _versions.at_least(torch, 0, 4, 1) else
                     "The PyTorch 0.1.12 path this version takes has never run on a GPU."))
    else:
        ctx.note("CPU: execution is synchronous, so the published no-sync timer already covers "
                 "the whole computation; train_wps/train_wps_synced (and the eval pair) are the "
                 "same timed iterations recorded twice, not two runs.")
    ctx.note("Eval builds the autograd graph (inputs not volatile at 52623e4), as published; "
             "this costs memory and some time against a no_grad forward.")
    ctx.note("'-tied 0' in the published command parses to True (bool('0')), so weights are "
             "tied; the published dropout 0.5 has no effect on a 1-layer nn.LSTM and is omitted. "
             "Weights use this PyTorch's default initialisation (the original's is not "
             "recorded); extra.loss_per_token is a sanity trace only.")
    ctx.note("The original timed every batch of 10 epochs with no warm-up; here %s, then "
             "per-batch samples; the LSTM state restarts from zero at the end of a split."
             % ("no warm-up (protocol published)" if protocol_published
                else "at least 1 untimed warm-up batch per loop"))
    flop_fwd_token = 2 * 4 * hidden * (emb + hidden) + 2 * hidden * vocab
    ctx.extra["dataset"] = {"train": train_c.label(), "valid": valid_c.label()}
    ctx.extra["aggregation"] = {
        "published": "mean over 10 epochs of per-epoch wps; per-epoch wps = target tokens of "
                     "the epoch / sum of the per-batch timed seconds; every batch timed, no "
                     "warm-up; 'Eval' is the validation pass (seed_workloads.md 2.1)",
        "ours": "one sample per batch: %d target tokens / seconds of that batch" % items,
    }
    ctx.extra["model"] = {
        "vocab_model": vocab, "corpus_types": train_c.vocab_size, "unused_ids": 1,
        "emb": emb, "hidden": hidden, "layers": 1, "tied": bool(p["tied"]),
        "parameters": sum(int(q.numel()) for q in model.parameters()),
        "batches_per_epoch": {"train": nb_train, "valid": nb_valid},
        "flop_per_batch_estimate": {
            "forward": flop_fwd_token * items, "train": 3 * flop_fwd_token * items,
            "formula": "forward per token 2*4*H*(E+H) + 2*H*V; train = 3 x forward "
                       "(seed_workloads.md 2.2, inference)"},
    }
    try:
        import resource
        ctx.extra["process_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except (ImportError, AttributeError):  # not on this platform
        pass
    ctx.extra["loss_per_token"] = dict(
        (k, [v / items for v in vals]) for k, vals in loss_log.items())
