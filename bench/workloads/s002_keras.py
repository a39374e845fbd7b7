"""Source 002 (awslabs/keras-apache-mxnet RNN benchmark): LSTM(128) character model, two backends.

Workload (seed_workloads.md section 3.1): Sequential([LSTM(128, input_shape=(40, D), unroll=True),
Dense(D, softmax)]), categorical cross-entropy, RMSprop(lr=0.01), trained with Keras fit on host
numpy arrays (sliced per batch, shuffled every epoch). Data sets:
  synthetic        x = random bool (50000, 40, 60) as float32, y = random multi-hot (50000, 60)
  nietzsche        windows of 40 one-hot characters, step 3, D = 57 -> 200,285 samples
  wikitext2-char   the same windows over WikiText-2 raw as preprocessed by Keras-MXNet, D <= 37

Variants, and the API each takes (chosen by what the stack installs: _versions.available/at_least;
checked per stack by tests/containers/test_api_paths.py against each version's API list):
  Keras 2.x installed (the GPU images: Keras 2.1.6 on TF 1.8, keras-mxnet 2.1.6.1 on MXNet 1.2):
              the original's own code, Sequential([LSTM(128, unroll=True), Dense(softmax)]) with
              Keras 2.1.6's defaults (hard_sigmoid, implementation=1), RMSprop(lr=0.01),
              multi_gpu_model for gpus > 1. keras-mxnet 2.1.6.1 on MXNet 1.2.0 (CPU build) runs it
              here in the keras-mxnet-1.2 stack's Python 3.6 environment (reprokit/runners/venvs.py); Keras
              2.1.6 on TF 1.8 and every GPU path (multi_gpu_model, memory queries) never ran.
  tensorflow  with Keras 3: tf.keras of the installed TensorFlow standing in for Keras 2.1.6 on TF 1.8.
  mxnet       without Keras: MXNet Gluon standing in for keras-mxnet 2.1.6 on MXNet 1.2: a hybridized
              gluon.rnn.LSTMCell unrolled over the 40 steps + Dense, the same loss and optimiser.
              The local runner's stand-in where no keras-mxnet environment installs: keras-mxnet
              does not import on Python 3.11 (collections.Iterable) and fails to build this model
              on MXNet 1.9.1 (stack_attempts.yaml).

Timing: the original timed whole fit epochs (50,000 to ~3.4 M samples), far too long for a small
CPU. One sample here is one batch of the fit loop as Keras 2.1.6 ran it: the shuffled index slice,
the host numpy gather (one-hot built from the window's characters), the transfer into the
framework and one train step, with the loss read back to the host. time_per_epoch is EXTRAPOLATED
from it (seconds per batch x samples per epoch / batch + the measured per-epoch shuffle), never a
full epoch; time_per_sample is Keras's "us/step" (per sample). gpu_memory is the framework's peak
device memory on a GPU, and on the CPU the process's peak RSS (host memory, not GPU memory).

Multi-GPU cells (gpus > 1) use tf.distribute.MirroredStrategy / one MXNet context per GPU with the
global batch split, like keras multi_gpu_model. THE GPU PATHS HAVE NEVER RUN ON A GPU.
Real-work check (bench/real_work.py) on time_per_epoch and time_per_sample (the same
batches): the float64 sum of squares of the LSTM's and of the Dense layer's weights
(model.get_weights(), Gluon: the blocks' parameters) must each change over the timed batches.
Python 3.5 syntax; imports the framework of the variant, numpy and the standard library.
"""
import resource
import sys

import corpora
import real_work
import timing

try:
    from workloads import _params as params_
    from workloads import _versions
except ImportError:  # pragma: no cover
    import _params as params_
    import _versions


# the framework whose build information the stack fingerprint records, per variant
FRAMEWORK = {"mxnet": "mxnet", "tensorflow": "keras"}
# the framework whose device and float precision the harness sets and reads (bench/float_mode.py)
BACKEND = {"mxnet": "mxnet", "tensorflow": "tensorflow"}

GIVEN = params_.GIVEN  # the suite gives it: its one copy
DEFAULTS = {
    "dataset": "synthetic",
    "batch": 128,
    "seq_len": GIVEN,
    "hidden": GIVEN,
    "gpus": 0,
    "unroll": "unroll",        # "unroll" or "nounroll" (the TF-only 'Unroll Type FALSE' rows)
    "optimizer": GIVEN,
    "lr": GIVEN,
    "step": 3,                 # window stride of the text data sets
    "vocab": None,             # D: overrides 60 (synthetic) or the stand-in's characters (tests)
    "n_samples": None,         # synthetic samples (50,000) (tests)
    "n_tokens": None,          # stand-in characters (tests)
    "epoch_samples": None,     # samples per epoch for the extrapolation (default: the data's)
    "data_dir": None,          # real nietzsche.txt / wiki.train.raw; None: stand-in
    "sha256": None,
    "seed": 1234,
    "replicas_on_cpu": False,  # tests: run the gpus > 1 path on that many CPU devices instead
}

