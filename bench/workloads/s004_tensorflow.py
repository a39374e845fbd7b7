"""Source 004 (YJ Choe, TFCudnnLSTM): the TensorFlow PTB tutorial's "large" word LM, three cells.

Workload (seed_workloads.md section 5.1, tensorflow/models ptb_word_lm.py LargeConfig): embedding
1500 (pinned to the CPU) -> 2 LSTM layers of 1500 -> untied softmax over 10,000 words; batch 20 x
35 steps; dropout keep 0.35 on the embedding output and (basic/block) on every layer's output or
(cudnn) between layers; all variables uniform(-0.04, 0.04) (cell biases zero for basic/block); loss
= sum over the 35 steps of the batch-mean cross-entropy; gradients clipped to global norm 10; plain
SGD, lr 1.0. The LSTM state is fetched after every step and fed into the next (as run_epoch does).
The API is chosen by the TensorFlow version inside the stack (_versions.at_least; the choice is
checked per stack by tests/containers/test_api_paths.py against each version's API list):

TensorFlow 1.x before 1.13 (the tf-1.8 GPU image): the tutorial's own classes, as the seed ran
them. NEVER RUN HERE (no TensorFlow 1.x on the project machines, and the one GPU machine so far,
docs/gpu-run, had no TensorFlow):
  basic  tf.contrib.rnn.BasicLSTMCell(forget_bias=0) + DropoutWrapper + MultiRNNCell, unrolled
         35 steps in a "RNN" variable scope.
  block  tf.contrib.rnn.LSTMBlockCell(forget_bias=0) in the same stack.
  cudnn  GPU: tf.contrib.cudnn_rnn.CudnnLSTM (the 1.8 layer API: opaque parameters, weights and
         biases uniform +-0.04, dropout between layers). CPU: tf.contrib.rnn.LSTMBlockFusedCell per
         layer (biases zero), dropout between layers only; recorded as a substitute.

TensorFlow >= 1.13 / 2.x (the CPU images and the modern image): TF1 graph code through tf.compat.v1:
  basic  BasicLSTMCell(forget_bias=0) + DropoutWrapper: the cell's arithmetic written out (one
         [in+H, 4H] product, gates i, j, f, o), because tf.compat.v1.nn.rnn_cell.BasicLSTMCell is
         gone with Keras 3. Unrolled 35 steps.
  block  LSTMBlockCell(forget_bias=0): the tf.raw_ops.LSTMBlockCell kernel per step, with its
         gradient (LSTMBlockCellGrad + two products) registered here, as tf.contrib did.
  cudnn  GPU: tf.raw_ops.CudnnRNN over one opaque parameter buffer (uniform +-0.04, biases too),
         time-major, dropout between layers. NEVER RUN ON A GPU. CPU (no cuDNN): the nearest
         fused kernel, tf.raw_ops.BlockLSTM (LSTMBlockFusedCell) per layer over the whole
         sequence, forget_bias 0, dropout between layers only; recorded as a substitute.
Two GPUs (the published BasicLSTMCell row used Grappler AutoParallel): explicit in-graph towers,
one per GPU, each on its own batch, gradients averaged. NEVER RUN ON A GPU.

Input: the tutorial's ptb_producer slices [20, 35] windows of one [20, N/20] id matrix with a
queue-fed index; here the index is a graph variable advanced after every step (same windows, no
queue thread). Data: PTB from params.data_dir (ptb.train.txt) or the deterministic stand-in.

Timing: one sample = one session.run of the train step (inputs slice, forward with dropout, loss,
gradients, clip, update, final state fetched). train_wps = 20*35*towers / seconds; time_per_batch
in ms. The tutorial printed a cumulative average since the epoch start: that figure over the timed
steps (and over warm-up + timed steps) is in extra.
Real-work check (bench/real_work.py) on train_wps and time_per_batch (the same steps): the
float64 sum of squares of the embedding, LSTM and softmax variables (session.run) must each change
over the timed steps.
Python 3.5 syntax; imports tensorflow, numpy (if present, via corpora) and the standard library.
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

FRAMEWORK = "tensorflow"

# "dataset" may also be "repeat" (0..seq_len-1 repeated: tests only)
DEFAULTS = dict(params_.PTB_LARGE_004,
                tower_devices=None)  # overrides the towers' devices (tests: two towers on the CPU)
VARIANTS = ("basic", "block", "cudnn")


def _params(ctx):
    p = params_.resolve(ctx, "s004_tensorflow", DEFAULTS)
    if ctx.variant not in VARIANTS:
        raise ValueError("variant must be one of %s, got %r" % (", ".join(VARIANTS), ctx.variant))
    if p["dataset"] not in ("ptb", "repeat"):
        raise ValueError("dataset must be 'ptb' (or 'repeat' for tests), got %r" % (p["dataset"],))
    if int(p["gpus"]) > 1 and ctx.variant != "basic":
        raise ValueError("the tutorial forces rnn_mode=basic when num_gpus != 1")
    return p


def _corpus(p):
    vocab = int(p["vocab"])
    if p["dataset"] == "repeat":
        n = int(p["n_tokens"] or 20 * vocab)
        from array import array
        period = int(p["seq_len"])
        ids = array("i", [(i % period) % vocab for i in range(n)])
        return ids, {"name": "repeat", "n_tokens": n, "vocab_size": vocab, "stand_in": True,
                     "reading": "ids 0..seq_len-1 repeated, so every batch holds the same "
                                "windows (test data, not PTB)"}
    if p["data_dir"]:
        if p["n_tokens"]:
            raise ValueError("n_tokens overrides the stand-in only, not data_dir")
        c = corpora.open_corpus("ptb", "train", p["data_dir"], p["sha256"])
    else:
        args = {}
        if vocab != corpora.STAND_INS["ptb"]["vocab_size"]:
            args["vocab_size"] = vocab
        if p["n_tokens"]:
            args["n_tokens"] = int(p["n_tokens"])
        c = corpora.stand_in("ptb", "train", **args)
    if c.vocab_size > vocab:
        raise ValueError("corpus has %d types, more than params.vocab=%d" % (c.vocab_size, vocab))
    return c.tokens, c.label()


def ids_matrix(tokens, batch, batch_len):
    """[batch, batch_len] ids: row r holds tokens r*batch_len ... (ptb_producer's layout)."""
    import numpy as np
    flat = np.asarray(tokens[:batch * batch_len], dtype=np.int32)
    return flat.reshape(batch, batch_len)


_GRAD_REGISTERED = []


def register_lstm_block_cell_grad(tf):
    """Gradient of the LSTMBlockCell op (TF registers none for it since tf.contrib left)."""
    if _GRAD_REGISTERED:
        return
    from tensorflow.python.framework import ops

    try:
        registered = ops._gradient_registry.lookup("LSTMBlockCell") is not None
    except LookupError:
        registered = False
    if not registered:
        @ops.RegisterGradient("LSTMBlockCell")
        def _lstm_block_cell_grad(op, *grads):
            x, cs_prev, h_prev, w, wci, wcf, wco, b = op.inputs
            i, cs, f, o, ci, co, _h = op.outputs
            cs_grad = grads[1] if grads[1] is not None else tf.zeros_like(cs)
            h_grad = grads[6] if grads[6] is not None else tf.zeros_like(cs)
            cs_prev_grad, dgates, wci_grad, wcf_grad, wco_grad = tf.raw_ops.LSTMBlockCellGrad(
                x=x, cs_prev=cs_prev, h_prev=h_prev, w=w, wci=wci, wcf=wcf, wco=wco, b=b, i=i,
                cs=cs, f=f, o=o, ci=ci, co=co, cs_grad=cs_grad, h_grad=h_grad,
                use_peephole=op.get_attr("use_peephole"))
            n_in = tf.shape(x)[1]
            xh_grad = tf.matmul(dgates, w, transpose_b=True)
            x_grad = xh_grad[:, :n_in]
            h_prev_grad = xh_grad[:, n_in:]
            w_grad = tf.matmul(tf.concat([x, h_prev], 1), dgates, transpose_a=True)
            b_grad = tf.reduce_sum(dgates, 0)
            return [x_grad, cs_prev_grad, h_prev_grad, w_grad, wci_grad, wcf_grad, wco_grad,
                    b_grad]
    _GRAD_REGISTERED.append(True)


def _graph_api(tf):
    """The TF1 graph API: tf.compat.v1 from TensorFlow 1.13 on, else tf itself (TF 1.x)."""
    if _versions.at_least(tf, 1, 13):
        return tf.compat.v1
    return tf


def _dropout(tf, x, keep):
    """Dropout keeping a fraction `keep`: `rate` from TensorFlow 1.13 on, `keep_prob` before."""
    if _versions.at_least(tf, 1, 13):
        return tf.nn.dropout(x, rate=1.0 - keep)
    return tf.nn.dropout(x, keep_prob=keep)


def _floormod(tf, x, y):
    if _versions.at_least(tf, 1, 13):
        return tf.math.floormod(x, y)
    return tf.floormod(x, y)


def _gpu_count(tf):
    """GPUs this TensorFlow sees: tf.config from 2.1 on; device_lib on TF 1.x (never run here)."""
    if _versions.at_least(tf, 2, 1):
        return len(tf.config.list_physical_devices("GPU"))
    if _versions.at_least(tf, 2):
        return len(tf.config.experimental.list_physical_devices("GPU"))
    from tensorflow.python.client import device_lib
    return sum(1 for d in device_lib.list_local_devices() if d.device_type == "GPU")


class Tower(object):
    """One copy of the model's forward pass on one batch: inputs, state feeds, cost, final state."""

    def __init__(self, tf, v1, p, variant, data, index, device, cpu_substitute):
        batch, steps = int(p["batch"]), int(p["seq_len"])
        hidden, layers, vocab = int(p["hidden"]), int(p["layers"]), int(p["vocab"])
        keep = float(p["keep_prob"])
        self.init_scale = float(p["init_scale"])
        self.feeds = []     # (placeholder, zero value shape) of the initial state
        self.final = []     # final state tensors, in the order of self.feeds
        with tf.device("/cpu:0"):
            col = index * steps
            x = tf.slice(data, tf.stack([0, col]), [batch, steps])
            y = tf.slice(data, tf.stack([0, col + 1]), [batch, steps])
            embedding = v1.get_variable("embedding", [vocab, hidden], dtype=tf.float32)
            inputs = tf.nn.embedding_lookup(embedding, x)
        with tf.device(device):
            if keep < 1:
                inputs = _dropout(tf, inputs, keep)
            if not _versions.at_least(tf, 1, 13):  # TF 1.x: the tutorial's classes (never run here)
                if variant == "cudnn" and not cpu_substitute:  # never run on a GPU
                    output = self._cudnn_contrib(tf, v1, inputs, batch, hidden, layers, keep)
                elif variant == "cudnn":
                    output = self._fused_contrib(tf, v1, inputs, batch, hidden, layers, keep)
                else:
                    output = self._cells_contrib(tf, v1, variant, inputs, batch, steps, hidden,
                                                 layers, keep)
            elif variant == "cudnn" and not cpu_substitute:  # never run on a GPU
                output = self._cudnn(tf, v1, inputs, batch, steps, hidden, layers, keep)
            elif variant == "cudnn":
                output = self._fused(tf, v1, inputs, batch, steps, hidden, layers, keep)
            else:
                output = self._unrolled(tf, v1, variant, inputs, batch, steps, hidden, layers,
                                        keep)
            softmax_w = v1.get_variable("softmax_w", [hidden, vocab], dtype=tf.float32)
            softmax_b = v1.get_variable("softmax_b", [vocab], dtype=tf.float32)
            logits = v1.nn.xw_plus_b(output, softmax_w, softmax_b)
            # sequence_loss(average_across_timesteps=False, average_across_batch=True), summed
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.reshape(y, [-1]), logits=logits)
            self.cost = tf.reduce_sum(tf.reduce_mean(tf.reshape(xent, [batch, steps]), 0))

    def _state_feed(self, tf, v1, shape, name):
        ph = v1.placeholder_with_default(tf.zeros(shape, tf.float32), shape, name=name)
        self.feeds.append((ph, shape))
        return ph

    def _unrolled(self, tf, v1, variant, inputs, batch, steps, hidden, layers, keep):
        cells = []
        for layer in range(layers):
            n_in = hidden  # embedding size = hidden size
            with v1.variable_scope("cell_%d" % layer):
                w = v1.get_variable("kernel", [n_in + hidden, 4 * hidden], dtype=tf.float32)
                b = v1.get_variable("bias", [4 * hidden], dtype=tf.float32,
                                    initializer=v1.zeros_initializer())
            c = self._state_feed(tf, v1, [batch, hidden], "c_%d" % layer)
            h = self._state_feed(tf, v1, [batch, hidden], "h_%d" % layer)
            cells.append([w, b, c, h])
        zeros = tf.zeros([hidden], tf.float32)
        outputs = []
        for t in range(steps):
            x = inputs[:, t, :]
            for cell in cells:
                w, b, c, h = cell
                if variant == "basic":
                    gates = tf.nn.bias_add(tf.matmul(tf.concat([x, h], 1), w), b)
                    i, j, f, o = tf.split(gates, 4, axis=1)
                    c = c * tf.sigmoid(f) + tf.sigmoid(i) * tf.tanh(j)  # forget_bias 0.0
                    h = tf.tanh(c) * tf.sigmoid(o)
                else:
                    _, c, _, _, _, _, h = tf.raw_ops.LSTMBlockCell(
                        x=x, cs_prev=c, h_prev=h, w=w, wci=zeros, wcf=zeros, wco=zeros, b=b,
                        forget_bias=0.0, cell_clip=-1.0, use_peephole=False)
                cell[2], cell[3] = c, h
                x = _dropout(tf, h, keep) if keep < 1 else h  # DropoutWrapper
            outputs.append(x)
        for cell in cells:
            self.final.extend([cell[2], cell[3]])
        return tf.reshape(tf.concat(outputs, 1), [-1, hidden])

    def _fused(self, tf, v1, inputs, batch, steps, hidden, layers, keep):
        x = tf.transpose(inputs, [1, 0, 2])  # time-major, as the cuDNN path
        zeros = tf.zeros([hidden], tf.float32)
        for layer in range(layers):
            with v1.variable_scope("fused_%d" % layer):
                w = v1.get_variable("kernel", [2 * hidden, 4 * hidden], dtype=tf.float32)
                b = v1.get_variable("bias", [4 * hidden], dtype=tf.float32)  # uniform, as cuDNN's
            c = self._state_feed(tf, v1, [batch, hidden], "c_%d" % layer)
            h = self._state_feed(tf, v1, [batch, hidden], "h_%d" % layer)
            _, cs, _, _, _, _, hs = tf.raw_ops.BlockLSTM(
                seq_len_max=tf.constant(steps, tf.int64), x=x, cs_prev=c, h_prev=h, w=w,
                wci=zeros, wcf=zeros, wco=zeros, b=b, forget_bias=0.0, cell_clip=-1.0,
                use_peephole=False)
            self.final.extend([cs[-1], hs[-1]])
            x = hs
            if keep < 1 and layer < layers - 1:  # cuDNN dropout: between layers only
                x = _dropout(tf, x, keep)
        return tf.reshape(tf.transpose(x, [1, 0, 2]), [-1, hidden])

    # -- TensorFlow 1.x before 1.13: the tutorial's own classes. NEVER RUN HERE (no TF 1.x, no TF on a GPU)
    def _cells_contrib(self, tf, v1, variant, inputs, batch, steps, hidden, layers, keep):
        """basic: BasicLSTMCell(forget_bias=0.0); block: LSTMBlockCell(forget_bias=0.0); each in
        a DropoutWrapper(output_keep_prob), stacked by MultiRNNCell, unrolled over the steps as the
        tutorial's _build_rnn_graph_lstm did; the initial state is fed like the other paths."""
        rnn = tf.contrib.rnn
        cells, state = [], []
        for layer in range(layers):
            if variant == "basic":
                cell = rnn.BasicLSTMCell(hidden, forget_bias=0.0, state_is_tuple=True)
            else:
                cell = rnn.LSTMBlockCell(hidden, forget_bias=0.0)
            if keep < 1:
                cell = rnn.DropoutWrapper(cell, output_keep_prob=keep)
            cells.append(cell)
            c = self._state_feed(tf, v1, [batch, hidden], "c_%d" % layer)
            h = self._state_feed(tf, v1, [batch, hidden], "h_%d" % layer)
            state.append(rnn.LSTMStateTuple(c, h))
        stack = rnn.MultiRNNCell(cells, state_is_tuple=True)
        state = tuple(state)
        outputs = []
        with v1.variable_scope("RNN"):
            for t in range(steps):
                if t > 0:
                    v1.get_variable_scope().reuse_variables()
                out, state = stack(inputs[:, t, :], state)
                outputs.append(out)
        for layer_state in state:
            self.final.extend([layer_state.c, layer_state.h])
        return tf.reshape(tf.concat(outputs, 1), [-1, hidden])

    def _fused_contrib(self, tf, v1, inputs, batch, hidden, layers, keep):
        """CPU stand-in for CudnnLSTM on TF 1.x: LSTMBlockFusedCell per layer (never run here)."""
        x = tf.transpose(inputs, [1, 0, 2])
        for layer in range(layers):
            c = self._state_feed(tf, v1, [batch, hidden], "c_%d" % layer)
            h = self._state_feed(tf, v1, [batch, hidden], "h_%d" % layer)
            with v1.variable_scope("fused_%d" % layer):
                cell = tf.contrib.rnn.LSTMBlockFusedCell(hidden, forget_bias=0.0)
                x, final = cell(x, initial_state=(c, h), dtype=tf.float32)
            self.final.extend([final[0], final[1]])
            if keep < 1 and layer < layers - 1:
                x = _dropout(tf, x, keep)
        return tf.reshape(tf.transpose(x, [1, 0, 2]), [-1, hidden])

    def _cudnn_contrib(self, tf, v1, inputs, batch, hidden, layers, keep):
        """tf.contrib.cudnn_rnn.CudnnLSTM, the TF 1.8 layer API (never run on a GPU)."""
        scale = float(self.init_scale)
        init = v1.random_uniform_initializer(-scale, scale)
        lstm = tf.contrib.cudnn_rnn.CudnnLSTM(layers, hidden, dropout=1.0 - keep,
                                              kernel_initializer=init, bias_initializer=init)
        h = self._state_feed(tf, v1, [layers, batch, hidden], "h")
        c = self._state_feed(tf, v1, [layers, batch, hidden], "c")
        out, (h_out, c_out) = lstm(tf.transpose(inputs, [1, 0, 2]), initial_state=(h, c),
                                   training=True)
        self.final.extend([h_out, c_out])
        return tf.reshape(tf.transpose(out, [1, 0, 2]), [-1, hidden])

    def _cudnn(self, tf, v1, inputs, batch, steps, hidden, layers, keep):  # never run on a GPU
        size = tf.raw_ops.CudnnRNNParamsSize(
            num_layers=layers, num_units=hidden, input_size=hidden, T=tf.float32, S=tf.int32,
            rnn_mode="lstm", input_mode="linear_input", direction="unidirectional")
        scale = float(self.init_scale)
        params = v1.get_variable(
            "lstm_params", initializer=tf.random.uniform([size], -scale, scale),
            validate_shape=False)
        h = self._state_feed(tf, v1, [layers, batch, hidden], "h")
        c = self._state_feed(tf, v1, [layers, batch, hidden], "c")
        out, h_out, c_out, _ = tf.raw_ops.CudnnRNN(
            input=tf.transpose(inputs, [1, 0, 2]), input_h=h, input_c=c, params=params,
            rnn_mode="lstm", input_mode="linear_input", direction="unidirectional",
            dropout=1.0 - keep, is_training=True)
        self.final.extend([h_out, c_out])
        return tf.reshape(tf.transpose(out, [1, 0, 2]), [-1, hidden])


