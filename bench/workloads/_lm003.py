"""Source 003 (lcy-seso/Carrot stacked LSTM LM on PTB): parameters, data and timing shared by the
TensorFlow and PyTorch workloads. Standard library only (plus bench/corpora.py and timing.py).

Data (seed_workloads.md 4.1 and 7): the PTB train token stream read as Carrot reads it (every line
end becomes one `<e>` token, so the count is the TF reader's 929,589), cut into OVERLAPPING windows
of seq_len tokens starting every `stride` (3) tokens; the target is the window shifted by one. The
window count is len(range(0, n_tokens - seq_len - 1, stride)) = 309,846 for PTB, the figure of
section 4.1. Batches are consecutive windows, unshuffled, drop-remainder.
The model vocabulary (10,001) is the corpus' 10,000 ids plus `<s>`, an id that never occurs in the
data; so the corpus is asked for vocab - 1 ids.

Only the windows the budget can consume are materialised (warm-up plus the largest timed count; the
original's 60 batches are 7,680 windows); the original held all 309,846 on the device. Per-batch cost
(indexing, collation, the step) does not depend on how many windows sit behind the batch.

Python 3.5 syntax (2.7-compatible where cheap).
"""
from array import array

import corpora
import timing

try:
    from workloads import _params as params_
except ImportError:  # pragma: no cover
    import _params as params_

PHASES = ("forward", "train")

DEFAULTS = {
    "phase": None,              # forward | train (from the suite matrix)
    "batch": 128,
    "seq_len": 50,
    "hidden": 256,
    "emb": 128,
    "layers": 3,
    "vocab": 10001,             # model vocabulary; the corpus supplies vocab - 1 ids
    "dataset": "ptb",
    "stride": 3,                # window start every 3 tokens (lm_inputs(..., stride=3))
    "data_dir": None,           # None: deterministic stand-in (bench/corpora.py); else ptb.*.txt
    "sha256": None,             # {file name: expected sha256} for real data
    "corpus_tokens": None,      # stand-in token count instead of 929,589 (tests only)
    "seed": 1234,               # torch.manual_seed(1234) in the original; TF seeds are ours
    "published_iterations": None,
}


def params(ctx, workload):
    p = params_.resolve(ctx, workload, DEFAULTS)
    if p["phase"] not in PHASES:
        raise ValueError("params.phase must be one of %s, got %r" % (", ".join(PHASES), p["phase"]))
    if p["dataset"] != "ptb":
        raise ValueError("%s runs dataset 'ptb' only, got %r" % (workload, p["dataset"]))
    for k in ("batch", "seq_len", "hidden", "emb", "layers", "vocab", "stride", "seed"):
        p[k] = int(p[k])
    if p["vocab"] < 2:
        raise ValueError("vocab must be >= 2, got %d" % p["vocab"])
    return p


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------
def load_corpus(p):
    """The PTB train split: real files when params.data_dir is given, else the stand-in."""
    if p["data_dir"]:
        c = corpora.load_ptb(p["data_dir"], p["sha256"])["train"]
        if c.vocab_size > p["vocab"]:
            raise ValueError("the PTB files give %d ids, more than the model vocabulary %d"
                             % (c.vocab_size, p["vocab"]))
        if p["corpus_tokens"] is not None:
            raise ValueError("corpus_tokens applies to the stand-in only, not to data_dir")
        return c
    n = None if p["corpus_tokens"] is None else int(p["corpus_tokens"])
    return corpora.stand_in("ptb", "train", vocab_size=p["vocab"] - 1, n_tokens=n)


def dataset_label(corpus, p):
    d = corpus.label()
    d["carrot_reading"] = (
        "Carrot replaces each line end by <e> and splits (same token count as the TF reader's "
        "<eos>); model vocabulary %d = %d corpus ids + <s>, which never occurs "
        "(seed_workloads.md 4.1, 7)" % (p["vocab"], p["vocab"] - 1))
    if not corpus.stand_in:
        d["id_order"] = ("ids from corpora.load_ptb (train words by count), not Carrot's cached "
                         "vocab-file order; <unk> is in range either way (defect 4.3 item 3 "
                         "cannot occur). Speed does not depend on which id a word gets.")
    return d


def n_windows(n_tokens, seq_len, stride):
    return len(range(0, max(0, n_tokens - seq_len - 1), stride))


def windows(tokens, seq_len, stride, count):
    """The first `count` windows as two flat array('i') of count * seq_len ids (inputs, targets)."""
    xs, ys = array("i"), array("i")
    for k in range(count):
        s = k * stride
        xs.extend(tokens[s:s + seq_len])
        ys.extend(tokens[s + 1:s + seq_len + 1])
    return xs, ys


