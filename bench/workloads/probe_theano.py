"""GPU capability probe, Theano (stack theano-0.9; suite gpu-smoke). See _probe.py for the checks.

GEMM: theano.tensor.dot of two shared float32 matrices (cuBLAS through the old CUDA backend on a
GPU). LSTM step: Theano has no cuDNN LSTM in the backend source 000 used (device=gpu), so the step
is the one the s000 workload's scan runs each time step: x.W + h.U + b through theano.tensor.dot
(cuBLAS) and sigmoid/tanh, whose kernels Theano compiles with nvcc at run time (-arch=sm_52 in the
GPU image, so JIT-compiled PTX on any newer GPU). One bias vector.

The device is whatever THEANO_FLAGS says (device=gpu in the GPU image, device=cpu on the CPU);
theano.function copies its outputs to the host, which synchronises.

THE GPU PATH HAS NEVER RUN (the one GPU machine so far, docs/gpu-run, had no Theano); the calls are
checked against the Theano 0.9.0 API list by tests/containers/test_api_paths.py.
On the CPU the same code ran with Theano 0.9.0 itself (Python 3.6, the local
runner's environment candidate for this stack, 2026-11-25) and with Theano 1.0.5
(tests/plan/test_probes.py runs whichever the local runner provides).

Python 3.5 syntax; imports only theano, numpy and the standard library.
"""
try:  # imported as workloads.probe_theano by the harness, or directly in tests
    from workloads import _probe as common
except ImportError:  # pragma: no cover
    import _probe as common

FRAMEWORK = "theano"


def run(ctx):
    p = common.settings(ctx)
    ptx_note = common.force_ptx_jit(ctx)  # before theano is imported (it initialises CUDA)
    import numpy as np
    import theano
    import theano.tensor as T

    device = str(theano.config.device)
    gpu = device.startswith(("gpu", "cuda"))
    if ctx.device == "gpu" and not gpu:
        raise common.ProbeFailure("the cell asks for a GPU but theano.config.device is %r" % device)
    a_np, b_np = common.gemm_inputs(np, p)
    x_np, h0_np, c0_np, w = common.lstm_inputs(np, p)
    hidden = p["hidden"]
    a, b = theano.shared(a_np, name="a"), theano.shared(b_np, name="b")
    x, h0, c0 = (theano.shared(v, name=n) for v, n in ((x_np, "x"), (h0_np, "h0"), (c0_np, "c0")))
    W = theano.shared(np.full((p["input"], 4 * hidden), w, dtype=np.float32), name="W")
    U = theano.shared(np.full((hidden, 4 * hidden), w, dtype=np.float32), name="U")
    bias = theano.shared(np.full((4 * hidden,), w, dtype=np.float32), name="bias")
    act = T.dot(x, W) + T.dot(h0, U) + bias
    gate_i = T.nnet.sigmoid(act[:, 0:hidden])
    gate_f = T.nnet.sigmoid(act[:, hidden:2 * hidden])
    gate_o = T.nnet.sigmoid(act[:, 2 * hidden:3 * hidden])
    cand = T.tanh(act[:, 3 * hidden:4 * hidden])
    c1 = gate_f * c0 + gate_i * cand
    h1 = gate_o * T.tanh(c1)
    f_gemm = common.stage("compiling the GEMM", lambda: theano.function([], T.dot(a, b)))
    f_step = common.stage("compiling the LSTM step", lambda: theano.function([], [h1, c1]))
    grads = T.grad(h1.sum(), [x, h0, c0, W, U, bias])
    f_grad = common.stage("compiling the LSTM backward",
                          lambda: theano.function([], grads[:3] + [g.sum() for g in grads[3:]]))

    def gemm():
        return np.asarray(f_gemm())

    def lstm_step():
        h, c = f_step()
        return np.asarray(h), np.asarray(c)

    def lstm_grad():
        dx, dh, dc, sw, su, sb = f_grad()
        return {"x": np.asarray(dx), "h0": np.asarray(dh), "c0": np.asarray(dc),
                "params": float(sw) + float(su) + float(sb)}

    common.run_probe(ctx, np, p, "theano", theano.__version__, gemm, lstm_step,
                     "theano.tensor.dot (device %s)" % device,
                     "x.W + h.U + b with theano.tensor.dot and nnet.sigmoid/tanh (device %s)" % device,
                     ptx_note, ctx.device, n_bias=1, lstm_grad=lstm_grad)