def run(ctx):
    import tensorflow as tf

    v1 = _graph_api(tf)
    tf1 = not _versions.at_least(tf, 1, 13)  # the tutorial's classes (never run here)
    p = _params(ctx)
    variant = ctx.variant
    gpus = int(p["gpus"])
    batch, steps = int(p["batch"]), int(p["seq_len"])
    visible = _gpu_count(tf)
    devices = p["tower_devices"]
    if devices is None:
        # the device comes from the published number's hardware: a one-GPU row runs on the job's
        # device (a CPU job measures it as context), two GPUs are needed for the two-GPU row
        used = gpus if (gpus >= 2 or ctx.device == "gpu") else 0
        if used > 0 and (ctx.device != "gpu" or visible < used):
            raise RuntimeError("cell needs %d GPUs, this host has %d%s"
                               % (used, visible if ctx.device == "gpu" else 0,
                                  "" if ctx.device == "gpu" else " (job device is cpu)"))
        devices = ["/gpu:%d" % i for i in range(used)] if used > 0 else ["/cpu:0"]
        if gpus == 1 and used == 0:
            ctx.note("The published row ran on one GPU; this job's device is the CPU, so the same "
                     "graph runs on the CPU as context (not a GPU measurement).")
    on_gpu = any("gpu" in d.lower() for d in devices)
    ctx.record_ran_on("gpu" if on_gpu else "cpu", "tower devices %s" % ", ".join(devices))
    cpu_substitute = variant == "cudnn" and not on_gpu
    if variant == "block" and _versions.at_least(tf, 1, 13):
        register_lstm_block_cell_grad(tf)

    tokens, data_label = _corpus(p)
    batch_len = len(tokens) // batch
    epoch_size = (batch_len - 1) // steps
    if epoch_size < 1:
        raise ValueError("corpus of %d tokens gives no %dx%d batch" % (len(tokens), batch, steps))
    towers = len(devices)

    t0 = timing.clock()
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(int(p["seed"]))
        scale = float(p["init_scale"])
        init = v1.random_uniform_initializer(-scale, scale)
        with tf.device("/cpu:0"):
            data = tf.constant(ids_matrix(tokens, batch, batch_len), tf.int32)
            counter = v1.get_variable("batch_index", [], tf.int32, v1.zeros_initializer(),
                                      trainable=False, use_resource=True)
            current = counter.read_value()
        built = []
        with v1.variable_scope("Model", initializer=init):
            for k, dev in enumerate(devices):
                with v1.variable_scope(v1.get_variable_scope(), reuse=k > 0):
                    with tf.name_scope("tower_%d" % k):
                        index = _floormod(tf, current * towers + k, epoch_size)
                        built.append(Tower(tf, v1, p, variant, data, index, dev, cpu_substitute))
            tvars = v1.trainable_variables()
            cost = tf.add_n([tw.cost for tw in built]) / float(towers)
            # one tower: tf.gradients(cost, tvars) as the tutorial; towers: averaged gradients,
            # each tower's backward pass on its own device
            grads = v1.gradients(cost, tvars, colocate_gradients_with_ops=towers > 1)
            grads, _ = tf.clip_by_global_norm(grads, float(p["max_grad_norm"]))
            lr = v1.get_variable("lr", [], tf.float32, v1.constant_initializer(float(p["lr"])),
                                 trainable=False)
            train_op = v1.train.GradientDescentOptimizer(lr).apply_gradients(
                zip(grads, tvars), global_step=v1.train.get_or_create_global_step())
            with tf.control_dependencies([train_op]):
                advance = counter.assign(_floormod(tf, current + 1, epoch_size))
            init_op = v1.global_variables_initializer()
        n_params = sum(int(v.shape.num_elements() or 0) for v in tvars)
    config = v1.ConfigProto(allow_soft_placement=True)
    if not on_gpu:
        config.device_count["GPU"] = 0
    sess = v1.Session(graph=graph, config=config)
    sess.run(init_op)
    build_s = timing.clock() - t0

    import numpy as np
    feeds = [ph for tw in built for ph, _ in tw.feeds]
    finals = [f for tw in built for f in tw.final]
    # zero initial state fed explicitly, so every step runs the same callable
    state = {"values": [np.zeros(shape, np.float32) for tw in built for _, shape in tw.feeds]}
    losses = []

    def step():
        feed = dict(zip(feeds, state["values"]))
        out = sess.run({"cost": cost, "final": finals, "advance": advance}, feed_dict=feed)
        state["values"] = out["final"]
        losses.append(float(out["cost"]))

    def weights():
        """Float64 sum of squares of the trainable variables per part (embedding, LSTM, softmax),
        read with session.run. A plain sum would not move the softmax under SGD: its gradient sums
        to zero over the classes."""
        parts = {"embedding": 0.0, "lstm": 0.0, "softmax": 0.0}
        for v, value in zip(tvars, sess.run(tvars)):
            name = v.name.split("/")[-1]
            part = ("embedding" if name.startswith("embedding") else
                    "softmax" if name.startswith("softmax") else "lstm")
            parts[part] += float(np.square(np.asarray(value, dtype=np.float64)).sum())
        return parts

    # every part of the weights must move over the timed steps (digests taken after the warm-up)
    check = real_work.Check("train", state=weights)
    words = batch * steps * towers
    budget = ctx.budget("train_wps")
    t = timing.sample(step, budget, before_timed=check.before)
    losses = losses[len(t["warmup_seconds"]):]

    method = ("one training step (session.run): slice the [%d, %d] input and target windows "
              "in the graph, embedding lookup on the CPU, dropout keep %s, %d x %d LSTM (%s), "
              "softmax over %d, summed sequence loss, gradients, clip to global norm %s, SGD "
              "update; final LSTM state fetched and fed into the next step%s"
              % (batch, steps, p["keep_prob"], int(p["layers"]), int(p["hidden"]),
                 _lstm_text(variant, cpu_substitute, tf1),
                 p["vocab"], p["max_grad_norm"],
                 "; %d towers, each on its own batch" % towers if towers > 1 else ""))
    sync = ("implicit: session.run returns host values (cost, final state)" if on_gpu else
            "n/a: CPU execution is synchronous; session.run returns host values")
    ctx.record_timed("train_wps", t, "words/s", "items_per_s", words, method, sync)
    ctx.record_timed("time_per_batch", t, "ms", "ms", 1, method, sync)

    raw, warm = t["raw_seconds"], t["warmup_seconds"]
    record_as_published(ctx, t, words, epoch_size)
    try:  # the same samples give both metrics: one check, recorded on both
        ctx.check_real_work(["train_wps", "time_per_batch"], check, t)
    finally:
        sess.close()
    ctx.extra["cumulative_wps"] = {
        "timed_steps": words * len(raw) / sum(raw),
        "from_epoch_start": words * (len(raw) + len(warm)) / (sum(raw) + sum(warm)),
        "method": "the tutorial's figure: steps x 700 x n_gpus / seconds since the epoch start, "
                  "a cumulative average; 'timed_steps' over the timed steps only, "
                  "'from_epoch_start' with the warm-up step(s) included (the tutorial had no "
                  "warm-up); both sum per-step times only, not the Python between steps",
    }
    ctx.extra["loss"] = losses
    ctx.extra["dataset"] = data_label
    ctx.extra["model"] = {"parameters": n_params, "epoch_size": epoch_size, "towers": towers,
                          "devices": devices, "build_and_init_seconds": build_s}
    if not _versions.at_least(tf, 1, 13):  # never run here
        _describe_contrib(ctx, tf, p, variant, cpu_substitute)
    else:
        _describe_compat(ctx, tf, p, variant, cpu_substitute)
    if towers > 1:
        ctx.substitute("Grappler AutoParallel (util.auto_parallel, num_replicas=%d)" % towers,
                       "explicit in-graph towers on %s, one batch each, gradients averaged"
                       % ", ".join(devices),
                       "AutoParallel rewrote a queue-fed graph; the graph here has no queue")
        ctx.note("The multi-tower path has never run on GPUs.")
    ctx.substitute("reader.ptb_producer (range_input_producer queue + strided slice)",
                   "a graph variable holding the batch index, advanced after every step, "
                   "slicing the same [batch, batch_len] id matrix",
                   "queue runners are deprecated in TensorFlow 2; same windows, no queue thread")
    if data_label.get("stand_in") and p["dataset"] == "ptb":
        ctx.substitute("PTB ptb.train.txt (929,589 words)",
                       "deterministic stand-in token ids (bench/corpora.py %s)"
                       % corpora.GENERATOR,
                       "no params.data_dir given; speed depends on shapes only")
    ctx.note("Samples are single steps after %d untimed warm-up step(s); the tutorial printed a "
             "cumulative average from the epoch start (see extra.cumulative_wps)." % len(warm))


