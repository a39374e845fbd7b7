"""GPU capability probe, TensorFlow (stacks tf-1.2, tf-1.8, keras-tf-1.8, tf-2.0, tf-modern; suite
gpu-smoke). See _probe.py for the checks.

The API is chosen by the TensorFlow version (_versions.at_least; tests/containers/test_api_paths.py checks each
stack's path against that version's API list):

* TensorFlow 1.x (graph and Session): GEMM tf.matmul (cuBLAS); LSTM step on a GPU
  tf.contrib.cudnn_rnn.CudnnLSTM over one time step (cuDNN): before 1.4 (the tf-1.2 image) the
  opaque-parameter API, its buffer filled with the constant; from 1.4 (tf-1.8, keras-tf-1.8) the
  layer API with constant initialisers. cuDNN keeps two bias vectors. On the CPU, where CudnnLSTM
  has no kernel, the step is written in plain graph ops (one bias vector).
* TensorFlow 2.x (eager): GEMM tf.matmul; LSTM step tf.keras.layers.LSTM (cuDNN on a GPU when its
  defaults hold, as here; a generic loop on the CPU), weights set to the constant after the layer
  is built; one bias vector.
* The backward: tf.gradients of the step's sum(h1) in the graph (CudnnLSTM in training mode on a GPU),
  tf.GradientTape in eager mode, with respect to x, h0, c0 and the trained parameters.

THE GPU PATH HAS NEVER RUN (the one GPU machine so far, docs/gpu-run, had no TensorFlow), nor have
TensorFlow 1.8.0 or 2.0.0. On the CPU the TF 2 path runs with the installed TensorFlow and the TF 1.x
graph path with TensorFlow 1.2.1 where the local runner provides it (Python 3.6; tests/plan/test_probes.py).

Python 3.5 syntax; imports only tensorflow, numpy and the standard library.
"""
try:  # imported as workloads.probe_tensorflow by the harness, or directly in tests
    from workloads import _probe as common
    from workloads import _versions
except ImportError:  # pragma: no cover
    import _probe as common
    import _versions

FRAMEWORK = "tensorflow"


def _gpu_available(tf):
    if _versions.at_least(tf, 2, 1):
        return bool(tf.config.list_physical_devices("GPU"))
    if _versions.at_least(tf, 2):
        return bool(tf.config.experimental.list_physical_devices("GPU"))
    return bool(tf.test.is_gpu_available())  # TF 1.x (never run here)


def run(ctx):
    p = common.settings(ctx)
    ptx_note = common.force_ptx_jit(ctx)  # before tensorflow is imported
    import numpy as np
    import tensorflow as tf

    gpu = ctx.device == "gpu"
    if gpu and not _gpu_available(tf):
        raise common.ProbeFailure("the cell asks for a GPU but TensorFlow %s sees none"
                                  % tf.__version__)
    if not gpu:  # pinned to the CPU below: TensorFlow's GPU devices (on a GPU host) stay unused
        ctx.record_ran_on("cpu", "TensorFlow ops pinned to /cpu:0")
    if not _versions.at_least(tf, 2):
        return _run_graph(ctx, np, tf, p, ptx_note, gpu)
    return _run_eager(ctx, np, tf, p, ptx_note, gpu)


def _run_eager(ctx, np, tf, p, ptx_note, gpu):
    """TensorFlow 2.x."""
    a_np, b_np = common.gemm_inputs(np, p)
    x_np, h0_np, c0_np, w = common.lstm_inputs(np, p)
    device = "/GPU:0" if gpu else "/CPU:0"
    with tf.device(device):
        a, b = tf.constant(a_np), tf.constant(b_np)
        x = tf.constant(x_np.reshape(p["batch"], 1, p["input"]))  # batch-major, one time step
        h0, c0 = tf.constant(h0_np), tf.constant(c0_np)
        layer = tf.keras.layers.LSTM(p["hidden"], return_state=True)
        layer(x, initial_state=[h0, c0])  # builds the weights: kernel, recurrent_kernel, bias
        layer.set_weights([np.full(v.shape, w, dtype=np.float32) for v in layer.get_weights()])

    def gemm():
        with tf.device(device):
            return tf.matmul(a, b).numpy()

    def lstm_step():
        with tf.device(device):
            _out, h1, c1 = layer(x, initial_state=[h0, c0])
        return np.asarray(h1), np.asarray(c1)

    def lstm_grad():
        with tf.device(device):
            with tf.GradientTape() as tape:
                tape.watch([x, h0, c0])
                _out, h1, _c1 = layer(x, initial_state=[h0, c0], training=True)
                loss = tf.reduce_sum(h1)
            weights = list(layer.trainable_variables)
            grads = tape.gradient(loss, [x, h0, c0] + weights)
        total = sum(float(np.asarray(g, dtype=np.float64).sum()) for g in grads[3:])
        return {"x": np.asarray(grads[0]).reshape(p["batch"], p["input"]),
                "h0": np.asarray(grads[1]), "c0": np.asarray(grads[2]), "params": total}

    common.run_probe(ctx, np, p, "tensorflow", tf.__version__, gemm, lstm_step,
                     "tf.matmul" + (" (cuBLAS)" if gpu else ""),
                     "tf.keras.layers.LSTM" + (" (cuDNN when its defaults hold)" if gpu
                                               else " (generic CPU loop)"),
                     ptx_note, ctx.device, n_bias=1, lstm_grad=lstm_grad)


