"""Source 003 (lcy-seso/Carrot benchmarks/rnnlm @ f76b92a): TensorFlow stacked LSTM language model.

Model (seed_workloads.md 4.1): Embedding(10001, 128) -> 3 stacked LSTM layers of 256 -> Dense(256 ->
10001) on [batch*seq, 256]; zero initial state for every batch; reduce_mean of
sparse_softmax_cross_entropy_with_logits; Adam with lr 1.0; int64 [128, 50] batches of overlapping
stride-3 PTB windows, unshuffled (bench/workloads/_lm003.py).

Variants (eager_* run eagerly, graph_* in a tf.compat.v1 graph and Session; params.phase is
forward | train):
  *_fine_grained          per time step concat([x, h]) then 4 matmuls + bias (one per gate),
                          sigmoid/tanh; depth-outer / time-inner Python loops, fully unrolled.
  graph_whileop_fine_grained
                          tf.while_loop over time with the depth loop inside the body; the same
                          4-matmul cell; the output is stacked time-major and reshaped to
                          [seq*batch, hidden] WITHOUT a transpose, as published; unused output
                          variables are created, as published. AS PUBLISHED its "train" cell runs
                          the forward step only (defect 4.3 item 1).
  graph_whileop_fine_grained_fixed
                          the same model CORRECTED, not a published configuration: train really
                          trains (defect d003-whileop-forward-only) and forward fetches no logits.
  graph_{fine_grained,static,cudnn}_fixed  (forward only)
                          CORRECTED forward without the full-logit fetch (defect d003-graph-fetch):
                          session.run of the logits op, which computes them on the device and
                          returns nothing; the as-published train cells have no such defect.
  eager_{fine_grained,static,cudnn}_fixed  (forward only)
                          CORRECTED forward with a final synchronisation (defect
                          d003-no-final-sync): the GPU round trip after every timed batch, as the
                          train cells end; a no-op on the CPU.
  *_static                tf.keras.layers.LSTMCell(implementation=2, unit_forget_bias=True) per
                          layer, unrolled in Python (depth-outer / time-inner).
  *_cudnn                 three LSTM layers called in sequence (return_sequences, return_state);
                          layers 2 and 3 get the previous layer's final (h, c) as initial state, as
                          published. GPU: CuDNNLSTM where the TF version has it, else
                          tf.keras.layers.LSTM on its cuDNN path. CPU: tf.keras.layers.LSTM
                          (backend kernels, no cuDNN), recorded as a substitute.

Timing (4.2): warm-up batches, then the timed batches; one sample = one batch.
  graph: input from a tf.data initializable iterator inside the graph; the timed loop continues
    the iterator (batches warmup+1..); forward fetches the FULL logits to the host (the
    original's 256 MB copy per batch); train runs [loss, train_op]. Default Session() config.
    session.run returning is the synchronisation.
  eager: a fresh pass over the tf.data Dataset for the warm-up and again for the timed loop;
    inter_op_parallelism_threads 56 and intra_op 0 as the original's config; forward has no
    final sync; train (GradientTape, Adam(1.0)) ends with a GPU round-trip copy
    (the original's force_gpu_sync) -- here after every batch, since a sample is one batch.
  On the CPU every sync is a no-op.
GPU PATHS HAVE NEVER RUN ON A GPU (the one GPU machine so far, docs/gpu-run, had no TensorFlow).

Python 3.5 syntax; imports only tensorflow, numpy (a TensorFlow dependency) and the standard
library.
"""
import real_work
import timing

from workloads import _lm003, _versions

FRAMEWORK = "tensorflow"

VARIANTS = ("eager_fine_grained", "graph_fine_grained", "graph_whileop_fine_grained",
            "graph_whileop_fine_grained_fixed", "eager_static", "graph_static", "eager_cudnn",
            "graph_cudnn", "graph_fine_grained_fixed", "graph_static_fixed", "graph_cudnn_fixed",
            "eager_fine_grained_fixed", "eager_static_fixed", "eager_cudnn_fixed")

API = {
    "fine_grained": "concat([x, h]) then 4 tf.matmul + bias per step, Python-unrolled "
                    "depth-outer/time-inner",
    "whileop": "tf.while_loop over time, depth loop inside the body, 4-matmul cell",
    "static": "tf.keras.layers.LSTMCell(implementation=2, unit_forget_bias=True), Python-unrolled",
    "cudnn": "3 LSTM layers called in sequence (CuDNNLSTM on a GPU where available)",
}