def print_steps(epoch_size):
    """The steps at which run_epoch printed its words/s: step % (epoch_size // 10) == 10."""
    every = epoch_size // 10
    if every <= 10:  # 10 is never a remainder: no print in the epoch
        return []
    return [s for s in range(epoch_size) if s % every == 10]


def record_as_published(ctx, t, words, epoch_size):
    """The tutorial's figure beside the per-step samples: run_epoch printed iters * batch_size *
    num_gpus / (time.time() - start_time), a cumulative words/s since the epoch start (every step
    and everything between steps included, no warm-up), 10 times per epoch. The README's
    'average wps' averaged these prints in an unstated way (seed_workloads.md 5.1, 5.3 item 3); the
    figure recorded is the epoch's last print, the cumulative rate over the most of the epoch. The
    steps run here are the epoch's first (this cell's warm-up steps included, as its steps 0, 1...);
    fewer steps than that print needs give a labelled partial estimate."""
    seconds = list(t["warmup_seconds"]) + list(t["raw_seconds"])
    gap = max(0.0, t["wall_seconds"] - sum(seconds)) / len(seconds)
    prints = print_steps(epoch_size)
    last = prints[-1] if prints else epoch_size - 1
    upto = seconds[:last + 1]
    reached = [s for s in prints if s < len(seconds)]
    cumulative = []
    for s in reached:
        cumulative.append({"step": s, "words_per_s": words * (s + 1) / (sum(seconds[:s + 1])
                                                                        + gap * (s + 1))})
    ctx.record_as_published(
        "train_wps", "cumulative_wps_at_last_print",
        "run_epoch's printed words/s at the epoch's last print (step %d of %d): (step + 1) x "
        "%d words / wall seconds since the epoch start%s"
        % (last, epoch_size, words, "" if prints else
           " (an epoch this short has no print; the epoch end is used)"),
        "rate", [{"seconds": upto, "warmup": len(t["warmup_seconds"]),
                  "other_seconds": gap * len(upto), "items_per_iteration": words}],
        planned_iterations=last + 1)
    ctx.extra["tutorial_prints"] = {"print_steps": prints, "reached": cumulative,
                                    "seconds_between_steps": gap}


