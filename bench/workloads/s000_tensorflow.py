"""Source 000 (rnn-benchmarks) single-layer LSTM regression, TensorFlow graph API.

Variants (the original script's -n): "basic_lstm" (BasicLSTMCell + dynamic_rnn), "fused_lstm"
(LSTMBlockFusedCell, i.e. the BlockLSTM kernel), "cudnn_lstm" (CudnnLSTM, params all ones), each AS
PUBLISHED with defect d000-tf-transfers (a host-to-device feed every iteration, and a full-sequence
fetch in forward). "<variant>_fixed" is the same network CORRECTED, not a published configuration:
the pre-generated inputs and the target live in device variables uploaded once before timing, an
iteration feeds only the index of the input to use (a 4-byte scalar), and forward fetches the last
step's output [batch, hidden] only, as the Theano script's f_test returns h[-1]; train fetches
nothing, as published. The upload is part of the fixed variants' compile_time (its own entry in
extra.compile_breakdown_s).

Workload (seed_workloads.md section 1): a placeholder x [seq, batch, hidden] (time-major) and
y [batch, hidden]; one LSTM layer with input size = hidden size; cost = SUM of squared errors of
output[-1] vs y; GradientDescentOptimizer(0.01). Each timed iteration feeds one of the pre-generated
uniform random inputs, picked at random, as the original did; forward fetches the FULL output
sequence to host, train fetches nothing but runs the train op.

Timing follows the original TF script: the compile timer starts AFTER the RNN graph is built and
covers the loss, minimize (the gradient graph), Session creation, variable initialisation and one
train step. Per-example values = seconds per batch / batch.

Runs through the TF1 graph API: tf.compat.v1 on TensorFlow >= 1.13 (graph + Session, placeholders,
feed_dict), plain `tf` on older TF 1.x (the tf-1.2 GPU image: the original tf.contrib classes). The
API is chosen by the TensorFlow version (_versions.at_least; each stack's choice is checked against
that version's API list by tests/containers/test_api_paths.py). Branches marked "never run here" are written
for a TF 1.x stack (tf.contrib) or a GPU and were never executed by this kit's authors.
Real-work check (bench/real_work.py): forward returns what it fetched, whose digest must match the
same fetch rerun untimed on the same fed input (kept in a one-slot box by feed()); train must move
the model's weights. Where the cudnn variants' all-ones weights (defect d000-cudnn-ones) saturate
every gate so that the gradient is exactly zero (the published shapes; checked once, untimed, after
the compile step), the weights are expected to stay still instead: the defect seen by running.

Python 3.5 syntax; imports only tensorflow, numpy and the standard library.
"""
import os
import random

import real_work
import timing

try:  # imported as workloads.s000_tensorflow by the harness, or directly in tests
    from workloads import _lstm000 as common
    from workloads import _versions
except ImportError:  # pragma: no cover
    import _lstm000 as common
    import _versions

FRAMEWORK = "tensorflow"
VARIANTS = ("basic_lstm", "fused_lstm", "cudnn_lstm", "basic_lstm_fixed", "fused_lstm_fixed",
            "cudnn_lstm_fixed")
LEARNING_RATE = 0.01
ORIGINAL_API = {
    "basic_lstm": "tf.contrib.rnn.BasicLSTMCell + tf.nn.dynamic_rnn(time_major=True)",
    "fused_lstm": "tf.contrib.rnn.LSTMBlockFusedCell (the BlockLSTM op)",
    "cudnn_lstm": "tf.contrib.cudnn_rnn.CudnnLSTM (cuDNN, opaque params all ones)",
}


def _v1(tf):
    """The TF1 graph API: tf.compat.v1 from TF 1.13 on, else tf itself."""
    if _versions.at_least(tf, 1, 13):
        return tf.compat.v1
    return tf


def _has_contrib(tf):
    """tf.contrib (and the original classes) exist in TensorFlow 1.x only."""
    return not _versions.at_least(tf, 2)