def split_variant(variant):
    """-> (mode 'eager'|'graph', impl 'fine_grained'|'whileop'|'static'|'cudnn', fixed)."""
    if variant not in VARIANTS:
        raise ValueError("unknown variant %r for s003_tensorflow (known: %s)"
                         % (variant, ", ".join(VARIANTS)))
    mode, rest = variant.split("_", 1)
    fixed = rest.endswith("_fixed")
    impl = "whileop" if rest.startswith("whileop") else rest.replace("_fixed", "")
    return mode, impl, fixed


# ---------------------------------------------------------------------------------------------
# Model pieces: work eagerly and inside a tf.compat.v1 graph alike.
# ---------------------------------------------------------------------------------------------
class FineGrainedLayer(object):
    """One LSTM layer: per gate a kernel [in + hidden, hidden] and a bias, applied to concat([x, h])."""

    def __init__(self, tf, inp, hidden, seed):
        self.tf = tf
        lim = (6.0 / (inp + 2 * hidden)) ** 0.5
        self.kernels = [tf.Variable(tf.random.uniform([inp + hidden, hidden], -lim, lim,
                                                      seed=seed + g)) for g in range(4)]
        self.biases = [tf.Variable(tf.zeros([hidden])) for _ in range(4)]

    def variables(self):
        return self.kernels + self.biases

    def step(self, x, h, c):
        tf = self.tf
        xh = tf.concat([x, h], 1)
        i, f, g, o = [tf.matmul(xh, w) + b for w, b in zip(self.kernels, self.biases)]
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, c