DATASETS = ("synthetic", "nietzsche", "wikitext2-char")
SYNTHETIC_N, SYNTHETIC_D = 50000, 60
PUBLISHED_WIKITEXT2_SAMPLES = 1562175  # the table's "No. of samples", inconsistent (section 3.4)


def _params(ctx):
    p = params_.resolve(ctx, "s002_keras", DEFAULTS)
    if p["dataset"] not in DATASETS:
        raise ValueError("dataset must be one of %s, got %r" % (", ".join(DATASETS), p["dataset"]))
    if p["unroll"] not in ("unroll", "nounroll"):
        raise ValueError("unroll must be 'unroll' or 'nounroll', got %r" % (p["unroll"],))
    if p["optimizer"] != "rmsprop":
        raise ValueError("source 002 trains with RMSprop only, got %r" % (p["optimizer"],))
    if ctx.variant not in ("tensorflow", "mxnet"):
        raise ValueError("variant must be 'tensorflow' or 'mxnet', got %r" % (ctx.variant,))
    if ctx.variant == "mxnet" and p["unroll"] != "unroll":
        raise ValueError("the MXNet backend of keras-mxnet always unrolled (section 3.1)")
    return p


def gpus_used(ctx, wanted):
    """GPUs the cell uses: 0 for a row published on a CPU (gpus 0); a row published on one GPU
    (gpus 1) runs on the job's device, so a CPU job measures it as context; gpus >= 2 needs that
    many. The device comes from the published number's hardware, as for every source."""
    if wanted == 1 and ctx.device != "gpu":
        return 0
    return wanted


def check_gpus(ctx, wanted, available):
    """Refuse a cell that needs more GPUs than this process can see."""
    if wanted > 0 and (ctx.device != "gpu" or available < wanted):
        raise RuntimeError("cell needs %d GPUs, this host has %d%s"
                           % (wanted, available if ctx.device == "gpu" else 0,
                              "" if ctx.device == "gpu" else " (job device is cpu)"))


# -----------------------------------------------------------------------------------------------
# Data: host numpy arrays, one shuffled batch at a time, as Keras fit slices them
# -----------------------------------------------------------------------------------------------
class Data(object):
    """The training arrays of one cell and a shuffled full-batch iterator over them."""

    def __init__(self, np, p):
        self.np = np
        self.batch = int(p["batch"])
        self.seq = int(p["seq_len"])
        self.rng = np.random.RandomState(int(p["seed"]))
        name = p["dataset"]
        if name == "synthetic":
            self._synthetic(p)
        else:
            self._text(p)
        if self.n < self.batch:
            raise ValueError("%d samples are fewer than one batch of %d" % (self.n, self.batch))
        self.epoch_samples = int(p["epoch_samples"] or self.n)
        self.order = None
        self.pos = 0
        self.shuffles = []

    def _synthetic(self, p):
        np = self.np
        n = int(p["n_samples"] or SYNTHETIC_N)
        d = int(p["vocab"] or SYNTHETIC_D)
        # np.random.choice([True, False], ...) in the original; the same uniform bits, faster
        self.x = self.rng.randint(0, 2, size=(n, self.seq, d)).astype(np.bool_).astype(np.float32)
        self.y = self.rng.randint(0, 2, size=(n, d)).astype(np.bool_).astype(np.float32)
        self.n, self.d = n, d
        self.ids = None
        self.label = {"name": "synthetic", "n_samples": n, "features": d, "stand_in": False,
                      "reading": "x random bool (N, %d, %d) cast to float32; y random multi-hot "
                                 "(N, %d) float32 (section 3.1)" % (self.seq, d, d),
                      "seed": int(p["seed"])}

    def _text(self, p):
        np = self.np
        name, step = p["dataset"], int(p["step"])
        if p["data_dir"]:
            if p["vocab"] or p["n_tokens"]:
                raise ValueError("vocab / n_tokens override the stand-in only, not data_dir")
            if name == "nietzsche":
                c = corpora.load_nietzsche(p["data_dir"], p["sha256"])
                ids, d, label = c.tokens, c.vocab_size, c.label()
            else:
                ids, vocab, label = corpora.load_wikitext2_char(p["data_dir"], p["sha256"])
                d = len(vocab)
        else:
            corpus = "nietzsche" if name == "nietzsche" else "wikitext-2-char-keras-mxnet"
            c = corpora.stand_in(corpus, "train", vocab_size=p["vocab"], n_tokens=p["n_tokens"])
            ids, d, label = c.tokens, c.vocab_size, c.label()
        self.ids = np.asarray(ids, dtype=np.int32)
        self.d = d
        # the Keras example: for i in range(0, len(text) - maxlen, step)
        self.starts = np.arange(0, len(self.ids) - self.seq, step, dtype=np.int64)
        self.n = len(self.starts)
        self.offsets = np.arange(self.seq, dtype=np.int64)
        self.eye = np.eye(d, dtype=np.float32)
        self.label = dict(label, windows=self.n, window=self.seq, stride=step)

    def shuffle(self):
        t0 = timing.clock()
        order = self.np.arange(self.n)
        self.rng.shuffle(order)  # Keras 2.1.6: np.random.shuffle(index_array) every epoch
        self.shuffles.append(timing.clock() - t0)
        self.order, self.pos = order, 0

    def next_batch(self):
        """Host arrays (x float32 [B, T, D], y float32 [B, D]) of the next full batch."""
        if self.order is None or self.pos + self.batch > self.n:
            self.shuffle()
        idx = self.order[self.pos:self.pos + self.batch]
        self.pos += self.batch
        if self.ids is None:
            return self.x[idx], self.y[idx]
        s = self.starts[idx]
        return self.eye[self.ids[s[:, None] + self.offsets]], self.eye[self.ids[s + self.seq]]