# ---- basic_lstm -----------------------------------------------------------------------------

class _BasicLSTMEquivalent(object):
    """The arithmetic of TF 1.x BasicLSTMCell, for tf.compat.v1.nn.dynamic_rnn when no Keras 2
    (tf_keras) is installed to provide the cell: kernel [in + h, 4h] (get_variable's default
    glorot-uniform init), bias [4h] zeros, gates i, j, f, o from one matmul over concat([x, h]),
    forget_bias 1.0 added inside, c' = c*sigmoid(f + 1) + sigmoid(i)*tanh(j), h' = tanh(c')*sigmoid(o),
    state (c, h)."""

    def __init__(self, v1, num_units, input_size):
        self._v1 = v1
        self._n = num_units
        with v1.variable_scope("rnn/basic_lstm_cell"):
            self.kernel = v1.get_variable("kernel", [input_size + num_units, 4 * num_units],
                                          dtype="float32")
            self.bias = v1.get_variable("bias", [4 * num_units], dtype="float32",
                                        initializer=v1.zeros_initializer())

    @property
    def state_size(self):
        return (self._n, self._n)

    @property
    def output_size(self):
        return self._n

    def zero_state(self, batch_size, dtype):
        return (self._v1.zeros([batch_size, self._n], dtype),
                self._v1.zeros([batch_size, self._n], dtype))

    def __call__(self, inputs, state, scope=None):
        v1 = self._v1
        c, h = state
        gates = v1.nn.bias_add(v1.matmul(v1.concat([inputs, h], 1), self.kernel), self.bias)
        i, j, f, o = v1.split(gates, 4, axis=1)
        new_c = c * v1.sigmoid(f + 1.0) + v1.sigmoid(i) * v1.tanh(j)
        new_h = v1.tanh(new_c) * v1.sigmoid(o)
        return new_h, (new_c, new_h)


def _basic_lstm_cell(tf, v1, hidden):
    """Returns (cell, api text, substitute or None)."""
    if _has_contrib(tf):  # TF 1.x: the original class (never run here)
        return tf.contrib.rnn.BasicLSTMCell(hidden), ORIGINAL_API["basic_lstm"], None
    if not _versions.at_least(tf, 2, 16):  # TF 2.x with Keras 2 behind tf.compat.v1 (never run here)
        cls = v1.nn.rnn_cell.BasicLSTMCell
        return (cls(hidden), "tf.compat.v1.nn.rnn_cell.BasicLSTMCell (%s.%s) + "
                "tf.compat.v1.nn.dynamic_rnn(time_major=True)" % (cls.__module__, cls.__name__),
                ("tf.contrib.rnn.BasicLSTMCell", "tf.compat.v1.nn.rnn_cell.BasicLSTMCell",
                 "tf.contrib was removed in TF 2.0; the same legacy cell lives on under "
                 "tf.compat.v1"))
    if not _versions.available("tf_keras"):  # TF >= 2.16 without Keras 2: the kit's own cell
        return _kit_cell(v1, hidden)
    try:  # TF >= 2.16 (Keras 3 default) with the tf_keras package installed
        import tf_keras.api._v1.keras as keras_v1  # noqa: F401 (private path, TF 2.16+)
        cls = keras_v1.__internal__.legacy.rnn_cell.BasicLSTMCell
        return (cls(hidden), "tf_keras legacy BasicLSTMCell (%s, tf_keras %s) + "
                "tf.compat.v1.nn.dynamic_rnn(time_major=True)" % (
                    cls.__module__, getattr(__import__("tf_keras"), "__version__", "?")),
                ("tf.contrib.rnn.BasicLSTMCell", "tf_keras legacy BasicLSTMCell",
                 "tf.contrib was removed in TF 2.0 and TF >= 2.16 routes tf.compat.v1.nn.rnn_cell "
                 "to Keras 3, which has no TF1 cells; tf_keras (Keras 2) still ships the cell"))
    except (AttributeError, ImportError):
        pass
    return _kit_cell(v1, hidden)