class LanguageModel(object):
    """Embedding -> recurrent stack -> dense head; __call__(x [B, T] int) -> logits [B*T, V]."""

    def __init__(self, tf, impl, p, gpu):
        self.tf, self.impl, self.p, self.gpu = tf, impl, p, gpu
        v, e, hdim, seed = p["vocab"], p["emb"], p["hidden"], p["seed"]
        self.embedding = tf.Variable(tf.random.uniform([v, e], -0.05, 0.05, seed=seed))
        lim = (6.0 / (hdim + v)) ** 0.5
        self.w_out = tf.Variable(tf.random.uniform([hdim, v], -lim, lim, seed=seed + 1))
        self.b_out = tf.Variable(tf.zeros([v]))
        sizes = [e] + [hdim] * (p["layers"] - 1)
        self.layers = []
        self.extra_vars = []
        self.cudnn_api = None
        if impl in ("fine_grained", "whileop"):
            self.layers = [FineGrainedLayer(tf, n, hdim, seed + 10 * (k + 1))
                           for k, n in enumerate(sizes)]
            if impl == "whileop":
                # created and never used, as the published WhileOpLSTMNet does
                self.extra_vars = [tf.Variable(tf.zeros([hdim, v])), tf.Variable(tf.zeros([v]))]
        elif impl == "static":
            self.layers = [tf.keras.layers.LSTMCell(hdim, implementation=2, unit_forget_bias=True)
                           for _ in sizes]
        else:
            self.layers = [self._cudnn_layer(hdim) for _ in sizes]

    def _cudnn_layer(self, hdim):
        tf = self.tf
        if self.gpu:  # never run on a GPU
            if not _versions.at_least(tf, 2, 16):  # Keras 2 inside TF: CuDNNLSTM, as published
                self.cudnn_api = "tf.compat.v1.keras.layers.CuDNNLSTM (as published)"
                return tf.compat.v1.keras.layers.CuDNNLSTM(hdim, return_sequences=True,
                                                           return_state=True)
            # Keras 3 (TF >= 2.16) can be told to insist on cuDNN
            layer = tf.keras.layers.LSTM(hdim, return_sequences=True, return_state=True,
                                         use_cudnn=True)
            self.cudnn_api = "tf.keras.layers.LSTM on its cuDNN path"
            return layer
        self.cudnn_api = "tf.keras.layers.LSTM (CPU: backend kernels, no cuDNN)"
        return tf.keras.layers.LSTM(hdim, return_sequences=True, return_state=True)

    def variables(self):
        return [self.embedding, self.w_out, self.b_out] + self._rnn_variables() + self.extra_vars

    def _rnn_variables(self):
        out = []
        for layer in self.layers:
            if isinstance(layer, FineGrainedLayer):
                out.extend(layer.variables())
            else:
                out.extend(layer.trainable_weights)
        return out

    def parts(self):
        """The trained variables by part of the model, for the real-work check (the while-op's
        unused output variables are left out: nothing trains them)."""
        return {"embedding": [self.embedding], "rnn": self._rnn_variables(),
                "head": [self.w_out, self.b_out]}

    def __call__(self, x):
        tf = self.tf
        hdim = self.p["hidden"]
        e = tf.nn.embedding_lookup(self.embedding, x)  # [B, T, E]
        if self.impl == "whileop":
            feats = self._while(e)
        elif self.impl == "cudnn":
            out, state = e, None
            for layer in self.layers:
                if state is None:
                    out, h, c = layer(out)
                else:
                    out, h, c = layer(out, initial_state=state)
                state = [h, c]
            feats = tf.reshape(out, [-1, hdim])
        else:
            feats = tf.reshape(self._unrolled(e), [-1, hdim])
        return tf.matmul(feats, self.w_out) + self.b_out

    def _zeros(self, e):
        return self.tf.zeros(self.tf.stack([self.tf.shape(e)[0], self.p["hidden"]]))

    def _unrolled(self, e):
        tf = self.tf
        steps = tf.unstack(e, num=self.p["seq_len"], axis=1)
        for layer in self.layers:
            h = c = self._zeros(e)
            outs = []
            for x in steps:
                if isinstance(layer, FineGrainedLayer):
                    h, c = layer.step(x, h, c)
                else:
                    h, (h, c) = layer(x, [h, c])
                outs.append(h)
            steps = outs
        return tf.stack(steps, 1)  # [B, T, H]

    def _while(self, e):
        tf = self.tf
        seq = self.p["seq_len"]
        inputs = tf.TensorArray(tf.float32, size=seq).unstack(tf.transpose(e, [1, 0, 2]))
        zero = self._zeros(e)
        states = tuple((zero, zero) for _ in self.layers)

        def cond(t, states, outputs):
            return t < seq

        def body(t, states, outputs):
            x = inputs.read(t)
            new = []
            for layer, (h, c) in zip(self.layers, states):
                h, c = layer.step(x, h, c)
                new.append((h, c))
                x = h
            return t + 1, tuple(new), outputs.write(t, x)

        _, _, outputs = tf.while_loop(
            cond, body, (tf.constant(0), states, tf.TensorArray(tf.float32, size=seq)))
        # time-major [T, B, H] reshaped without a transpose, as published (rows then pair with
        # the batch-major targets in the wrong order; the cost is the same)
        return tf.reshape(outputs.stack(), [-1, self.p["hidden"]])


def loss_fn(tf, logits, y):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(y, [-1]), logits=logits))


def _arrays(xs, ys, rows, cols):
    import numpy
    x = numpy.frombuffer(xs, dtype=numpy.int32).astype(numpy.int64).reshape(rows, cols)
    y = numpy.frombuffer(ys, dtype=numpy.int32).astype(numpy.int64).reshape(rows, cols)
    return x, y


# ---------------------------------------------------------------------------------------------
# Graph mode
# ---------------------------------------------------------------------------------------------
def graph_variable(tf, v):
    """The tf.Variable behind v: Keras 3 wraps its variables, which tf.compat.v1 optimisers
    do not accept."""
    if isinstance(v, tf.Variable):
        return v
    inner = getattr(v, "value", None)
    if isinstance(inner, tf.Variable):
        return inner
    raise TypeError("cannot find the tf.Variable behind %r" % (v,))


