"""Source 000 (rnn-benchmarks) single-layer LSTM regression, PyTorch nn.LSTM (variant "nn_lstm").

Workload (seed_workloads.md section 1): time-major input [seq, batch, hidden] of uniform random
float32, one LSTM layer with input size = hidden size, target a uniform random [batch, hidden]
matrix compared with the last time step's output; SUM of squared errors (as the TF script); plain
SGD, lr 0.01. Source 000 published no PyTorch row: this cell is a same-workload comparison point.

Timing: "compile" = building the model and optimiser plus one train step (the closest PyTorch
analogue of the TF script's boundary); forward-only and train times are per example (seconds per
batch / batch). The input already sits on the device (like the Theano script's shared variable).

Subnormal floats: after the first SGD update (sum loss, lr 0.01) the gates saturate and the CPU
backward pass meets subnormal values, ~10x slower on x86 (see _lstm000.py). By default this cell
calls torch.set_flush_denormal(True) before any tensor work, as TensorFlow does by default on its
CPU threads; params.flush_denormal=false turns that off. Either way it is recorded.

The API is chosen by the torch version (_versions.at_least; each stack's choice is checked against
that version's API list by tests/containers/test_api_paths.py): torch >= 0.4 as below; torch 0.1.12 (the
torch-0.1 GPU image) through the API of its time -- Variable, .cuda(), volatile inputs for the
forward pass, loss.data[0] -- with no flush-to-zero switch (torch.set_flush_denormal came later).
THE 0.1.12 PATH HAS NEVER RUN (no PyTorch 0.1.12 on the project machines, nor on the one GPU
machine so far). The torch >= 0.4 GPU path ran on one NVIDIA H100 (torch 2.11 / JAX 0.11,
2026-11-26, docs/gpu-run): the legacy-2017 run's 000 cells (stack torch-0.1, run through torch 2.11)
and the modern run's, fp32 and framework-defaults twins (precision.effective fp32 / tf32).

Python 3.5 syntax; imports only torch and the standard library.
"""
import real_work
import timing

try:  # imported as workloads.s000_pytorch by the harness, or directly in tests
    from workloads import _lstm000 as common
    from workloads import _versions
except ImportError:  # pragma: no cover
    import _lstm000 as common
    import _versions

FRAMEWORK = "torch"
VARIANTS = ("nn_lstm",)
LEARNING_RATE = 0.01


def run(ctx):
    if ctx.variant not in (None,) + VARIANTS:
        raise ValueError("s000_pytorch: unknown variant %r (known: %s)" % (ctx.variant,
                                                                          ", ".join(VARIANTS)))
    batch, seq, hidden = common.shape(ctx)
    ftz_requested = common.flush_denormal_requested(ctx)
    import torch

    if not _versions.at_least(torch, 0, 4):  # PyTorch 0.1.12 (never run here)
        return _run_legacy(ctx, torch, batch, seq, hidden, ftz_requested)
    # before any tensor work, so that intra-op threads started later inherit it
    ftz_on = bool(torch.set_flush_denormal(True)) if ftz_requested else False
    try:
        _run(ctx, torch, batch, seq, hidden, ftz_requested, ftz_on)
    finally:
        if ftz_on:
            torch.set_flush_denormal(False)


