"""`reproduce.py preflight --suite S`: per cell, whether it can run here and why not.

The verdict column says "runnable", "runnable (PTX JIT)", "runnable (probed <date>)", "needs a
probe" (run the gpu-smoke suite on this host first), "not runnable" or "not implemented"; `--json`
gives the full verdicts (status ok / jit / probe / blocked)."""

from __future__ import annotations

import json

from rich.table import Table

from reprokit import checks, fingerprint, preflight, suites
from reprokit.console import console


def add_arguments(p) -> None:
    p.add_argument("--suite", required=True)
    p.add_argument("--runner", choices=["local", "docker"], default="local")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--json", action="store_true", help="verdicts as JSON")


def run(args) -> int:
    suite = suites.load_suite(args.suite)
    if args.device == "gpu":  # the verdicts are for this host: a GPU verdict needs a GPU here
        checks.require_gpu("preflight --device gpu", "run it with --device cpu, or on the host "
                           "with the NVIDIA GPU and its driver")
    verdicts = preflight.suite_verdicts(suite.cells, fingerprint.host_fingerprint(), args.runner,
                                        args.device)
    if args.json:
        print(json.dumps(verdicts, indent=1))
        return 0
    t = Table(title=f"preflight: {suite.name} ({args.runner} runner, {args.device})",
              title_justify="left")
    for col in ("cell", "verdict", "why"):
        t.add_column(col)
    for cell_id, v in verdicts.items():  # runnable / needs a probe / not runnable, and why
        t.add_row(cell_id, preflight.summary(v), "; ".join(v["reasons"]) or "-")
    console().print(t)
    return 0