class GraphStep(object):
    """A tf.compat.v1 graph fed by an initializable tf.data iterator; step() = one session.run.

    trains: whether step() applies the optimiser (False for forward, and for the as-published
    while-op "train" cell, which runs the forward fetch). fetch_logits: a forward step fetches the
    full logits to the host (as published) or only runs the op computing them (corrected)."""

    def __init__(self, tf, impl, trains, p, x, y, device, gpu, repeat=False, fetch_logits=True):
        self.tf = tf
        self.trains = trains
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.compat.v1.set_random_seed(p["seed"])
            ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(p["batch"], drop_remainder=True)
            if repeat:
                ds = ds.repeat()
            self.iterator = tf.compat.v1.data.make_initializable_iterator(ds)
            xb, yb = self.iterator.get_next()
            with tf.device(device):
                self.model = LanguageModel(tf, impl, p, gpu)
                logits = self.model(xb)
                if trains:
                    loss = loss_fn(tf, logits, yb)
                    opt = tf.compat.v1.train.AdamOptimizer(1.0)
                    used = [graph_variable(tf, v) for v in self.model.variables()
                            if not any(v is u for u in self.model.extra_vars)]
                    self.fetch = [loss, opt.minimize(loss, var_list=used)]
                elif fetch_logits:
                    self.fetch = logits  # the full [B*T, V] logits come back to the host
                else:
                    self.fetch = logits.op  # computed on the device, nothing returned
            # for the real-work check, run untimed (logits_for feeds a batch in place of xb)
            self.xb, self.logits, self.x, self.batch = xb, logits, x, p["batch"]
            self.n_batches, self.repeat = len(x) // p["batch"], repeat
            init = tf.compat.v1.global_variables_initializer()
        self.graph.finalize()
        self.session = tf.compat.v1.Session(graph=self.graph)  # default config, as published
        self.session.run(init)
        self.session.run(self.iterator.initializer)

    def step(self):
        return self.session.run(self.fetch)

    def step_op(self):
        """step() for a fetch that returns nothing (the corrected forward): the same session.run,
        then this runner as the step's result, which the real-work check needs."""
        self.session.run(self.fetch)
        return self

    def values(self):
        """Current values of the model's variables (numpy), for checks."""
        return self.session.run([graph_variable(self.tf, v) for v in self.model.variables()])

    def part_sums(self):
        """The real-work check's digest of the weights: a float64 sum per part of the model."""
        got = self.session.run(dict((k, [graph_variable(self.tf, v) for v in vs])
                                    for k, vs in self.model.parts().items()))
        return dict((k, _sum64(vs)) for k, vs in got.items())

    def logits_for(self, k):
        """The logits of batch k (0-based) of the dataset, run untimed with that batch fed in place
        of the iterator's (which stays where it is)."""
        rows = self.x[k * self.batch:(k + 1) * self.batch]
        return self.session.run(self.logits, feed_dict={self.xb: rows})

    def next_through_iterator(self, steps):
        """The logits of the in-graph iterator's next batch, run untimed after `steps` steps that
        each took one batch from it; raises real_work.RealWorkFailed when that batch is not the one
        `steps` such steps leave it at (the timed steps did not each run the graph on one batch)."""
        spent = steps >= self.n_batches and not self.repeat  # no next batch: the data is spent
        if spent:
            try:
                self.session.run(self.xb)
            except Exception as e:  # tf.errors.OutOfRangeError: at the end, as it should be
                if type(e).__name__ != "OutOfRangeError":
                    raise
            else:
                spent = None
            self.session.run(self.iterator.initializer)
        k = 0 if spent else steps % self.n_batches
        logits, rows = self.session.run([self.logits, self.xb])
        if spent is None or not (rows == self.x[k * self.batch:(k + 1) * self.batch]).all():
            raise real_work.RealWorkFailed(
                "real-work check of time_per_batch and seq_per_s failed: the in-graph iterator is "
                "not where %d steps of one batch each leave it" % steps)
        return logits

    def close(self):
        self.session.close()


# ---------------------------------------------------------------------------------------------
# Eager mode
# ---------------------------------------------------------------------------------------------
class EagerStep(object):
    def __init__(self, tf, impl, trains, p, x, y, device, gpu, final_sync=False):
        self.tf, self.trains, self.device, self.gpu = tf, trains, device, gpu
        self.final_sync = final_sync  # corrected forward: end every batch with the GPU round trip
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(p["batch"], drop_remainder=True)
        self.feed = _lm003.Feed(lambda: ds)
        with tf.device(device):
            self.model = LanguageModel(tf, impl, p, gpu)
        self.opt = tf.keras.optimizers.Adam(1.0) if trains else None
        self.last = None  # (batch, logits) of the latest forward step, replaced by the next

    def step(self):
        tf = self.tf
        xb, yb = self.feed.next()
        with tf.device(self.device):
            if not self.trains:
                self.last = (xb, self.model(xb))  # as published: no final sync
                if self.gpu and self.final_sync:
                    self.force_gpu_sync()
                return self.last
            with tf.GradientTape() as tape:
                loss = loss_fn(tf, self.model(xb), yb)
            variables = self.model.variables()
            grads = tape.gradient(loss, variables)
            self.opt.apply_gradients(zip(grads, variables))
        if self.gpu:
            self.force_gpu_sync()

    def part_sums(self):
        """The real-work check's digest of the weights: a float64 sum per part of the model."""
        return dict((k, _sum64([v.numpy() for v in vs])) for k, vs in self.model.parts().items())

    def rerun(self):
        """The latest forward batch once more, untimed, after the timing: its logits."""
        with self.tf.device(self.device):
            return self.model(self.last[0])

    def force_gpu_sync(self):
        """The original's tf.constant(1).gpu().cpu(): a round trip through the GPU. Never run."""
        tf = self.tf
        with tf.device("/GPU:0"):
            t = tf.identity(tf.constant(1))
        with tf.device("/CPU:0"):
            tf.identity(t).numpy()