def peak_rss_mib():
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / 2.0 ** 20  # macOS reports bytes


# -----------------------------------------------------------------------------------------------
# Backends: each returns (train_step(x, y) -> loss, describe dict, gpu_memory() or None, sync
# description, weights() -> {part: float64 digest} for the real-work check)
# -----------------------------------------------------------------------------------------------
def _digest(np, arrays):
    """Float64 sum of squares (a plain sum would miss updates whose entries sum to zero, as a
    softmax layer's gradient does over the classes)."""
    return float(sum(np.square(np.asarray(a, dtype=np.float64)).sum() for a in arrays))


def keras_weights(np, model):
    """Digest per layer of model.get_weights() (Keras 2.1.6 and 3 alike, also through
    multi_gpu_model or a distribution strategy): the LSTM's kernel, recurrent kernel and bias come
    first, the Dense layer's kernel and bias last."""
    w = model.get_weights()
    return {"lstm": _digest(np, w[:-2]), "dense": _digest(np, w[-2:])}


def _tensorflow(ctx, p, data):
    import keras
    import tensorflow as tf

    gpus = int(p["gpus"]) if p["replicas_on_cpu"] else gpus_used(ctx, int(p["gpus"]))
    physical = tf.config.list_physical_devices("GPU")
    if p["replicas_on_cpu"]:  # tests: the multi-replica path on logical CPU devices
        # possible only before TensorFlow initialises its devices: a cell's own process
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(max(gpus, 1))])
        replicas = ["/cpu:%d" % i for i in range(gpus)]
    else:
        if gpus == 0 and physical:
            tf.config.set_visible_devices([], "GPU")  # a CPU row of the published table
        check_gpus(ctx, gpus, len(physical))
        replicas = ["/gpu:%d" % i for i in range(gpus)]
    keras.utils.set_random_seed(int(p["seed"]))

    def hard_sigmoid(x):  # Keras 2.x: clip(0.2 x + 0.5, 0, 1); Keras 3's has slope 1/6
        return keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)

    def build():
        model = keras.Sequential([
            keras.Input(shape=(data.seq, data.d)),
            keras.layers.LSTM(int(p["hidden"]), unroll=p["unroll"] == "unroll",
                              recurrent_activation=hard_sigmoid, use_cudnn=False),
            keras.layers.Dense(data.d, activation="softmax")])
        model.compile(loss="categorical_crossentropy", jit_compile=False,
                      optimizer=keras.optimizers.RMSprop(learning_rate=float(p["lr"])))
        return model

    if gpus <= 1:
        model = build()

        def train_step(x, y):
            return float(model.train_on_batch(x, y))
    else:  # never run on GPUs; tests run it on logical CPU devices (replicas_on_cpu)
        strategy = tf.distribute.MirroredStrategy(devices=replicas)
        with strategy.scope():
            model = build()
            model.optimizer.build(model.trainable_variables)
        per = data.batch // gpus
        if per * gpus != data.batch:
            raise ValueError("batch %d does not split over %d GPUs" % (data.batch, gpus))

        @tf.function
        def distributed_step(batch):
            logs = strategy.run(model.train_step, args=(batch,))
            return strategy.reduce("MEAN", logs["loss"], axis=None)

        def train_step(x, y):
            def part(rctx):  # replica i gets rows [i * per, (i + 1) * per) of the global batch
                i = rctx.replica_id_in_sync_group
                return (tf.constant(x[i * per:(i + 1) * per]),
                        tf.constant(y[i * per:(i + 1) * per]))
            model.reset_metrics()
            return float(distributed_step(
                strategy.experimental_distribute_values_from_function(part)))

    def gpu_memory():  # never run on a GPU
        peaks = [tf.config.experimental.get_memory_info("GPU:%d" % i)["peak"] / 2.0 ** 20
                 for i in range(gpus)]
        return peaks, ("tf.config.experimental.get_memory_info('GPU:i')['peak'] in MiB (GPU 0 "
                       "in samples, all GPUs in extra); the published TF figures are TF 1.8's "
                       "default grab-almost-all allocation, not usage (section 3.2)")

    ctx.substitute("Keras 2.1.6 on TensorFlow 1.8 (model.fit, session feeds)",
                   "tf.keras %s on TensorFlow %s: Sequential model, train_on_batch in a "
                   "Keras-2.1.6-style fit loop" % (keras.__version__, tf.__version__),
                   "TensorFlow 1.8 and Keras 2.1.6 have no wheels for Python 3.11; Keras 3's "
                   "fit() feeds arrays through tf.data with prefetch, unlike 2.1.6's per-batch "
                   "numpy slicing, so that loop is restated around train_on_batch")
    ctx.substitute("LSTM implementation=1 (four separate gate products), hard_sigmoid",
                   "Keras 3 LSTMCell (one fused gate product), hard_sigmoid clip(0.2x+0.5, 0, "
                   "1) passed explicitly, use_cudnn=False, jit_compile=False",
                   "Keras 3 has no implementation=1; the 2.x hard_sigmoid keeps the original "
                   "arithmetic and rules out the cuDNN kernel, which Keras 2.1.6's LSTM never "
                   "used; no XLA, as TF 1.8 ran without it")
    if gpus > 1:
        ctx.substitute("keras.utils.multi_gpu_model(model, gpus=%d, cpu_merge=False)" % gpus,
                       "tf.distribute.MirroredStrategy over %s: the global batch split on the "
                       "host, model.train_step run per replica (as fit does), gradients "
                       "all-reduced" % ", ".join(replicas),
                       "multi_gpu_model was removed from Keras; train_on_batch under a strategy "
                       "would give every replica the whole batch")
    desc = {"framework": "keras", "framework_version": keras.__version__,
            "backend": "tensorflow", "backend_version": tf.__version__,
            "api": "keras.Sequential([LSTM(%d, unroll=%s), Dense(softmax)]).train_on_batch"
                   % (int(p["hidden"]), p["unroll"] == "unroll")}
    sync = ("implicit: train_on_batch returns the loss as a host float" if gpus <= 1 else
            "implicit: the replica-averaged loss is read to the host as a float")
    on_gpu = gpus > 0 and not p["replicas_on_cpu"]
    return (train_step, desc, (gpu_memory if on_gpu else None), sync,
            lambda: keras_weights(data.np, model))


