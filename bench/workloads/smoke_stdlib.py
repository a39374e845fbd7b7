"""Smoke workload with no framework: a pure-Python matrix product.

Exists so the harness, runners and reports can be tested on any interpreter in seconds.
Python 3.5 syntax, standard library only.
"""
import random

import real_work

FRAMEWORK = None


def run(ctx):
    n = int(ctx.params.get("n", 24))
    rng = random.Random(1234)
    a = [[rng.random() for _ in range(n)] for _ in range(n)]
    b = [[rng.random() for _ in range(n)] for _ in range(n)]
    bt = list(zip(*b))

    def step():
        return [[sum(x * y for x, y in zip(row, col)) for col in bt] for row in a]

    ctx.describe(framework="python", framework_version=None, api="nested list comprehension")
    flops = 2 * n * n * n

    def digest(c):  # mean |entry| of the product (entries are positive: never near zero)
        return sum(abs(v) for row in c for v in row) / float(n * n)

    def check():  # the last timed product against the same product computed again, untimed
        return real_work.Check("forward", output=digest, reference=lambda: digest(step()))

    ctx.measure("matmul_time", step, unit="ms", kind="ms", items=1,
                method="one %dx%d pure-Python matrix product per sample" % (n, n),
                real_work=check())
    ctx.measure("matmul_flops", step, unit="FLOP/s", kind="items_per_s", items=flops,
                method="%d FLOP per product / seconds" % flops, real_work=check())