def _sum64(arrays):
    import numpy
    return sum(float(numpy.asarray(a, dtype=numpy.float64).sum()) for a in arrays)


def _mean_abs(logits):
    """The real-work check's digest of a forward output: the float64 mean of |logits|."""
    import numpy
    return float(numpy.abs(numpy.asarray(logits)).mean(dtype=numpy.float64))


def real_work_check(runner, variant, phase, steps):
    """The real-work check of this cell's timed steps (bench/real_work.py). `steps()` is the number
    of steps run before the check (warm-up and timed), known once the timing is done: a graph
    step takes its batch from the in-graph iterator, so the batch the last one ran is found by
    counting (batch steps() - 1 of the dataset, from 0)."""
    mode, impl, fixed = split_variant(variant)
    if runner.trains:
        return real_work.Check("train", state=runner.part_sums)
    # abs_tol 0: the logits can be small (the head's bias starts at 0; ~1e-4 at the tests' tiny
    # shapes), where the default absolute tolerance would loosen the relative one
    if mode == "eager":
        return real_work.Check("forward", output=lambda got: _mean_abs(got[1]),
                               reference=lambda: _mean_abs(runner.rerun()), abs_tol=0.0)
    if fixed:
        # defect d003-graph-fetch corrected: the timed step returns nothing. The check: the next
        # batch, fetched untimed through the in-graph iterator, is the one the timed steps leave it
        # at (each ran the graph on one batch), and its logits are those of that batch fed in.
        return real_work.Check("forward", output=lambda _: _mean_abs(runner.next_through_iterator(
            steps())), reference=lambda: _mean_abs(runner.logits_for(steps() % runner.n_batches)),
            abs_tol=0.0)
    check = real_work.Check("forward", output=_mean_abs, abs_tol=0.0,
                            reference=lambda: _mean_abs(runner.logits_for((steps() - 1)
                                                                          % runner.n_batches)))
    if phase == "train":  # as-published while-op "train": the forward step, no update (4.3 item 1)
        check = real_work.Check("train", state=runner.part_sums, output=check.output,
                                reference=check.reference, abs_tol=0.0,
                                still=dict((k, "d003-whileop-forward-only")
                                           for k in ("embedding", "rnn", "head")))
    return check


def _configure_eager(tf, ctx, gpu):
    """The original eager config: inter_op 56, intra_op 0, GPU memory fraction 0.2 + growth."""
    threading = tf.config.threading  # TF >= 2.0, which this workload needs
    if threading is not None:
        try:
            threading.set_inter_op_parallelism_threads(56)
            threading.set_intra_op_parallelism_threads(0)
        except RuntimeError as e:  # the runtime was already initialised in this process
            ctx.note("could not set eager thread pools (%s); TensorFlow defaults used" % e)
        ctx.substitute("tf.compat.v1.enable_eager_execution(config) with "
                       "inter_op_parallelism_threads=56, intra_op_parallelism_threads=0",
                       "TF 2 default eager execution + tf.config.threading (56, 0)",
                       "eager is already on in TF 2.x; the thread settings are applied the TF 2 way")
    if gpu:  # never run on a GPU
        for d in tf.config.experimental.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(d, True)
        ctx.substitute("per_process_gpu_memory_fraction=0.2, allow_growth=True",
                       "tf.config.experimental.set_memory_growth(True), no 0.2 cap",
                       "a memory fraction has no direct TF 2 eager equivalent; it does not "
                       "change speed unless memory runs out")