def _keras2(ctx, p, data):
    """Keras 2.x: Keras 2.1.6 on TensorFlow 1.8 (variant tensorflow) or keras-mxnet 2.1.6.1 on
    MXNet 1.2 (variant mxnet), the seed's own API and model. The keras-mxnet 2.1.6.1 / MXNet 1.2.0
    CPU path runs here (Python 3.6 environment, tests/stacks/test_workloads_002.py); Keras 2.1.6 on TF 1.8
    and the GPU paths never ran. Its calls are checked against the Keras 2.1.6 / TensorFlow 1.8 /
    MXNet 1.2 API lists by tests/containers/test_api_paths.py."""
    import keras

    gpus = gpus_used(ctx, int(p["gpus"]))
    seed = int(p["seed"])
    if ctx.variant == "tensorflow":
        import tensorflow as tf
        tf.set_random_seed(seed)
        backend_version = tf.__version__
        available = _tf1_gpu_count() if ctx.device == "gpu" else 0
    else:
        import mxnet as mx
        mx.random.seed(seed)
        backend_version = mx.__version__
        available = len(mx.test_utils.list_gpus()) if ctx.device == "gpu" else 0
    if p["replicas_on_cpu"]:
        raise ValueError("replicas_on_cpu is a test of the Keras 3 / Gluon paths only")
    check_gpus(ctx, gpus, available)
    model = keras.models.Sequential()
    model.add(keras.layers.LSTM(int(p["hidden"]), input_shape=(data.seq, data.d),
                                unroll=p["unroll"] == "unroll"))
    model.add(keras.layers.Dense(data.d, activation="softmax"))
    if gpus > 1:  # never run on GPUs
        if ctx.variant == "tensorflow":
            model = keras.utils.multi_gpu_model(model, gpus=gpus, cpu_merge=False)
        else:
            model = keras.utils.multi_gpu_model(model, gpus=gpus)
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.RMSprop(lr=float(p["lr"])))

    def train_step(x, y):
        return float(model.train_on_batch(x, y))

    def gpu_memory():  # never run on a GPU
        if ctx.variant == "tensorflow":
            return _tf1_peak_memory(keras, gpus), (
                "tf.contrib.memory_stats.MaxBytesInUse() per GPU in Keras's session, in MiB (GPU 0 "
                "in samples, all GPUs in extra); the published TF figures are TF 1.8's default "
                "grab-almost-all allocation, not usage (section 3.2)")
        return _nvidia_smi_used(gpus), (
            "MiB in use per GPU from nvidia-smi --query-gpu=memory.used after the timed batches "
            "(MXNet 1.2 has no memory query; MXNet's pool included); the published MXNet figures "
            "are presumably nvidia-smi (unverified, section 3.2)")

    ctx.substitute("Keras %s model.fit over whole epochs" % keras.__version__,
                   "the same compiled model trained with train_on_batch in a Keras-2.1.6-style "
                   "fit loop (index shuffled every epoch, one host slice per batch)",
                   "one timed sample per batch instead of whole epochs (budgeted runs)")
    backend = "tensorflow" if ctx.variant == "tensorflow" else "mxnet"
    desc = {"framework": "keras", "framework_version": keras.__version__, "backend": backend,
            "backend_version": backend_version,
            "api": "keras.models.Sequential([LSTM(%d, unroll=%s), Dense(softmax)]) with Keras 2 "
                   "defaults (hard_sigmoid, implementation=1), RMSprop(lr=%s), train_on_batch%s"
                   % (int(p["hidden"]), p["unroll"] == "unroll", p["lr"],
                      "; multi_gpu_model(gpus=%d)" % gpus if gpus > 1 else "")}
    ctx.note("The source's own Keras %s code on the %s %s backend%s; its calls are checked against "
             "the Keras 2.1.6 and %s API lists (tests/containers/test_api_paths.py)."
             % (keras.__version__, backend, backend_version,
                " (GPU paths never run)" if backend == "mxnet" else
                " (this path has never run on the project machines: no Keras 2.1.6 on TF 1.8 here)",
                backend))
    sync = "implicit: train_on_batch returns the loss as a host float"
    on_gpu = gpus > 0
    return (train_step, desc, (gpu_memory if on_gpu else None), sync,
            lambda: keras_weights(data.np, model))


