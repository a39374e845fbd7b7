"""Source 002 (awslabs/keras-apache-mxnet RNN benchmark) on Keras 3 with the JAX backend.

The model, data and timing of s002_keras (its Data class and recording are reused): Sequential([
LSTM(128, unroll, hard_sigmoid recurrent activation), Dense(D, softmax)]), categorical
cross-entropy, RMSprop(lr=0.01), one sample = one batch of a Keras-2.1.6-style fit loop (shuffled
index slice, host numpy gather, train_on_batch, loss read back), time_per_epoch EXTRAPOLATED from
it. The backend is JAX: KERAS_BACKEND=jax is set before Keras is first imported in the cell's
process, and the train step is XLA-compiled (Keras's jit_compile, the JAX backend's default), so
the first batch (a warm-up batch, at least one) includes tracing and compilation. Source 002
published no JAX row (Keras 2.1.6 had no JAX backend): this is the modern control arm.
CPU (gpus 0) or one GPU (never run on a GPU); no multi-GPU path.
Real-work check as s002_keras (per-layer digests of model.get_weights() must change).
Python 3.5 syntax; imports keras, jax, numpy and the standard library.
"""
import os

import real_work
import timing

try:
    from workloads import s002_keras as base
except ImportError:  # pragma: no cover
    import s002_keras as base

FRAMEWORK = "keras"  # the fingerprint records Keras and, through it, the JAX backend
BACKEND = "jax"  # whose device and float precision the harness sets and reads (bench/float_mode.py)
VARIANTS = ("jax",)


def _params(ctx):
    p = base.params_.resolve(ctx, "s002_jax", base.DEFAULTS, VARIANTS)
    if p["dataset"] not in base.DATASETS or p["optimizer"] != "rmsprop":
        raise ValueError("dataset must be one of %s with optimizer rmsprop"
                         % ", ".join(base.DATASETS))
    if int(p["gpus"]) > 1 or p["replicas_on_cpu"]:
        raise ValueError("s002_jax has no multi-GPU path (params.gpus=%s)" % p["gpus"])
    return p


def _keras_on_jax():
    if os.environ.get("KERAS_BACKEND", "jax") != "jax":
        raise RuntimeError("KERAS_BACKEND=%s in the environment; s002_jax needs jax"
                           % os.environ["KERAS_BACKEND"])
    os.environ["KERAS_BACKEND"] = "jax"  # read when keras is first imported
    import keras
    if keras.backend.backend() != "jax":
        raise RuntimeError("keras was already imported with backend %r in this process"
                           % keras.backend.backend())
    return keras