def _kit_cell(v1, hidden):
    return (_BasicLSTMEquivalent(v1, hidden, hidden),
            "kit-written cell with BasicLSTMCell's arithmetic + tf.compat.v1.nn.dynamic_rnn"
            "(time_major=True)",
            ("tf.contrib.rnn.BasicLSTMCell",
             "a cell written in this kit with the same arithmetic (one kernel over [x, h], gates "
             "i, j, f, o, forget_bias 1.0, glorot-uniform kernel, zero bias), run by "
             "tf.compat.v1.nn.dynamic_rnn",
             "this TensorFlow has no BasicLSTMCell: tf.contrib is gone (TF 2.0) and "
             "tf.compat.v1.nn.rnn_cell needs Keras 2 (install tf_keras) on TF >= 2.16"))


def _build_basic(tf, v1, x, batch, seq, hidden, gpu):
    cell, api, sub = _basic_lstm_cell(tf, v1, hidden)
    output, _ = v1.nn.dynamic_rnn(cell, x, time_major=True, dtype=tf.float32)
    return output, api, [sub] if sub else [], [], None


# ---- fused_lstm -----------------------------------------------------------------------------

def _build_fused(tf, v1, x, batch, seq, hidden, gpu):
    if _has_contrib(tf):  # TF 1.x: the original class (never run here)
        cell = tf.contrib.rnn.LSTMBlockFusedCell(hidden)
        output, _ = cell(x, dtype=tf.float32)
        return output, ORIGINAL_API["fused_lstm"], [], [], None
    if not _versions.at_least(tf, 2):
        raise RuntimeError("fused_lstm: this TensorFlow %s has neither tf.contrib.rnn."
                           "LSTMBlockFusedCell nor tf.raw_ops.BlockLSTM" % tf.__version__)
    raw = tf.raw_ops
    # The variables LSTMBlockFusedCell made: kernel [in + h, 4h] (default glorot-uniform), bias
    # [4h] zeros; no peepholes; forget_bias 1.0; cell_clip None, which the cell passed as -1 (off).
    with v1.variable_scope("lstm_cell"):
        w = v1.get_variable("kernel", [hidden + hidden, 4 * hidden], dtype=tf.float32)
        b = v1.get_variable("bias", [4 * hidden], dtype=tf.float32,
                            initializer=v1.zeros_initializer())
    zero_state = v1.zeros([batch, hidden], tf.float32)
    no_peephole = v1.zeros([hidden], tf.float32)
    outs = raw.BlockLSTM(seq_len_max=v1.constant(seq, dtype=tf.int64), x=x, cs_prev=zero_state,
                         h_prev=zero_state, w=w, wci=no_peephole, wcf=no_peephole,
                         wco=no_peephole, b=b, forget_bias=1.0, cell_clip=-1.0,
                         use_peephole=False)
    output = outs[6]  # (i, cs, f, o, ci, co, h): h for every step, [seq, batch, hidden]
    sub = ("tf.contrib.rnn.LSTMBlockFusedCell",
           "tf.raw_ops.BlockLSTM, the kernel LSTMBlockFusedCell wrapped, with the cell's variables "
           "and attributes (forget_bias 1.0, cell_clip -1, no peepholes); gradient BlockLSTMGrad",
           "tf.contrib (and the cell class) was removed in TF 2.0; the op and its registered "
           "gradient remain in core TensorFlow")
    return output, "tf.raw_ops.BlockLSTM (time-major, whole sequence in one op)", [sub], [], None


# ---- cudnn_lstm -----------------------------------------------------------------------------