def _lstm_text(variant, cpu_substitute, tf1):
    if tf1:  # never run here
        return {"basic": "tf.contrib.rnn.BasicLSTMCell, unrolled",
                "block": "tf.contrib.rnn.LSTMBlockCell, unrolled",
                "cudnn": "tf.contrib.rnn.LSTMBlockFusedCell per layer (CPU substitute for "
                         "CudnnLSTM)" if cpu_substitute else
                         "tf.contrib.cudnn_rnn.CudnnLSTM over the whole sequence"}[variant]
    return {"basic": "BasicLSTMCell arithmetic, unrolled",
            "block": "LSTMBlockCell kernel per step, unrolled",
            "cudnn": "fused BlockLSTM kernel per layer (CPU substitute for CudnnLSTM)"
            if cpu_substitute else "CudnnRNN over the whole sequence"}[variant]


def _describe_contrib(ctx, tf, p, variant, cpu_substitute):
    """TensorFlow 1.x before 1.13: the tutorial's own classes. NEVER RUN HERE."""
    ctx.describe(framework="tensorflow", framework_version=tf.__version__,
                 api="tf graph + Session (TensorFlow 1.x); %s" % _lstm_text(variant, cpu_substitute,
                                                                           True))
    if variant == "cudnn" and cpu_substitute:
        ctx.substitute("tf.contrib.cudnn_rnn.CudnnLSTM (cuDNN, GPU only)",
                       "tf.contrib.rnn.LSTMBlockFusedCell(forget_bias=0) per layer, biases zero, "
                       "dropout between layers only",
                       "no cuDNN on the CPU; the fused whole-sequence kernel is the nearest CPU "
                       "counterpart. Speed is NOT comparable with the published cuDNN figure")
    elif variant == "cudnn":
        ctx.substitute("tf.contrib.cudnn_rnn.CudnnLSTM (old API, YJ's unpublished patch)",
                       "tf.contrib.cudnn_rnn.CudnnLSTM, the TensorFlow %s layer API (weights and "
                       "biases uniform(+-%s))" % (tf.__version__, p["init_scale"]),
                       "YJ's patch is unpublished; the layer API of the same release wraps the "
                       "same cuDNN RNN")
    ctx.note("This TensorFlow 1.x code path was written without TensorFlow 1.x or a GPU and has "
             "never run; its calls are checked against the TensorFlow %s API list "
             "(tests/containers/test_api_paths.py)." % tf.__version__)