def run(ctx):
    import numpy as np

    p = _params(ctx)
    gpus = int(p["gpus"])
    import jax
    if gpus == 0:  # a CPU row of the published table, also on a GPU host
        jax.config.update("jax_platforms", "cpu")
    keras = _keras_on_jax()
    try:
        available = len(jax.devices("gpu")) if gpus > 0 and ctx.device == "gpu" else 0
    except RuntimeError:
        available = 0
    base.check_gpus(ctx, gpus, available)
    np.random.seed(int(p["seed"]))
    t0 = timing.clock()
    data = base.Data(np, p)
    data_s = timing.clock() - t0
    keras.utils.set_random_seed(int(p["seed"]))

    def hard_sigmoid(x):  # Keras 2.x: clip(0.2 x + 0.5, 0, 1); Keras 3's has slope 1/6
        return keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)

    model = keras.Sequential([
        keras.Input(shape=(data.seq, data.d)),
        keras.layers.LSTM(int(p["hidden"]), unroll=p["unroll"] == "unroll",
                          recurrent_activation=hard_sigmoid, use_cudnn=False),
        keras.layers.Dense(data.d, activation="softmax")])
    model.compile(loss="categorical_crossentropy", jit_compile=True,
                  optimizer=keras.optimizers.RMSprop(learning_rate=float(p["lr"])))
    losses = []

    def step():
        x, y = data.next_batch()
        losses.append(float(model.train_on_batch(x, y)))

    budget = ctx.budget("time_per_epoch")
    if ctx.protocol == "published":
        if budget.published_count is None:
            budget.published_count = -(-data.epoch_samples // data.batch)
    else:
        budget.warmup = max(1, budget.warmup)  # the first batch traces and compiles
    # every layer's weights must move over the timed batches (digests taken after the warm-up)
    check = real_work.Check("train", state=lambda: base.keras_weights(np, model))
    t = timing.sample(step, budget, before_timed=check.before)
    losses = losses[len(t["warmup_seconds"]):]
    batch, n = data.batch, data.epoch_samples
    shuffle_s = data.shuffles[0]
    sync = "implicit: train_on_batch returns the loss as a host float (jax arrays synced)"
    method = ("one batch of the Keras fit loop: next slice of the epoch's shuffled index array, "
              "host numpy gather of x [%d, %d, %d] and y [%d, %d], model.train_on_batch (JAX "
              "backend, XLA-compiled step: forward, loss, gradients, RMSprop update), loss read "
              "back" % (batch, data.seq, data.d, batch, data.d))
    base._record(ctx, "time_per_epoch", t, "s", batch,
                 [s * float(n) / batch + shuffle_s for s in t["raw_seconds"]],
                 "seconds * %d / %d + %.6f (per-epoch shuffle)" % (n, batch, shuffle_s),
                 "EXTRAPOLATED, not a full epoch: one timed batch scaled to an epoch of %d "
                 "samples plus the per-epoch index shuffle measured once. Batch: %s"
                 % (n, method), sync)
    base._record(ctx, "time_per_sample", t, "us", batch,
                 [1e6 * s / batch for s in t["raw_seconds"]], "1e6 * seconds / %d" % batch,
                 "Keras's 'us/step' (microseconds per sample) from one timed batch: " + method,
                 sync)
    ctx.check_real_work(["time_per_epoch", "time_per_sample"], check, t)  # the same samples
    if gpus > 0:  # never run on a GPU
        stats = jax.devices("gpu")[0].memory_stats() or {}
        ctx.record_value("gpu_memory", [stats.get("peak_bytes_in_use", 0) / 2.0 ** 20], "MiB",
                         "jax device memory_stats()['peak_bytes_in_use'] of GPU 0 in MiB")
    else:
        ctx.record_value("gpu_memory", [base.peak_rss_mib()], "MiB",
                         "HOST peak RSS of the process in MiB (resource.getrusage ru_maxrss), "
                         "NOT GPU memory: this cell ran on the CPU")
    ctx.describe(framework="keras", framework_version=keras.__version__, backend="jax",
                 backend_version=jax.__version__,
                 api="keras.Sequential([LSTM(%d, unroll=%s), Dense(softmax)]).train_on_batch, "
                     "KERAS_BACKEND=jax, jit_compile=True" % (int(p["hidden"]),
                                                              p["unroll"] == "unroll"))
    ctx.substitute("Keras 2.1.6 on TensorFlow 1.8 / MXNet 1.2",
                   "Keras %s on JAX %s (XLA-compiled train step)" % (keras.__version__,
                                                                     jax.__version__),
                   "modern control arm: the same model and fit loop on a current backend; "
                   "Keras 2.1.6 had no JAX backend")
    ctx.substitute("LSTM implementation=1 (four separate gate products), hard_sigmoid",
                   "Keras 3 LSTMCell (one fused gate product), hard_sigmoid clip(0.2x+0.5, 0, 1) "
                   "passed explicitly, use_cudnn=False",
                   "Keras 3 has no implementation=1; the 2.x hard_sigmoid keeps the arithmetic")
    if data.label.get("stand_in"):
        ctx.substitute("%s text" % p["dataset"], "deterministic stand-in character ids "
                       "(bench/corpora.py)", "no params.data_dir given; speed depends on shapes "
                       "only")
    ctx.extra["first_batch_seconds"] = t["warmup_seconds"][:1]
    ctx.extra["dataset"] = data.label
    ctx.extra["data_build_seconds"] = data_s
    ctx.extra["loss"] = losses
    ctx.extra["extrapolation"] = {"epoch_samples": n, "batch": batch,
                                  "shuffle_seconds": data.shuffles,
                                  "timed_batches": len(t["raw_seconds"])}
    ctx.note("The first batch (warm-up, not timed) traces the Keras train step and compiles it "
             "with XLA: %.2f s here." % t["warmup_seconds"][0] if t["warmup_seconds"] else
             "No warm-up batch (protocol published): the first timed batch includes compilation.")