def _tf1_gpu_count():
    """GPUs TensorFlow 1.x sees (never run here)."""
    from tensorflow.python.client import device_lib
    return sum(1 for d in device_lib.list_local_devices() if d.device_type == "GPU")


def _tf1_peak_memory(keras, gpus):
    """Peak bytes in use per GPU, TensorFlow 1.x contrib memory_stats (never run here)."""
    import tensorflow as tf
    ops = []
    for i in range(gpus):
        with tf.device("/gpu:%d" % i):
            ops.append(tf.contrib.memory_stats.MaxBytesInUse())
    return [v / 2.0 ** 20 for v in keras.backend.get_session().run(ops)]


def _nvidia_smi_used(gpus):
    """MiB in use per GPU as nvidia-smi reports it (never run here)."""
    import subprocess
    out = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used",
                                   "--format=csv,noheader,nounits"]).decode()
    return [float(v) for v in out.split()][:gpus]


def _mxnet(ctx, p, data):
    import mxnet as mx
    from mxnet import autograd, gluon

    gpus = int(p["gpus"]) if p["replicas_on_cpu"] else gpus_used(ctx, int(p["gpus"]))
    if p["replicas_on_cpu"]:  # tests: the multi-context path on CPU contexts
        contexts = [mx.cpu(i) for i in range(max(gpus, 1))]
    else:
        check_gpus(ctx, gpus, mx.context.num_gpus() if ctx.device == "gpu" else 0)
        contexts = [mx.gpu(i) for i in range(gpus)] if gpus > 0 else [mx.cpu()]
    ctx.record_ran_on("gpu" if gpus > 0 and not p["replicas_on_cpu"] else "cpu",
                      "MXNet contexts %s" % ", ".join(str(c) for c in contexts))
    mx.random.seed(int(p["seed"]))
    hidden, seq, d = int(p["hidden"]), data.seq, data.d

    def hard_sigmoid(x, name=None):  # Keras 2.x hard_sigmoid, as keras-mxnet computed it
        f = mx.sym if isinstance(x, mx.sym.Symbol) else mx.nd
        return f.hard_sigmoid(x, alpha=0.2, beta=0.5, name=name)

    class CharLSTM(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super(CharLSTM, self).__init__(**kwargs)
            with self.name_scope():
                self.cell = gluon.rnn.LSTMCell(
                    hidden, input_size=d, recurrent_activation=hard_sigmoid,
                    i2h_weight_initializer=mx.init.Xavier("uniform", "avg", 3),
                    h2h_weight_initializer=mx.init.Orthogonal(),
                    i2h_bias_initializer=mx.init.LSTMBias(forget_bias=1.0))
                self.dense = gluon.nn.Dense(d, in_units=hidden,
                                            weight_initializer=mx.init.Xavier("uniform", "avg", 3))

        def hybrid_forward(self, F, x):
            outputs, _ = self.cell.unroll(seq, x, layout="NTC", merge_outputs=False)
            return self.dense(outputs[-1])

    net = CharLSTM()
    net.initialize(ctx=contexts)
    net.hybridize(static_alloc=True, static_shape=True)
    # softmax + categorical cross-entropy on the logits: -sum(y * log_softmax(z)) per sample
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False)
    trainer = gluon.Trainer(net.collect_params(), "rmsprop",
                            {"learning_rate": float(p["lr"]), "gamma1": 0.9, "epsilon": 1e-7})
    np = data.np
    batch = data.batch
    if batch % len(contexts):
        raise ValueError("batch %d does not split over %d GPUs" % (batch, len(contexts)))

    def train_step(x, y):
        xs = [mx.nd.array(part, ctx=c) for part, c in zip(np.split(x, len(contexts)), contexts)]
        ys = [mx.nd.array(part, ctx=c) for part, c in zip(np.split(y, len(contexts)), contexts)]
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        autograd.backward(losses)
        trainer.step(batch)  # gradients summed over the batch, divided by it: mean loss
        value = sum(float(v.sum().asscalar()) for v in losses) / batch  # Keras reads the loss
        mx.nd.waitall()  # the update too, so each timed batch holds all of its own work
        return value

    def gpu_memory():  # never run on a GPU
        used = []
        for i in range(gpus):
            free, total = mx.context.gpu_memory_info(i)
            used.append((total - free) / 2.0 ** 20)
        return used, ("MiB in use on GPU 0 after the timed batches (total - free from "
                      "mx.context.gpu_memory_info, the nvidia-smi view: MXNet's pool included; "
                      "all GPUs in extra); the published MXNet figures are presumably "
                      "nvidia-smi (unverified, section 3.2)")

    ctx.substitute("keras-mxnet 2.1.6 (Keras Sequential, LSTM unroll=True, Module executor)",
                   "MXNet %s Gluon: hybridized gluon.rnn.LSTMCell unrolled over %d steps "
                   "(LSTMCell.unroll, static graph) + Dense; RMSProp; gluon Trainer" % (
                       mx.__version__, seq),
                   "no keras-mxnet environment works on this machine (no Python 3.6 with "
                   "MXNet 1.2.0; see the cell's `environment` attempts): keras-mxnet does not "
                   "import on Python 3.11 (collections.Iterable), and on MXNet 1.9.1 building "
                   "this model fails (ValueError: Cannot apply softmax to a tensor that is 1D)")
    ctx.substitute("Keras RMSprop(lr=0.01, rho=0.9, epsilon=1e-7): w -= lr g / (sqrt(n) + eps)",
                   "MXNet RMSProp(learning_rate=0.01, gamma1=0.9, epsilon=1e-7): "
                   "w -= lr g / sqrt(n + eps)",
                   "MXNet's fused rmsprop_update places epsilon inside the root; same cost")
    ctx.substitute("Keras softmax output + categorical_crossentropy (clipped log)",
                   "gluon SoftmaxCrossEntropyLoss(sparse_label=False) on the logits",
                   "the same loss per sample, computed as log_softmax")
    if gpus > 1:
        ctx.substitute("keras.utils.multi_gpu_model(model, gpus=%d, cpu_merge=False)" % gpus,
                       "one MXNet context per device (%s), the batch split on the host, one "
                       "Trainer (gradients reduced by the kvstore)"
                       % ", ".join(str(c) for c in contexts), "no Keras on MXNet here")
    desc = {"framework": "mxnet", "framework_version": mx.__version__,
            "api": "mxnet.gluon.rnn.LSTMCell.unroll(%d) hybridized (unroll kind: LSTMCell "
                   "unrolled, not the fused gluon.rnn.LSTM) + gluon.nn.Dense" % seq}
    sync = ("loss read to the host (asscalar), then mx.nd.waitall() inside the timer: MXNet "
            "runs asynchronously")
    on_gpu = gpus > 0 and not p["replicas_on_cpu"]

    def weights():  # the first context's copy of each parameter (the replicas are kept equal)
        return dict((part, _digest(np, [q.list_data()[0].asnumpy()
                                        for q in block.collect_params().values()]))
                    for part, block in (("lstm", net.cell), ("dense", net.dense)))
    return train_step, desc, (gpu_memory if on_gpu else None), sync, weights