def _cudnn_contrib(tf, x, batch, hidden):
    """TF 1.x tf.contrib.cudnn_rnn on a GPU. NEVER RUN (no TF 1.x stack here, no TF on a GPU)."""
    if not _versions.at_least(tf, 1, 4):  # TF <= 1.3 (the tf-1.2 image): opaque params object
        layer = tf.contrib.cudnn_rnn.CudnnLSTM(num_layers=1, num_units=hidden, input_size=hidden)
        params = tf.Variable(tf.ones([layer.params_size()]), validate_shape=False)
        zeros = tf.zeros([1, batch, hidden])
        output, _h, _c = layer(input_data=x, input_h=zeros, input_c=zeros, params=params,
                               is_training=True)
        return output, "tf.contrib.cudnn_rnn.CudnnLSTM (TF <= 1.3 API, params all ones)"
    layer = tf.contrib.cudnn_rnn.CudnnLSTM(num_layers=1, num_units=hidden,
                                           kernel_initializer=tf.ones_initializer(),
                                           bias_initializer=tf.ones_initializer())
    output, _ = layer(x, training=True)
    return output, "tf.contrib.cudnn_rnn.CudnnLSTM (TF >= 1.4 layer API, weights/biases ones)"


def _cudnn_raw(tf, v1, x, batch, hidden):
    """TF 2.x on a GPU: the cuDNN op itself, as the original used it. NEVER RUN ON A GPU HERE."""
    raw = tf.raw_ops
    size = raw.CudnnRNNParamsSize(num_layers=v1.constant(1), num_units=v1.constant(hidden),
                                  input_size=v1.constant(hidden), T=tf.float32, S=tf.int32,
                                  rnn_mode="lstm", input_mode="linear_input",
                                  direction="unidirectional")
    params = v1.Variable(v1.ones(size, dtype=tf.float32), validate_shape=False,
                         name="cudnn_params")
    zeros = v1.zeros([1, batch, hidden], tf.float32)
    outs = raw.CudnnRNN(input=x, input_h=zeros, input_c=zeros, params=params, rnn_mode="lstm",
                        input_mode="linear_input", direction="unidirectional", is_training=True)
    return outs[0], "tf.raw_ops.CudnnRNN (params all ones, zero h/c, is_training=True)"


def _keras_lstm(tf):
    """Keras 2 (tf_keras, which has time_major) when installed, else tf.keras (Keras 3 on TF
    >= 2.16). Returns (keras module, label)."""
    if _versions.available("tf_keras"):
        import tf_keras
        return tf_keras, "tf_keras %s" % getattr(tf_keras, "__version__", "?")
    if _versions.available("keras"):
        import keras as keras_pkg
        version = keras_pkg.__version__
    else:
        version = getattr(tf.keras, "__version__", "?")
    return tf.keras, "tf.keras (Keras %s)" % version


def _cudnn_standin_tf1(tf, x, hidden):
    """TF 1.x on a CPU (TensorFlow 1.2.1 in the tf-1.2 stack's environment, reprokit/runners/venvs.py): no
    cuDNN, and tf.contrib.cudnn_rnn has no CPU kernel. The nearest TF 1.2 offers is its fused CPU
    LSTM op, LSTMBlockFusedCell (BlockLSTM: the whole sequence in one op), with every weight one as
    the original's params buffer; its bias is created zero and forget_bias 1.0 is added to the
    forget gate, where the original's two cuDNN bias vectors of ones gave two to every gate."""
    with tf.variable_scope("cudnn_lstm_cpu_standin", initializer=tf.ones_initializer()):
        cell = tf.contrib.rnn.LSTMBlockFusedCell(hidden)
        output, _ = cell(x, dtype=tf.float32)
    sub = (ORIGINAL_API["cudnn_lstm"],
           "tf.contrib.rnn.LSTMBlockFusedCell (the BlockLSTM op) of TensorFlow %s on the CPU, "
           "weights initialised to one, bias zero with forget_bias 1.0" % tf.__version__,
           "cuDNN needs an NVIDIA GPU and tf.contrib.cudnn_rnn has no CPU kernel; TensorFlow 1.x's "
           "fused CPU LSTM op computes the same cell over the whole sequence in one op")
    return (output, "tf.contrib.rnn.LSTMBlockFusedCell in a variable scope initialised to one "
            "(CPU stand-in for CudnnLSTM)", [sub], [], None)