def build_step(tf, variant, phase, p, x, y, device="/CPU:0", gpu=False, repeat=False):
    """The object whose step() is one timed batch of this cell (also used by the tests)."""
    mode, impl, fixed = split_variant(variant)
    if fixed and phase == "train" and impl != "whileop":
        raise ValueError("%s exists for phase 'forward' only: the as-published train cell has no "
                         "timing defect to correct" % variant)
    # as published, the while-op "train" benchmark runs the forward step (defect 4.3 item 1)
    trains = phase == "train" and not (impl == "whileop" and not fixed)
    if mode == "graph":
        return GraphStep(tf, impl, trains, p, x, y, device, gpu, repeat, fetch_logits=not fixed)
    return EagerStep(tf, impl, trains, p, x, y, device, gpu, final_sync=fixed)


def run(ctx):
    import tensorflow as tf

    p = _lm003.params(ctx, "s003_tensorflow")
    variant, phase = ctx.variant, p["phase"]
    mode, impl, fixed = split_variant(variant)
    gpu = ctx.device == "gpu"
    if mode == "eager":
        _configure_eager(tf, ctx, gpu)
    if gpu and not tf.config.experimental.list_physical_devices("GPU"):
        raise RuntimeError("cell asks for a GPU but TensorFlow sees none")
    device = "/GPU:0" if gpu else "/CPU:0"
    if not gpu:  # pinned to the CPU below: TensorFlow's GPU devices (on a GPU host) stay unused
        ctx.record_ran_on("cpu", "TensorFlow ops pinned to /cpu:0")
    tf.random.set_seed(p["seed"])

    xs, ys, nb = _lm003.prepare(ctx, p)
    x, y = _arrays(xs, ys, nb * p["batch"], p["seq_len"])
    needed = ctx.extra["windows"]["batches_needed"]
    t0 = timing.clock()
    runner = build_step(tf, variant, phase, p, x, y, device, gpu, repeat=needed > nb)
    ctx.extra["setup_s"] = timing.clock() - t0

    done = []  # the timing's samples, for the check's step count
    check = real_work_check(runner, variant, phase,
                            lambda: len(done[0]["warmup_seconds"]) + len(done[0]["raw_seconds"]))
    if mode == "graph":
        t = _lm003.sample(ctx, runner.step if runner.trains or not fixed else runner.step_op,
                          real_work=check)
        ctx.extra["iteration"] = ("one initializable iterator: warm-up batches 1..w, timed "
                                  "batches w+1.. (the timed loop continues the iterator)")
    else:
        t = _lm003.sample(ctx, runner.step, before_timed=runner.feed.restart, real_work=check)
        ctx.extra["iteration"] = ("a fresh pass over the Dataset for the warm-up and again for "
                                  "the timed loop: timed batches 1..n")
        if runner.feed.wraps:
            ctx.note("the data ran out %d time(s) and iteration restarted at batch 1"
                     % runner.feed.wraps)

    api = "%s %s: %s" % ("tf.compat.v1 graph + Session," if mode == "graph" else "eager,",
                         "train" if runner.trains else "forward", API[impl])
    if impl == "cudnn":
        api += "; layer: " + runner.model.cudnn_api
    ctx.describe(framework="tensorflow", framework_version=tf.__version__, api=api)
    _substitutes(tf, ctx, mode, impl, gpu)
    if impl == "whileop" and phase == "train" and not fixed:
        ctx.note("AS PUBLISHED (defect 4.3 item 1): the original's while-op train benchmark calls "
                 "_benchmark_apply, so this 'train' cell runs the forward step (full-logit fetch) "
                 "and updates no parameter; see graph_whileop_fine_grained_fixed/train")
    if impl == "whileop" and fixed and phase == "train":
        ctx.note("corrected variant (not published): the while-op model trained with "
                 "AdamOptimizer(1.0); the time-major reshape and unused variables are kept as "
                 "published")
    elif fixed and mode == "graph":
        ctx.note("corrected variant (not published, defect d003-graph-fetch): forward runs the "
                 "logits op without fetching the logits to the host")
    elif fixed:
        ctx.note("corrected variant (not published, defect d003-no-final-sync): every timed "
                 "forward batch ends with a GPU round trip (a no-op on the CPU)")
    elif phase == "forward" and mode == "graph":
        ctx.note("AS PUBLISHED (defect d003-graph-fetch): forward fetches the full logits to the "
                 "host every batch; see %s_fixed/forward" % variant)
    if not runner.trains and mode == "eager":
        ctx.note("each forward batch's logits are kept until the next batch's replace them (the "
                 "original's `output = model(x)`), for the real-work check against an untimed rerun")
    elif not runner.trains and fixed:
        ctx.note("real-work check: the timed steps return no logits, so the next batch is run untimed "
                 "through the in-graph iterator, which must be where the timed steps left it, and its "
                 "logits compared with that batch fed in")
    if impl == "static":
        ctx.note("loop order of the static original not recorded; depth-outer/time-inner used")
    if runner.trains and mode == "graph":
        ctx.note("the unused while-op output variables get no gradient and are left out of "
                 "minimize()" if impl == "whileop" else "minimize() over all model variables")

    if mode == "graph":
        if runner.trains:
            method = ("one batch: session.run([loss, train_op]) (scalar fetch), input from the "
                      "in-graph tf.data iterator; AdamOptimizer(1.0)")
        elif fixed:
            method = ("one batch: session.run(logits.op): the [batch*seq, vocab] logits computed "
                      "on the device and not fetched (corrected), input from the in-graph tf.data "
                      "iterator")
        else:
            method = ("one batch: session.run(logits) fetching the FULL [batch*seq, vocab] "
                      "float32 logits to the host (%.0f MB, as published), input from the "
                      "in-graph tf.data iterator"
                      % (4.0 * p["batch"] * p["seq_len"] * p["vocab"] / 1e6))
        sync_desc = "implicit: session.run returns host data"
    else:
        if runner.trains:
            method = ("one batch: next() on the tf.data iterator, GradientTape forward + "
                      "sparse softmax CE (mean), gradients, tf.keras.optimizers.Adam(1.0) step")
            sync_desc = ("GPU round-trip copy (the original's force_gpu_sync) after every batch"
                         if gpu else "n/a: CPU execution is synchronous (the original's "
                                     "force_gpu_sync is a no-op here)")
        elif fixed:
            method = ("one batch: next() on the tf.data iterator, model(x) eagerly; no loss; "
                      "then the GPU round trip (corrected)")
            sync_desc = ("GPU round-trip copy after every forward batch (corrected)" if gpu else
                         "n/a: CPU execution is synchronous (the corrected final sync is a no-op "
                         "here)")
        else:
            method = "one batch: next() on the tf.data iterator, model(x) eagerly; no loss"
            sync_desc = ("none (as published): per-batch samples then sum to the original's "
                         "elapsed time" if gpu else "n/a: CPU execution is synchronous")
    done.append(t)
    _lm003.record(ctx, t, p["batch"], method, sync_desc, real_work=check)
    if mode == "graph":
        runner.close()