def _backend(ctx):
    """Keras 2.x where the stack installs it (the GPU images: the original's API), else Keras 3 over
    TensorFlow (variant tensorflow) or MXNet Gluon (variant mxnet, no Keras)."""
    if _versions.available("keras"):
        import keras
        if not _versions.at_least(keras, 3):
            return _keras2
    if ctx.variant == "tensorflow":
        return _tensorflow
    return _mxnet


# -----------------------------------------------------------------------------------------------
class FitCallbacks(object):
    """What Keras 2.1.6's fit ran after every batch, outside the train step but inside the epoch
    that TimeHistory timed: BaseLogger's running loss total and ProgbarLogger's progress bar
    (verbose=1: redrawn at most every 0.05 s and at the epoch's last batch). Written out here (the
    kit's loop is not Keras's fit), to the cell's log."""

    INTERVAL = 0.05  # keras.utils.Progbar(interval=0.05)

    def __init__(self, batches_per_epoch, batch):
        self.target = max(1, int(batches_per_epoch)) * int(batch)
        self.batch = int(batch)
        self.seen = 0
        self.total = 0.0
        self.last = 0.0
        self.lines = 0

    def on_batch_end(self, loss):
        self.seen += self.batch
        self.total += float(loss) * self.batch
        now = timing.clock()
        if now - self.last < self.INTERVAL and self.seen < self.target:
            return
        self.last = now
        done = min(self.seen, self.target)
        width = 30
        bar = "=" * max(0, int(width * done / self.target) - 1) + ">"
        sys.stdout.write("%d/%d [%s%s] - loss: %.4f\n" % (done, self.target, bar,
                                                         "." * (width - len(bar)),
                                                         self.total / self.seen))
        sys.stdout.flush()
        self.lines += 1
        if self.seen >= self.target:  # a new epoch: Keras starts a new bar and new totals
            self.seen, self.total = 0, 0.0