def _cudnn_step(tf, x, h0, c0, w, p):
    """One CudnnLSTM step (GPU only: the op has no CPU kernel), and the same step in training mode
    with the parameters it trains (cuDNN's backward needs the training mode's reserve space):
    (h1, c1, h1 of the training step, its parameters, api). NEVER RUN (no TF on a GPU yet)."""
    if not _versions.at_least(tf, 1, 4):  # TF <= 1.3 (the tf-1.2 image): opaque params
        model = tf.contrib.cudnn_rnn.CudnnLSTM(num_layers=1, num_units=p["hidden"],
                                               input_size=p["input"])
        params = tf.ones([model.params_size()]) * w
        _out, h1, c1 = model(input_data=x, input_h=h0, input_c=c0, params=params,
                             is_training=False)
        _out, h1_train, _c = model(input_data=x, input_h=h0, input_c=c0, params=params,
                                   is_training=True)
        return (h1, c1, h1_train, [params],
                "tf.contrib.cudnn_rnn.CudnnLSTM (TF <= 1.3 opaque-parameter API; cuDNN)")
    layer = tf.contrib.cudnn_rnn.CudnnLSTM(num_layers=1, num_units=p["hidden"],  # TF 1.8
                                           kernel_initializer=tf.constant_initializer(w),
                                           bias_initializer=tf.constant_initializer(w))
    _out, state = layer(x, initial_state=(h0, c0), training=False)
    _out, train_state = layer(x, initial_state=(h0, c0), training=True)
    return (state[0], state[1], train_state[0], list(layer.trainable_weights),
            "tf.contrib.cudnn_rnn.CudnnLSTM (TF 1.4+ layer API; cuDNN)")


def _plain_step(tf, np, x, h0, c0, w, p):
    """One LSTM step in plain graph ops (tf.matmul, tf.sigmoid, tf.tanh): the CPU path of TF 1.x,
    where CudnnLSTM has no kernel. One bias vector."""
    hidden = p["hidden"]
    W = tf.constant(np.full((p["input"], 4 * hidden), w, dtype=np.float32))
    U = tf.constant(np.full((hidden, 4 * hidden), w, dtype=np.float32))
    bias = tf.constant(np.full((4 * hidden,), w, dtype=np.float32))
    act = tf.matmul(x, W) + tf.matmul(h0, U) + bias
    gate_i = tf.sigmoid(act[:, 0:hidden])
    gate_f = tf.sigmoid(act[:, hidden:2 * hidden])
    gate_o = tf.sigmoid(act[:, 2 * hidden:3 * hidden])
    cand = tf.tanh(act[:, 3 * hidden:4 * hidden])
    c1 = gate_f * c0 + gate_i * cand
    h1 = gate_o * tf.tanh(c1)
    return h1, c1, h1, [W, U, bias], "tf.matmul, tf.sigmoid and tf.tanh in a graph (no cuDNN on the CPU)"


def _run_graph(ctx, np, tf, p, ptx_note, gpu):
    """TensorFlow 1.x: a graph and a Session. On a GPU (NEVER RUN: no TF on a GPU yet) the LSTM
    step is CudnnLSTM; on the CPU, where CudnnLSTM has no kernel, plain graph ops (run with TensorFlow 1.2.1
    by tests/plan/test_probes.py where the local runner provides it)."""
    a_np, b_np = common.gemm_inputs(np, p)
    x_np, h0_np, c0_np, w = common.lstm_inputs(np, p)
    batch, hidden = p["batch"], p["hidden"]
    graph = tf.Graph()
    with graph.as_default(), tf.device("/gpu:0" if gpu else "/cpu:0"):
        product = tf.matmul(tf.constant(a_np), tf.constant(b_np))
        if gpu:  # time-major [1, batch, ...]: one time step
            x, h0, c0 = (tf.constant(x_np.reshape(1, batch, p["input"])),
                         tf.constant(h0_np.reshape(1, batch, hidden)),
                         tf.constant(c0_np.reshape(1, batch, hidden)))
            h1, c1, h1_train, params, api = _cudnn_step(tf, x, h0, c0, w, p)
        else:
            x, h0, c0 = tf.constant(x_np), tf.constant(h0_np), tf.constant(c0_np)
            h1, c1, h1_train, params, api = _plain_step(tf, np, x, h0, c0, w, p)
        grads = tf.gradients(tf.reduce_sum(h1_train), [x, h0, c0] + params)
        param_sum = tf.add_n([tf.reduce_sum(g) for g in grads[3:]])
        init = tf.global_variables_initializer()
    session = tf.Session(graph=graph)
    session.run(init)

    def gemm():
        return session.run(product)

    def lstm_step():
        h, c = session.run([h1, c1])
        return h.reshape(batch, hidden), c.reshape(batch, hidden)

    def lstm_grad():
        dx, dh, dc, total = session.run(grads[:3] + [param_sum])
        return {"x": dx.reshape(batch, p["input"]), "h0": dh.reshape(batch, hidden),
                "c0": dc.reshape(batch, hidden), "params": float(total)}

    try:
        common.run_probe(ctx, np, p, "tensorflow", tf.__version__, gemm, lstm_step,
                         "tf.matmul in a Session" + (" (cuBLAS)" if gpu else ""), api, ptx_note,
                         ctx.device, n_bias=2 if gpu else 1, lstm_grad=lstm_grad)
    finally:
        session.close()