def _substitutes(tf, ctx, mode, impl, gpu):
    if _versions.at_least(tf, 2, 16) and _versions.available("keras"):  # Keras 3, its own package
        import keras
        keras_version = keras.__version__
    else:
        keras_version = getattr(tf.keras, "__version__", "unknown")
    uses_keras = impl in ("static", "cudnn") or mode == "eager"
    if uses_keras and str(keras_version).split(".")[0] == "3":
        ctx.substitute("tf.keras bundled with TensorFlow 2.0.0-alpha0 (Keras 2 API)",
                       "Keras %s (tf.keras of the installed TensorFlow)" % keras_version,
                       "the installed TensorFlow ships Keras 3, whose layers and optimisers are "
                       "separate implementations of the same API")
    if impl == "cudnn" and not gpu:
        ctx.substitute("tf.compat.v1.keras.layers.CuDNNLSTM x3 (GPU only)",
                       "tf.keras.layers.LSTM x3 on the CPU",
                       "CuDNNLSTM needs a GPU; the nearest CPU equivalent is the standard LSTM "
                       "layer (no published CPU row exists for this variant)")
    elif impl == "cudnn" and _versions.at_least(tf, 2, 16):  # CuDNNLSTM left with Keras 2
        ctx.substitute("tf.compat.v1.keras.layers.CuDNNLSTM x3",
                       "tf.keras.layers.LSTM x3 on its cuDNN path",
                       "CuDNNLSTM is gone from this TensorFlow version")