def record_as_published(ctx, t, n_samples, batch, callbacks=None):
    """The source's figures from the first epoch as the loop ran it (TimeHistory: wall time from
    on_epoch_begin to on_epoch_end of a fit epoch): every batch of the epoch, the first (lazy graph
    set-up, the first shuffle) included, plus the time between batches (the progress-bar and
    loss-logging callbacks, the sampler's bookkeeping). Keras's 'us/step' = that epoch time / the
    epoch's samples. A run shorter than an epoch records a labelled partial estimate."""
    seconds = list(t["warmup_seconds"]) + list(t["raw_seconds"])
    per_epoch = n_samples // batch  # full batches, as this loop draws them
    gap = max(0.0, t["wall_seconds"] - sum(seconds)) / len(seconds)
    first = seconds[:per_epoch]
    seg = [{"seconds": first, "warmup": len(t["warmup_seconds"]), "other_seconds": gap * len(first),
            "items_per_iteration": float(n_samples) / per_epoch}]
    partial_batch = n_samples - per_epoch * batch
    tail = (" (the last partial batch of %d samples is not run; its samples are counted at a full "
            "batch's time)" % partial_batch) if partial_batch else ""
    ctx.record_as_published(
        "time_per_epoch", "epoch_wall_time",
        "wall time of one fit epoch from on_epoch_begin to on_epoch_end (TimeHistory): %d batches "
        "of %d samples, the first epoch's set-up, the per-batch host slicing and transfer and the "
        "callbacks included%s" % (per_epoch, batch, tail),
        "time", seg, planned_iterations=per_epoch)
    ctx.record_as_published(
        "time_per_sample", "epoch_wall_time_per_sample",
        "Keras's 'us/step' on the progress bar: the epoch's wall time / its %d samples, in "
        "microseconds" % n_samples,
        "time_per_item", seg, planned_iterations=per_epoch, scale=1e6)
    ctx.extra["fit_callbacks"] = {"progress_lines": callbacks.lines if callbacks else None,
                                  "seconds_between_batches": gap,
                                  "how": FitCallbacks.__doc__.split("\n\n")[0]}


def _record(ctx, name, t, unit, items, values, derivation, method, sync):
    m = ctx.record_timed(name, t, "s", "s", items, method, sync)
    m["unit"] = unit
    m["samples"] = values
    m["derivation"] = derivation
    return m