def _run(ctx, torch, batch, seq, hidden, ftz_requested, ftz_on):
    torch.manual_seed(1234)
    gpu = ctx.device == "gpu" and torch.cuda.is_available()
    if ctx.device == "gpu" and not gpu:
        raise RuntimeError("cell asks for a GPU but torch.cuda.is_available() is False")
    dev = torch.device("cuda" if gpu else "cpu")

    def sync():
        if gpu:  # ran on one NVIDIA H100 (torch 2.11, 2026-11-26, docs/gpu-run)
            torch.cuda.synchronize()

    x = torch.rand(seq, batch, hidden, device=dev)
    y = torch.rand(batch, hidden, device=dev)
    sync()
    # The first optimizer construction in a process imports torch._dynamo (PyTorch 2.x; seconds).
    # Module imports are outside every timer in this kit, so trigger it on a throwaway first.
    t_imp = timing.clock()
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=LEARNING_RATE)
    lazy_import_s = timing.clock() - t_imp

    t0 = timing.clock()
    lstm = torch.nn.LSTM(hidden, hidden, num_layers=1).to(dev)
    opt = torch.optim.SGD(lstm.parameters(), lr=LEARNING_RATE)
    t_built = timing.clock()
    losses = []

    def train_step():
        opt.zero_grad()
        out, _ = lstm(x)
        loss = ((out[-1] - y) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    def forward_step():
        with torch.no_grad():
            out, _ = lstm(x)
        return out[-1]

    losses.append(float(train_step()))
    sync()
    t_end = timing.clock()
    ctx.record_single("compile_time", t_end - t0, "s",
                      "model and optimiser construction plus one train step (device init "
                      "excluded)", sync_desc="torch.cuda.synchronize()" if gpu else None,
                      state=common.compile_state(ctx, "no persistent compile cache (eager PyTorch)"))
    mkldnn = bool(getattr(torch.backends, "mkldnn", None) and torch.backends.mkldnn.is_available())
    ctx.describe(framework="torch", framework_version=torch.__version__,
                 api="torch.nn.LSTM (cuDNN on GPU; on CPU PyTorch's native LSTM, which uses "
                     "oneDNN's RNN primitive when mkldnn is available: %s)" % mkldnn)
    ctx.note(common.WORKLOAD_SUMMARY + "; cost = SUM of squared errors of the last step (as the "
             "original TF script); nn.LSTM default init uniform(+-1/sqrt(hidden)), two bias "
             "vectors; torch.manual_seed(1234).")
    if ftz_requested:
        state = ("torch.set_flush_denormal(True) %s before any tensor was made (FTZ+DAZ); "
                 "params.flush_denormal=false runs without it" % (
                     "succeeded" if ftz_on else "returned False (unsupported CPU): NOT set"))
    else:
        state = "left at the process default (params.flush_denormal=false): NOT flushed"
    ctx.note(common.denormal_note("PyTorch", state))
    ctx.extra["compile_breakdown_s"] = {"model_and_optimiser": t_built - t0,
                                        "first_train_step": t_end - t_built,
                                        "excluded_lazy_imports": lazy_import_s}
    ctx.note("compile_time excludes the one-time lazy imports done by the first optimizer "
             "construction in the process (%.2f s here; PyTorch 2.x imports torch._dynamo then), "
             "as module imports are excluded everywhere in the kit" % lazy_import_s)
    ctx.extra["flush_denormal"] = {"requested": ftz_requested, "active": ftz_on,
                                   "how": "torch.set_flush_denormal"}

    sync_desc = "torch.cuda.synchronize() after each iteration" if gpu else None

    def weights():
        return sum(float(p.detach().double().sum()) for p in lstm.parameters())

    def digest(out):
        return float(out.detach().double().sum())

    ctx.measure("forward_time_per_example", forward_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="one forward pass over the whole sequence (no_grad), last step kept; "
                       "input already on the device",
                real_work=real_work.Check("forward", output=digest,
                                          reference=lambda: digest(forward_step())))
    ctx.measure("train_time_per_example", train_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="forward, sum-of-squares loss on the last step, backward, SGD update",
                real_work=real_work.Check("train", state=weights))
    common.record_first_vs_later(ctx, t_end - t_built, batch)
    common.record_both_as_published(ctx, batch)
    with torch.no_grad():  # one untimed forward for the record
        last = lstm(x)[0][-1]
        final_loss = float(((last - y) ** 2).sum())
    ctx.extra["numerics"] = {
        "loss_first_train_step": losses[0],
        "loss_after_timed_train": final_loss,
        "last_output_frac_abs_gt_0.999": float((last.abs() > 0.999).float().mean()),
        "weight_abs_max_after": float(max(p.detach().abs().max() for p in lstm.parameters())),
    }


def _run_legacy(ctx, torch, batch, seq, hidden, ftz_requested):
    """PyTorch before 0.4 (0.1.12, the torch-0.1 image): autograd Variables, .cuda(), volatile
    inputs for the forward pass, loss.data[0]. NEVER RUN (no PyTorch 0.1.12 on any project machine); its
    calls are checked against the PyTorch 0.1.12 API list by tests/containers/test_api_paths.py."""
    from torch.autograd import Variable

    torch.manual_seed(1234)
    gpu = ctx.device == "gpu" and torch.cuda.is_available()
    if ctx.device == "gpu" and not gpu:
        raise RuntimeError("cell asks for a GPU but torch.cuda.is_available() is False")

    def sync():
        if gpu:
            torch.cuda.synchronize()

    x_data = torch.rand(seq, batch, hidden)
    y_data = torch.rand(batch, hidden)
    if gpu:
        x_data, y_data = x_data.cuda(), y_data.cuda()
    x, y = Variable(x_data), Variable(y_data)
    x_forward = Variable(x_data, volatile=True)  # no graph for the forward-only pass
    sync()
    t0 = timing.clock()
    lstm = torch.nn.LSTM(hidden, hidden, 1)
    if gpu:
        lstm.cuda()
    opt = torch.optim.SGD(lstm.parameters(), lr=LEARNING_RATE)
    t_built = timing.clock()

    def train_step():
        opt.zero_grad()
        out, _ = lstm(x)
        loss = ((out[-1] - y) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    def forward_step():
        out, _ = lstm(x_forward)
        return out[-1]

    first_loss = float(train_step().data[0])
    sync()
    t_end = timing.clock()
    ctx.record_single("compile_time", t_end - t0, "s",
                      "model and optimiser construction plus one train step (device init "
                      "excluded)", sync_desc="torch.cuda.synchronize()" if gpu else None,
                      state=common.compile_state(ctx, "no persistent compile cache (eager PyTorch)"))
    ctx.describe(framework="torch", framework_version=torch.__version__,
                 api="torch.nn.LSTM on autograd Variables (PyTorch 0.1.12 API; cuDNN on GPU)")
    ctx.note(common.WORKLOAD_SUMMARY + "; cost = SUM of squared errors of the last step (as the "
             "original TF script); nn.LSTM default init; torch.manual_seed(1234).")
    state = ("not available in PyTorch %s (torch.set_flush_denormal came with 0.4): NOT set%s"
             % (torch.__version__, "" if ftz_requested else "; not requested either"))
    ctx.note(common.denormal_note("PyTorch", state))
    ctx.note("This PyTorch 0.1.12 code path was written without PyTorch 0.1.12 or a GPU and has "
             "never run; its calls are checked against the PyTorch 0.1.12 API list "
             "(tests/containers/test_api_paths.py).")
    ctx.extra["compile_breakdown_s"] = {"model_and_optimiser": t_built - t0,
                                        "first_train_step": t_end - t_built}
    ctx.extra["flush_denormal"] = {"requested": ftz_requested, "active": False,
                                   "how": "unavailable in this PyTorch"}
    sync_desc = "torch.cuda.synchronize() after each iteration" if gpu else None

    # real-work digests, untimed, through the 0.1.12 tensor API: Variable.data, .double(), .abs(),
    # .nelement(); tensor.sum() is a Python number in 0.1.12 (a 0-dim tensor from 0.4: float() of
    # either). Float64 on the tensor's own device.
    def weights():
        return sum(float(p.data.double().sum()) for p in lstm.parameters())

    def digest(out):  # mean |h[-1]|
        data = out.data
        return float(data.double().abs().sum()) / data.nelement()

    ctx.measure("forward_time_per_example", forward_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="one forward pass over the whole sequence (volatile input), last step "
                       "kept; input already on the device",
                real_work=real_work.Check("forward", output=digest,
                                          reference=lambda: digest(forward_step())))
    ctx.measure("train_time_per_example", train_step, unit="ms", kind="ms_per_item",
                items=batch, sync=sync, sync_desc=sync_desc,
                method="forward, sum-of-squares loss on the last step, backward, SGD update",
                real_work=real_work.Check("train", state=weights))
    common.record_first_vs_later(ctx, t_end - t_built, batch)
    common.record_both_as_published(ctx, batch)
    last = forward_step().data
    ctx.extra["numerics"] = {
        "loss_first_train_step": first_loss,
        "loss_after_timed_train": float(((last - y_data) ** 2).sum()),
        "last_output_frac_abs_gt_0.999": float((last.abs() > 0.999).float().mean()),
    }