def _build_cudnn(tf, v1, x, batch, seq, hidden, gpu):
    if gpu:  # NEVER RUN ON A GPU HERE
        if _has_contrib(tf):
            output, api = _cudnn_contrib(tf, x, batch, hidden)
            return output, api, [], [], None
        output, api = _cudnn_raw(tf, v1, x, batch, hidden)
        sub = ("tf.contrib.cudnn_rnn.CudnnLSTM", "tf.raw_ops.CudnnRNN",
               "tf.contrib was removed in TF 2.0; the op the class wrapped is still in core")
        return output, api, [sub], [], None
    if not _versions.at_least(tf, 2):  # TF 1.x on CPU: the tf-1.2 stack's Python 3.6 environment
        return _cudnn_standin_tf1(tf, x, hidden)
    # CPU: no cuDNN. The CudnnRNN ops have no CPU kernel (checked on TF 2.21: "No OpKernel was
    # registered to support Op 'CudnnRNNParamsSize'"). Nearest equivalent: the Keras LSTM layer,
    # the API that runs cuDNN on a GPU and a generic loop elsewhere, initialised like the original's
    # params buffer (all weights one; cuDNN's two bias vectors of ones -> one bias of two).
    keras, label = _keras_lstm(tf)
    init_one = keras.initializers.Constant(1.0)
    init_two = keras.initializers.Constant(2.0)
    kwargs = dict(return_sequences=True, kernel_initializer=init_one,
                  recurrent_initializer=init_one, bias_initializer=init_two,
                  unit_forget_bias=False)
    notes = []
    try:
        layer = keras.layers.LSTM(hidden, time_major=True, **kwargs)
        output = layer(x)
        layout = "time_major=True"
    except (TypeError, ValueError):  # Keras 3: no time_major argument
        layer = keras.layers.LSTM(hidden, **kwargs)
        output = v1.transpose(layer(v1.transpose(x, [1, 0, 2])), [1, 0, 2])
        layout = "batch-major layer between two transposes (Keras 3 has no time_major)"
        notes.append("cudnn_lstm CPU substitute: the Keras 3 LSTM layer is batch-major, so the "
                     "time-major input and output are transposed inside the graph (two extra "
                     "transposes in every timed iteration).")
    api = "%s keras.layers.LSTM(%d, return_sequences=True, %s) in a tf.compat.v1 graph" % (
        label, hidden, layout)
    sub = (ORIGINAL_API["cudnn_lstm"],
           "%s LSTM layer on CPU, weights initialised to one and bias to two" % label,
           "cuDNN needs an NVIDIA GPU and the CudnnRNN ops have no CPU kernel; the Keras LSTM layer "
           "is the API TensorFlow 2 offers for cuDNN LSTMs (it dispatches to CudnnRNN on a GPU) and "
           "computes the same cell with a generic loop on CPU")
    return output, api, [sub], notes, _keras_var_list(layer)


def _keras_var_list(layer):
    """tf.Variable objects behind a Keras layer's trainable weights (Keras 3 wraps them)."""
    out = []
    for w in layer.trainable_weights:
        inner = getattr(w, "_value", None)  # Keras 3 (TF backend): KerasVariable -> tf.Variable
        out.append(inner if inner is not None and hasattr(inner, "assign_sub") else w)
    return out


BUILDERS = {"basic_lstm": _build_basic, "fused_lstm": _build_fused, "cudnn_lstm": _build_cudnn}


def _major(tf):
    try:
        return int(str(tf.__version__).split(".")[0])
    except ValueError:
        return 0