def batches_needed(budget):
    timed = budget.published_count if budget.published_count is not None else budget.max_samples
    return int(budget.warmup) + int(timed)


def prepare(ctx, p):
    """Corpus, windows and their description. Returns (xs, ys, n_batches) with xs/ys flat
    array('i') of n_batches * batch * seq_len ids; records ctx.extra['dataset'/'windows']."""
    corpus = load_corpus(p)
    total = n_windows(corpus.n_tokens, p["seq_len"], p["stride"])
    available = total // p["batch"]
    if available < 1:
        raise ValueError("corpus of %d tokens gives %d windows, fewer than one batch of %d"
                         % (corpus.n_tokens, total, p["batch"]))
    needed = batches_needed(ctx.budget("time_per_batch"))
    nb = min(needed, available)
    xs, ys = windows(corpus.tokens, p["seq_len"], p["stride"], nb * p["batch"])
    ctx.extra["dataset"] = dataset_label(corpus, p)
    ctx.extra["windows"] = {
        "seq_len": p["seq_len"], "stride": p["stride"], "windows_total": total,
        "batches_total": available, "batches_needed": needed, "batches_materialised": nb,
        "order": "unshuffled, consecutive windows, drop remainder",
        "note": "only the windows the budget can use are built (the original held all %d); "
                "if more batches are asked for than exist, iteration starts again at batch 1"
                % total,
    }
    return xs, ys, nb


class Feed(object):
    """Next batch from an iterator made by make_iter(); restart() makes the next call begin a
    fresh iteration (the original restarts its data loop for the timed batches, except TF graph);
    running past the end starts again (counted in `wraps`)."""

    def __init__(self, make_iter):
        self._make = make_iter
        self._it = None
        self.wraps = 0

    def restart(self):
        self._it = None

    def next(self):
        if self._it is None:
            self._it = iter(self._make())
        try:
            return next(self._it)
        except StopIteration:
            self.wraps += 1
            self._it = iter(self._make())
            return next(self._it)


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------
def sample(ctx, step, sync=None, before_timed=None, real_work=None):
    """Warm-up batches, then before_timed() (outside any timer), then the timed batches under the
    cell's budget. One sample = one batch. Returns the timing.sample dict; with `real_work` (a
    bench/real_work.py Check) its digest taken after before_timed() is the dict's `before_timed`, for
    `record(..., real_work=)`."""
    budget = ctx.budget("time_per_batch")
    warm = []
    for _ in range(budget.warmup):
        t0 = timing.clock()
        step()
        if sync is not None:
            sync()
        warm.append(timing.clock() - t0)
    if before_timed is not None:
        before_timed()
    ahead = real_work.before() if real_work is not None else None
    budget.warmup = 0
    t = timing.sample(step, budget, sync=sync)
    t["warmup_seconds"] = warm
    t["before_timed"] = ahead
    return t


TIMED_BATCHES = 50  # ITERS of the original tests (seed_workloads.md 4.2)


def record(ctx, t, batch, method, sync_desc, real_work=None):
    """time_per_batch (s) and seq_per_s (= batch / seconds) from the same samples, and beside them
    the source's own figures: Elapsed = the seconds of the 50 batches timed after its 10 untimed
    warm-up batches, Avg = Elapsed / 50 (a mean, not a median), seq/s = 50 x 128 / Elapsed. Each
    batch's own seconds are summed (the sampler's bookkeeping between batches left out); fewer
    than 50 timed batches give a labelled partial estimate. `real_work` (the Check given to `sample`)
    is then run and recorded with both metrics; a failed check fails the cell."""
    ctx.record_timed("time_per_batch", t, "s", "s", 1, method, sync_desc)
    ctx.record_timed("seq_per_s", t, "seq/s", "items_per_s", batch, method, sync_desc)
    planned = (ctx.params.get("published_iterations") or {}).get("default", TIMED_BATCHES)
    seg = [{"seconds": list(t["raw_seconds"]), "warmup": 0, "other_seconds": 0.0,
            "items_per_iteration": 1}]
    ctx.record_as_published(
        "time_per_batch", "mean_over_iterations",
        "Avg = Elapsed / %d: the seconds of the %d batches timed after the untimed warm-up "
        "batches, / %d" % (planned, planned, planned), "time_per_item", seg,
        planned_iterations=planned)
    seg = [dict(seg[0], items_per_iteration=batch)]
    ctx.record_as_published(
        "seq_per_s", "items_over_elapsed",
        "seq/s = %d x %d sequences / Elapsed, the seconds of the %d timed batches"
        % (planned, batch, planned), "rate", seg, planned_iterations=planned)
    if real_work is not None:  # after recording, so a failed check keeps the samples
        ctx.check_real_work(["time_per_batch", "seq_per_s"], real_work, t)