def run(ctx):
    import numpy as np

    p = _params(ctx)
    np.random.seed(int(p["seed"]))
    t0 = timing.clock()
    data = Data(np, p)
    data_s = timing.clock() - t0
    train_step, desc, gpu_memory, sync, weights = _backend(ctx)(ctx, p, data)
    ctx.describe(**desc)
    if int(p["gpus"]) == 1 and gpus_used(ctx, 1) == 0:
        ctx.note("The published row ran on one GPU; this job's device is the CPU, so the same "
                 "model runs on the CPU as context (not a GPU measurement).")

    losses = []

    def step():
        x, y = data.next_batch()
        loss = train_step(x, y)
        losses.append(loss)
        return loss

    budget = ctx.budget("time_per_epoch")
    if ctx.protocol == "published" and budget.published_count is None:
        budget.published_count = -(-data.epoch_samples // data.batch)  # one whole epoch
    callbacks = FitCallbacks(data.n // data.batch, data.batch)
    # every layer's weights must move over the timed batches (digests taken after the warm-up)
    check = real_work.Check("train", state=weights)
    t = timing.sample(step, budget, after=callbacks.on_batch_end, before_timed=check.before)
    losses = losses[len(t["warmup_seconds"]):]
    batch, n = data.batch, data.epoch_samples
    per_epoch_batches = float(n) / batch
    shuffle_s = data.shuffles[0]
    fit_method = ("one batch of the Keras fit loop: next slice of the epoch's shuffled index "
                  "array, host numpy gather of x [%d, %d, %d] and y [%d, %d] (float32%s), "
                  "transfer into the framework, forward, loss, backward, RMSprop update, loss "
                  "read back" % (batch, data.seq, data.d, batch, data.d,
                                 "" if data.ids is None else ", one-hot built from the window's "
                                 "character ids"))
    _record(ctx, "time_per_epoch", t, "s", batch,
            [s * per_epoch_batches + shuffle_s for s in t["raw_seconds"]],
            "seconds * %d / %d + %.6f (per-epoch shuffle)" % (n, batch, shuffle_s),
            "EXTRAPOLATED, not a full epoch: each value is one timed batch scaled to an epoch of "
            "%d samples (%d / %d batches; the last partial batch counted pro rata) plus the "
            "per-epoch index shuffle measured once. Batch: %s" % (n, n, batch, fit_method), sync)
    _record(ctx, "time_per_sample", t, "us", batch,
            [1e6 * s / batch for s in t["raw_seconds"]], "1e6 * seconds / %d" % batch,
            "Keras's 'us/step' (microseconds per sample) from one timed batch: %s" % fit_method,
            sync)

    record_as_published(ctx, t, data.n, data.batch, callbacks)
    ctx.check_real_work(["time_per_epoch", "time_per_sample"], check, t)  # the same samples

    if gpu_memory is not None:  # never run on a GPU
        used, method = gpu_memory()
        ctx.record_value("gpu_memory", [used[0]], "MiB", method)
        ctx.extra["gpu_memory_all_gpus_mib"] = used
    else:
        ctx.record_value("gpu_memory", [peak_rss_mib()], "MiB",
                         "HOST peak RSS of the process in MiB (resource.getrusage ru_maxrss), "
                         "NOT GPU memory: this cell ran on the CPU; it includes the framework, "
                         "the data arrays and the model")

    published = {"synthetic": SYNTHETIC_N, "nietzsche": 200285,
                 "wikitext2-char": PUBLISHED_WIKITEXT2_SAMPLES}[p["dataset"]]
    mean_batch = sum(t["raw_seconds"]) / len(t["raw_seconds"])
    ctx.extra["extrapolation"] = {
        "time_per_epoch": "seconds per batch x epoch samples / batch + shuffle seconds; not a "
                          "measured epoch",
        "epoch_samples": n, "batch": batch, "batches_per_epoch": per_epoch_batches,
        "shuffle_seconds": data.shuffles, "mean_seconds_per_batch": mean_batch,
        "published_samples": published,
        "mean_time_per_epoch_at_published_samples": mean_batch * published / batch + shuffle_s,
        "timed_batches": len(t["raw_seconds"]), "first_batch_seconds": t["warmup_seconds"][:1],
    }
    if p["dataset"] == "wikitext2-char":
        ctx.extra["extrapolation"]["note"] = (
            "the published 'No. of samples 1562175' contradicts the published seconds and "
            "us/step, which imply ~3.38 M samples (section 3.4 item 1); time_per_epoch uses "
            "this run's %d windows%s; the figure at 1,562,175 is given beside it"
            % (n, " (stand-in of 10.1 M characters, an inference)" if data.label.get("stand_in")
               else ""))
    ctx.extra["dataset"] = data.label
    ctx.extra["data_build_seconds"] = data_s
    ctx.extra["loss"] = losses
    ctx.extra["model"] = {"hidden": int(p["hidden"]), "seq_len": data.seq, "features": data.d,
                          "unroll": p["unroll"] == "unroll", "gpus": int(p["gpus"]),
                          "replicas_on_cpu": bool(p["replicas_on_cpu"]),
                          "parameters": 4 * int(p["hidden"]) * (data.d + int(p["hidden"]) + 1)
                          + data.d * (int(p["hidden"]) + 1)}
    if data.label.get("stand_in"):
        ctx.substitute("%s text" % p["dataset"],
                       "deterministic stand-in character ids (bench/corpora.py %s, %d characters, "
                       "%d symbols)" % (corpora.GENERATOR, len(data.ids), data.d),
                       "no params.data_dir given; speed depends on shapes only")
    ctx.note("Samples are single batches of the fit loop after %d untimed warm-up batch(es); the "
             "original timed whole epochs (the first epoch includes graph set-up; which epoch "
             "was reported is unknown, section 3.4)." % len(t["warmup_seconds"]))
    ctx.note("Only full batches are drawn; the index array is reshuffled when an epoch's full "
             "batches are used up.")