def _gpu_available(tf):
    if _versions.at_least(tf, 2, 1):
        return bool(tf.config.list_physical_devices("GPU"))
    if _versions.at_least(tf, 2):
        return bool(tf.config.experimental.list_physical_devices("GPU"))
    return bool(tf.test.is_gpu_available())  # TF 1.x (never run here)


def split_variant(variant):
    """-> (the network's builder name, fixed): 'basic_lstm_fixed' -> ('basic_lstm', True)."""
    if variant not in VARIANTS:
        raise ValueError("s000_tensorflow: unknown variant %r (known: %s)"
                         % (variant, ", ".join(VARIANTS)))
    if variant.endswith("_fixed"):
        return variant[:-len("_fixed")], True
    return variant, False


def run(ctx):
    variant, fixed = split_variant(ctx.variant)
    batch, seq, hidden = common.shape(ctx)
    import numpy as np
    import tensorflow as tf

    v1 = _v1(tf)
    gpu = ctx.device == "gpu"
    if gpu and not _gpu_available(tf):
        raise RuntimeError("cell asks for a GPU but TensorFlow sees none")
    if not gpu:  # pinned to the CPU below: TensorFlow's GPU devices (on a GPU host) stay unused
        ctx.record_ran_on("cpu", "TensorFlow ops pinned to /cpu:0")

    rng = np.random.RandomState(1234)
    pick = random.Random(1234)
    n_pre = common.pick_preallocated(4 * seq * batch * hidden)
    inputs = [rng.rand(seq, batch, hidden).astype(np.float32) for _ in range(n_pre)]
    target = rng.rand(batch, hidden).astype(np.float32)

    graph = v1.Graph()
    not_model = []  # the fixed variants' data variables: not weights
    last_feed = [None]  # the feed of the latest step (one slot), for the real-work reference
    with graph.as_default(), v1.device("/gpu:0" if gpu else "/cpu:0"):
        v1.set_random_seed(1234)
        if fixed:  # corrected: inputs and target uploaded once into device variables
            data_init = v1.placeholder(tf.float32, [n_pre, seq, batch, hidden], name="inputs_init")
            data = v1.Variable(data_init, trainable=False, name="inputs_on_device")
            y_var = v1.Variable(target, trainable=False, name="target_on_device")
            pick_index = v1.placeholder(tf.int32, [], name="pick")
            x = data[pick_index]  # a dim-0 slice of a device variable: no host transfer
            y = v1.identity(y_var)
            not_model = [data, y_var]
        else:  # as published: placeholders fed from host arrays every iteration
            x = v1.placeholder(tf.float32, [seq, batch, hidden], name="x")
            y = v1.placeholder(tf.float32, [batch, hidden], name="y")
        output, api, subs, notes, var_list = BUILDERS[variant](tf, v1, x, batch, seq, hidden, gpu)

        # ---- compile timer: starts after the RNN graph, as in the original TF script ----
        t_start = timing.clock()
        last_step = output[-1]
        cost = v1.reduce_sum((last_step - y) ** 2)
        train_op = v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(cost,
                                                                             var_list=var_list)
        t_minimize = timing.clock()
        session = v1.Session(graph=graph)
        t_session = timing.clock()
        if fixed:
            session.run(v1.variables_initializer(
                [v for v in v1.global_variables() if v is not data]))
            t_model_init = timing.clock()
            session.run(data.initializer, feed_dict={data_init: np.stack(inputs)})
            t_init = timing.clock()

            def feed(with_target=True):
                chosen = {pick_index: pick.randint(0, n_pre - 1)}
                last_feed[0] = chosen
                return chosen
            first_feed = {pick_index: 0}
        else:
            session.run(v1.global_variables_initializer())
            t_init = t_model_init = timing.clock()

            def feed(with_target=True):
                chosen = {x: inputs[pick.randint(0, n_pre - 1)]}
                if with_target:
                    chosen[y] = target
                last_feed[0] = chosen
                return chosen
            first_feed = {x: inputs[0], y: target}
        session.run(train_op, feed_dict=first_feed)
        t_end = timing.clock()
        # ---- after the compile timer: what the real-work check of the train steps digests ----
        model_vars = list(var_list) if var_list is not None else [
            v for v in v1.global_variables() if not any(v is u for u in not_model)]
        zero_gradient = False
        if variant == "cudnn_lstm":  # defect d000-cudnn-ones: do the saturated gates pass any gradient?
            grad_ops = [g for g in v1.gradients(cost, model_vars) if g is not None]
            grad_values = session.run(grad_ops, feed_dict=first_feed) if grad_ops else []
            zero_gradient = not any(np.any(np.asarray(g) != 0) for g in grad_values)

    sync_desc = "implicit: session.run returns host data" if gpu else None
    ctx.record_single(
        "compile_time", t_end - t_start, "s",
        "as the original TF script: timer starts after the RNN graph is built; covers the loss, "
        "minimize (gradient graph), Session creation, variable initialisation and one train step "
        "with feed" + ("; corrected variant: also the one upload of the %d inputs into a device "
                       "variable" % n_pre if fixed else ""), sync_desc=sync_desc,
        state=common.compile_state(ctx, "no persistent compile cache (TF graph, no XLA)"))
    ctx.describe(framework="tensorflow", framework_version=tf.__version__,
                 api=api + "; graph mode, %s.Session, placeholders + feed_dict, "
                           "GradientDescentOptimizer(0.01)" % (
                               "tf" if v1 is tf else "tf.compat.v1"))
    for original, used, why in subs:
        ctx.substitute(original, used, why)
    if _versions.at_least(tf, 2):
        ctx.substitute("TensorFlow 1.x top-level graph API (tf.placeholder, tf.Session, "
                       "tf.train.GradientDescentOptimizer, tf.initialize_all_variables)",
                       "the same calls under tf.compat.v1 (global_variables_initializer), in an "
                       "explicit tf.compat.v1.Graph; variables are resource variables",
                       "TensorFlow 2 keeps the TF1 graph API only under tf.compat.v1")
    if n_pre != 100:
        ctx.substitute("100 pre-generated random inputs, one picked at random per iteration",
                       "%d pre-generated random inputs, one picked at random per iteration" % n_pre,
                       "memory: 100 inputs of %.1f MB would need %.0f MB; at most 256 MiB kept"
                       % (4.0 * seq * batch * hidden / 1e6, 400.0 * seq * batch * hidden / 1e6))
    for text in notes:
        ctx.note(text)
    in_mb, out_mb = 4.0 * seq * batch * hidden / 1e6, 4.0 * batch * hidden / 1e6
    if fixed:
        ctx.note("corrected variant (not published, defect d000-tf-transfers): inputs and target "
                 "uploaded once into device variables before timing; an iteration feeds a 4-byte "
                 "index; forward fetches output[-1] (%.2f MB) like the Theano script's h[-1]"
                 % out_mb)
    else:
        ctx.note("AS PUBLISHED (defect d000-tf-transfers): every iteration feeds a %.1f MB input "
                 "from host memory and forward fetches the full output sequence (%.1f MB); see "
                 "variant %s_fixed" % (in_mb, in_mb, variant))
    ctx.extra["transfers_per_iteration_mb"] = {
        "host_to_device": 0.0 if fixed else in_mb,
        "forward_device_to_host": out_mb if fixed else in_mb,
        "train_device_to_host": 0.0}
    ctx.note(common.WORKLOAD_SUMMARY + "; TF cost = SUM of squared errors of output[-1] "
             "(as the original TF script).")
    ctx.note(common.denormal_note(
        "TensorFlow", "TensorFlow sets flush-to-zero on its own CPU thread-pool threads "
        "(EigenEnvironment::CreateThread: port::ScopedFlushDenormal), so nothing was changed here; "
        "params.flush_denormal has no effect on TensorFlow"))
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    ctx.note("TF_ENABLE_ONEDNN_OPTS=%s (unset means TensorFlow's default for its build); default "
             "Session config (thread pools sized by TensorFlow)" % (
                 onednn if onednn is not None else "unset"))
    ctx.extra["compile_breakdown_s"] = {
        "loss_and_minimize": t_minimize - t_start,
        "session_creation": t_session - t_minimize,
        "variable_init": t_model_init - t_session,
        "first_train_step": t_end - t_init,
    }
    if fixed:
        ctx.extra["compile_breakdown_s"]["input_upload_to_device"] = t_init - t_model_init
    ctx.extra["preallocated_inputs"] = n_pre
    ctx.extra["flush_denormal"] = {"requested": common.flush_denormal_requested(ctx),
                                   "how": "TensorFlow default (its thread-pool threads flush "
                                          "denormals); not changed by the kit"}

    forward_fetch = last_step if fixed else output

    def forward_step():
        return session.run(forward_fetch, feed_dict=feed(with_target=False))

    def train_step():
        session.run(train_op, feed_dict=feed())

    if fixed:
        fwd_method = ("session.run(output[-1]) on a randomly chosen input already in a device "
                      "variable (only its index fed); fetches the last step [batch, hidden] to "
                      "host (corrected)")
        train_method = ("session.run(train_op) on a randomly chosen input and the target already in "
                        "device variables (only the index fed); nothing fetched (forward, "
                        "SUM-of-squares loss of output[-1], gradients, SGD update; corrected)")
    else:
        fwd_method = ("session.run(output) with a randomly chosen pre-generated input fed; "
                      "fetches the FULL output sequence [seq, batch, hidden] to host")
        train_method = ("session.run(train_op) with a randomly chosen pre-generated input and "
                        "the target fed; nothing fetched (forward, SUM-of-squares loss of "
                        "output[-1], gradients, SGD update)")

    def weights():  # float64 sum of every weight of the model, read untimed
        return sum(float(np.asarray(v, dtype=np.float64).sum()) for v in session.run(model_vars))

    def digest(out):  # mean |fetched output| in float64 (the step already fetched it)
        return float(np.mean(np.abs(np.asarray(out, dtype=np.float64))))

    def reference():  # the last forward step again, untimed, on the same fed input
        return digest(session.run(forward_fetch, feed_dict=last_feed[0]))

    still = None
    if zero_gradient:
        still = {"weights": "d000-cudnn-ones"}
        ctx.note("defect d000-cudnn-ones seen by running: with every weight one, every gate "
                 "saturates in float32 and the gradient of the cost is exactly zero for every "
                 "weight (evaluated once, untimed, on the first input after the compile step), so "
                 "the SGD updates leave the weights unchanged; the train steps' real-work check "
                 "expects them to stay still.")
    try:
        ctx.measure("forward_time_per_example", forward_step, unit="ms", kind="ms_per_item",
                    items=batch, sync_desc=sync_desc, method=fwd_method,
                    real_work=real_work.Check("forward", output=digest, reference=reference))
        ctx.measure("train_time_per_example", train_step, unit="ms", kind="ms_per_item",
                    items=batch, sync_desc=sync_desc, method=train_method,
                    real_work=real_work.Check("train", state=weights, still=still))
        common.record_first_vs_later(ctx, t_end - t_init, batch)
        common.record_both_as_published(ctx, batch)
        last, final_cost = session.run([last_step, cost], feed_dict={x: inputs[0], y: target})
        ctx.extra["numerics"] = {  # one untimed forward for the record
            "cost_after_timed_train": float(final_cost),
            "last_output_frac_abs_gt_0.999": float(np.mean(np.abs(last) > 0.999)),
        }
    finally:
        session.close()