def _describe_compat(ctx, tf, p, variant, cpu_substitute):
    ctx.describe(framework="tensorflow", framework_version=tf.__version__,
                 api="tf.compat.v1 graph + Session; %s" % {
                     "basic": "BasicLSTMCell arithmetic written out (matmul, split, sigmoid/tanh)",
                     "block": "tf.raw_ops.LSTMBlockCell + gradient registered in this module",
                     "cudnn": ("tf.raw_ops.BlockLSTM (CPU substitute for CudnnLSTM)"
                               if cpu_substitute else "tf.raw_ops.CudnnRNN")}[variant])
    if variant == "basic":
        ctx.substitute("tf.contrib.rnn.BasicLSTMCell(forget_bias=0.0) + DropoutWrapper + "
                       "MultiRNNCell",
                       "the same cell arithmetic written with tf ops (kernel [in+H, 4H], zero "
                       "bias, gates i, j, f, o), dropout on each layer's output",
                       "tf.compat.v1.nn.rnn_cell.BasicLSTMCell is not available with Keras 3 "
                       "in TensorFlow %s" % tf.__version__)
    elif variant == "block":
        ctx.substitute("tf.contrib.rnn.LSTMBlockCell(forget_bias=0.0)",
                       "tf.raw_ops.LSTMBlockCell (same kernel) with a gradient registered here "
                       "(LSTMBlockCellGrad + input/weight products)",
                       "tf.contrib is gone; the op remains but has no registered gradient")
    elif cpu_substitute:
        ctx.substitute("tf.contrib.cudnn_rnn.CudnnLSTM (cuDNN, GPU only; YJ's unpublished TF 1.8 "
                       "patch)",
                       "tf.raw_ops.BlockLSTM per layer over the 35 steps (TF's fused LSTM kernel, "
                       "= LSTMBlockFusedCell), forget_bias 0, weights and biases uniform(+-%s), "
                       "dropout between layers only" % p["init_scale"],
                       "no cuDNN on the CPU (CudnnRNN has no CPU kernel); the fused "
                       "whole-sequence kernel is the nearest CPU counterpart. Speed is NOT "
                       "comparable with the published cuDNN figure")
    else:  # never run on a GPU
        ctx.substitute("tf.contrib.cudnn_rnn.CudnnLSTM (old API, YJ's unpublished patch)",
                       "tf.raw_ops.CudnnRNN with a CudnnRNNParamsSize buffer uniform(+-%s)"
                       % p["init_scale"], "tf.contrib is gone; the op remains")
        ctx.note("The CudnnRNN path was written without a GPU and has never run.")
    ctx.substitute("TensorFlow 1.8", "TensorFlow %s through tf.compat.v1" % tf.__version__,
                   "TensorFlow 1.8 has no wheel for Python 3.11")
