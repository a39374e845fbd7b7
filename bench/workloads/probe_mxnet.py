"""GPU capability probe, MXNet (stack keras-mxnet-1.2; suite gpu-smoke). See _probe.py for the checks.

The keras-mxnet image's LSTM runs on MXNet, whose libmxnet.so carries its own static cuDNN 7.1.2 and
links cuBLAS 9.0, so the probe goes to MXNet directly (Keras adds no kernel of its own):
GEMM mxnet.nd.dot (cuBLAS on a GPU); LSTM step mxnet.nd.RNN(mode="lstm") over one time step (the
cuDNN RNN on a GPU), its flat parameter vector filled with the constant; two bias vectors; its
backward through mxnet.autograd (record, attach_grad, backward).

THE GPU PATH HAS NEVER RUN (the one GPU machine so far, docs/gpu-run, had no MXNet); the calls are
checked against the MXNet 1.2.0 API list by tests/containers/test_api_paths.py.
On the CPU the same code ran with MXNet 1.2.0 itself (Python 3.6, the local
runner's environment candidate for this stack, 2026-11-25; its CPU LSTM answered within 2e-7 of
the reference) and with MXNet 1.9.1 (tests/plan/test_probes.py runs whichever the local runner provides).

Python 3.5 syntax; imports only mxnet, numpy and the standard library.
"""
try:  # imported as workloads.probe_mxnet by the harness, or directly in tests
    from workloads import _probe as common
except ImportError:  # pragma: no cover
    import _probe as common

FRAMEWORK = "mxnet"


def run(ctx):
    p = common.settings(ctx)
    ptx_note = common.force_ptx_jit(ctx)  # before mxnet is imported
    import mxnet as mx
    import numpy as np

    gpu = ctx.device == "gpu"
    if gpu and not mx.test_utils.list_gpus():
        raise common.ProbeFailure("the cell asks for a GPU but MXNet %s lists none" % mx.__version__)
    where = mx.gpu(0) if gpu else mx.cpu()
    ctx.record_ran_on("gpu" if gpu else "cpu", "MXNet context %s" % (where,))
    a_np, b_np = common.gemm_inputs(np, p)
    x_np, h0_np, c0_np, w = common.lstm_inputs(np, p)
    batch, inp, hidden = p["batch"], p["input"], p["hidden"]
    a = mx.nd.array(a_np, ctx=where, dtype="float32")
    b = mx.nd.array(b_np, ctx=where, dtype="float32")
    x = mx.nd.array(x_np.reshape(1, batch, inp), ctx=where, dtype="float32")  # [seq, batch, input]
    h0 = mx.nd.array(h0_np.reshape(1, batch, hidden), ctx=where, dtype="float32")
    c0 = mx.nd.array(c0_np.reshape(1, batch, hidden), ctx=where, dtype="float32")
    size = 4 * hidden * (inp + hidden) + 2 * 4 * hidden  # i2h, h2h weights; two bias vectors
    params = mx.nd.array(np.full((size,), w, dtype=np.float32), ctx=where, dtype="float32")

    def gemm():
        return mx.nd.dot(a, b).asnumpy()

    def lstm_step():
        outs = mx.nd.RNN(x, params, h0, c0, state_size=hidden, num_layers=1, mode="lstm",
                         state_outputs=True)
        return (outs[1].asnumpy().reshape(batch, hidden),
                outs[2].asnumpy().reshape(batch, hidden))

    leaves = [v.copy() for v in (x, h0, c0, params)]
    for leaf in leaves:
        leaf.attach_grad()

    def lstm_grad():
        gx, gh0, gc0, gparams = leaves
        with mx.autograd.record():
            outs = mx.nd.RNN(gx, gparams, gh0, gc0, state_size=hidden, num_layers=1, mode="lstm",
                             state_outputs=True)
            loss = mx.nd.sum(outs[1])
        loss.backward()
        return {"x": gx.grad.asnumpy().reshape(batch, inp),
                "h0": gh0.grad.asnumpy().reshape(batch, hidden),
                "c0": gc0.grad.asnumpy().reshape(batch, hidden),
                "params": float(gparams.grad.asnumpy().astype(np.float64).sum())}

    backward = lstm_grad
    if not gpu:  # MXNet 1.2's CPU RNN has no training mode ("only inference mode is available for
        # cpu"): the backward is the GPU's (cuDNN) only; on the CPU the probe checks the forward
        backward = None
        ctx.note("LSTM backward not probed: MXNet's CPU RNN runs in inference mode only (MXNet 1.2)")
    common.run_probe(ctx, np, p, "mxnet", mx.__version__, gemm, lstm_step,
                     "mxnet.nd.dot" + (" (cuBLAS)" if gpu else ""),
                     "mxnet.nd.RNN mode=lstm" + (" (cuDNN)" if gpu else " (MXNet's CPU RNN)"),
                     ptx_note, ctx.device, n_bias=2, lstm_grad=backward)
