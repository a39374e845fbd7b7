"""GPU capability probe, PyTorch (stacks torch-0.1, torch-1.3, torch-modern; suite gpu-smoke).

GEMM: torch.mm on float32 tensors (cuBLAS on a GPU). LSTM step: torch.nn.LSTM over one time step
with an initial state (cuDNN on a GPU), every parameter filled with one constant; its backward through
autograd (cuDNN's backward-data and backward-weights on a GPU). One code path for
every PyTorch from 0.1.12 on: tensors moved with .cuda(), the LSTM fed autograd Variables (a no-op
wrapper from 0.4 on), results read through .data.cpu().numpy(). See _probe.py for the checks.

The GPU path ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run),
suite gpu-smoke, stacks torch-0.1, torch-1.3 and torch-modern, all three through torch 2.11.0+cu130.
PyTorch 0.1.12 and 1.3 themselves have never run (not installable here); their
calls are checked against the API lists by tests/containers/test_api_paths.py. On the CPU it runs with the
installed PyTorch (tests/plan/test_probes.py).

Python 3.5 syntax; imports only torch, numpy and the standard library.
"""
try:  # imported as workloads.probe_torch by the harness, or directly in tests
    from workloads import _probe as common
except ImportError:  # pragma: no cover
    import _probe as common

FRAMEWORK = "torch"


def run(ctx):
    p = common.settings(ctx)
    ptx_note = common.force_ptx_jit(ctx)  # before torch is imported
    import numpy as np
    import torch
    from torch.autograd import Variable

    gpu = ctx.device == "gpu"
    if gpu and not torch.cuda.is_available():
        raise common.ProbeFailure("the cell asks for a GPU but torch.cuda.is_available() is False")
    torch.manual_seed(p["seed"])

    def place(t):
        return t.cuda() if gpu else t

    a_np, b_np = common.gemm_inputs(np, p)
    x_np, h0_np, c0_np, w = common.lstm_inputs(np, p)
    a, b = place(torch.from_numpy(a_np)), place(torch.from_numpy(b_np))
    # [seq=1, batch, input] and [layers=1, batch, hidden], time-major as nn.LSTM's default
    x = Variable(place(torch.from_numpy(x_np.reshape(1, p["batch"], p["input"]))))
    h0 = Variable(place(torch.from_numpy(h0_np.reshape(1, p["batch"], p["hidden"]))))
    c0 = Variable(place(torch.from_numpy(c0_np.reshape(1, p["batch"], p["hidden"]))))
    lstm = torch.nn.LSTM(p["input"], p["hidden"], 1)
    for param in lstm.parameters():  # weight_ih, weight_hh, bias_ih, bias_hh: two bias vectors
        param.data.fill_(w)
    if gpu:
        lstm.cuda()

    def gemm():
        return torch.mm(a, b).cpu().numpy()

    def lstm_step():
        _out, state = lstm(x, (h0, c0))
        return state[0].data.cpu().numpy(), state[1].data.cpu().numpy()

    # the backward: leaf Variables that ask for their gradients (Variable(..., requires_grad=True)
    # exists from 0.1.12 on; a plain tensor wrapper from 0.4)
    gx, gh0, gc0 = (Variable(v.data.clone(), requires_grad=True) for v in (x, h0, c0))

    def lstm_grad():
        for leaf in [gx, gh0, gc0] + list(lstm.parameters()):
            if leaf.grad is not None:
                leaf.grad.data.zero_()
        _out, state = lstm(gx, (gh0, gc0))
        state[0].sum().backward()
        total = sum(float(q.grad.data.double().sum()) for q in lstm.parameters())
        return {"x": gx.grad.data.cpu().numpy(), "h0": gh0.grad.data.cpu().numpy(),
                "c0": gc0.grad.data.cpu().numpy(), "params": total}

    common.run_probe(ctx, np, p, "torch", torch.__version__, gemm, lstm_step,
                     "torch.mm" + (" (cuBLAS)" if gpu else ""),
                     "torch.nn.LSTM" + (" (cuDNN)" if gpu else " (PyTorch's CPU LSTM)"),
                     ptx_note, ctx.device, n_bias=2, lstm_grad=lstm_grad)
