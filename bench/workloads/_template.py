"""TEMPLATE of a bench workload: `reproduce.py new-benchmark ID` copies it to
bench/workloads/s<ID>_<framework>.py (docs/adding-a-benchmark.md, step 5). Replace the model below by the
published one, in the published framework; keep the shape.

What the harness expects of a workload (bench/harness.py):
* `run(ctx)`: `ctx.params` holds the cell's params from its suite (merged over the suite defaults),
  `ctx.variant` its variant, `ctx.device` "cpu" or "gpu".
* `ctx.describe(framework=..., framework_version=..., api=...)`: what ran.
* `ctx.measure(name, step, unit=, kind=, items=, method=, sync=, real_work=)` times `step()` under the
  cell's budget (warm-up, then samples until the budget or precision stop). `kind` says how samples
  become the metric: "ms_per_item" (milliseconds per item, `items` items per step), "ms", "s",
  "items_per_s". Every metric the suite's cell lists must be measured under that name.
* On a GPU pass `sync=` (e.g. torch.cuda.synchronize) so each sample ends when the device is done.
* `real_work=` (bench/real_work.py): the check that the timed steps did the work. Training: a digest
  of the weights must move; forward: the last timed output must match the step run again untimed.
* `ctx.note(text)` for anything a reader of the report must know (a substitution, a deviation).

Python 3.5 syntax (no f-strings), standard library plus the framework, no imports from `reprokit`.
This template's model is a dense layer y = W x in pure Python (no framework), so it runs anywhere.
"""
import random

import real_work

FRAMEWORK = None  # the framework's import name, e.g. "torch"; None for the standard library


def run(ctx):
    n = int(ctx.params.get("n", 32))          # layer width: every param comes from the suite's cell
    batch = int(ctx.params.get("batch", 4))
    lr = float(ctx.params.get("lr", 0.01))
    rng = random.Random(int(ctx.params.get("seed", 1234)))
    w = [[rng.uniform(-0.1, 0.1) for _ in range(n)] for _ in range(n)]
    xs = [[rng.random() for _ in range(n)] for _ in range(batch)]
    ys = [[rng.random() for _ in range(n)] for _ in range(batch)]

    def forward(x):
        return [sum(wi * xi for wi, xi in zip(row, x)) for row in w]

    def forward_step():  # one batch forward; returns its output for the real-work check
        return [forward(x) for x in xs]

    def train_step():  # one batch: forward, squared-error gradient, SGD update of W
        for x, y in zip(xs, ys):
            out = forward(x)
            for i, row in enumerate(w):
                g = 2.0 * (out[i] - y[i])
                for j in range(n):
                    row[j] -= lr * g * x[j]

    def output_digest(outs):  # mean |output|, in float: never near zero for these inputs
        return sum(abs(v) for o in outs for v in o) / float(batch * n)

    def weights_digest():  # a sum of squares: an update whose entries sum to zero still moves it
        return sum(v * v for row in w for v in row)

    ctx.describe(framework="python", framework_version=None, api="nested lists (template)")
    ctx.measure("forward_time_per_example", forward_step, unit="ms", kind="ms_per_item", items=batch,
                method="one forward pass of a batch of %d through a %dx%d dense layer" % (batch, n, n),
                real_work=real_work.Check("forward", output=output_digest,
                                          reference=lambda: output_digest(forward_step())))
    ctx.measure("train_time_per_example", train_step, unit="ms", kind="ms_per_item", items=batch,
                method="one SGD step over a batch of %d (forward, gradient, update)" % batch,
                real_work=real_work.Check("train", state=weights_digest))
