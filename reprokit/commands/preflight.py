"""`reproduce.py preflight --suite S`: per cell, whether it can run here and why not.

The verdict column says "runnable", "runnable (PTX JIT)", "runnable (probed <date>)", "needs a
probe" (run the gpu-smoke suite on this host first), "not runnable" or "not implemented"; `--json`
gives the full verdicts (status ok / jit / probe / blocked). "runs on" names the stack whose image
runs the cell: a fallback link of its chain (reprokit/fallback.py) where its own is not accepted.
`--fingerprint FILE` plans for another host (a fingerprint `reproduce.py fingerprint` wrote there):
nothing is probed here; the engine is assumed to answer there and the images to be buildable."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from reprokit import checks, fallback, fingerprint, preflight, suites
from reprokit.console import console
from reprokit.errors import UserError


def add_arguments(p) -> None:
    p.add_argument("--suite", required=True)
    p.add_argument("--runner", choices=["local", "docker", "slurm"], default="local")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--json", action="store_true", help="verdicts as JSON")
    p.add_argument("--fingerprint", metavar="FILE",
                   help="a host fingerprint (JSON, as `reproduce.py fingerprint` writes it) of the host "
                        "to plan for, instead of this one")


def load_fingerprint(path: str) -> dict:
    """A stored host fingerprint; a missing or malformed file is one line."""
    try:
        fp = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"--fingerprint {path}: cannot read it ({e.strerror}); give the JSON file "
                        "`reproduce.py fingerprint` wrote on the host to plan for") from None
    except ValueError as e:
        raise UserError(f"--fingerprint {path}: not valid JSON ({e}); give the JSON file "
                        "`reproduce.py fingerprint` wrote on the host to plan for") from None
    if not isinstance(fp, dict) or not isinstance(fp.get("gpus", []), list):
        raise UserError(f"--fingerprint {path}: not a host fingerprint (no `gpus` list); give the JSON "
                        "file `reproduce.py fingerprint` wrote on the host to plan for")
    return fp


def run(args) -> int:
    suite = suites.load_suite(args.suite)
    if args.fingerprint:
        fp, where = load_fingerprint(args.fingerprint), f"host of {args.fingerprint}"
    else:
        if args.device == "gpu":  # the verdicts are for this host: a GPU verdict needs a GPU here
            checks.require_gpu("preflight --device gpu", "run it with --device cpu, on the host "
                               "with the NVIDIA GPU and its driver, or with --fingerprint FILE of it")
        fp, where = fingerprint.host_fingerprint(), "this host"
    verdicts = preflight.suite_verdicts(suite.cells, fp, args.runner, args.device,
                                        other_host=bool(args.fingerprint))
    if args.json:
        print(json.dumps(verdicts, indent=1))
        return 0
    t = Table(title=f"preflight: {suite.name} ({args.runner} runner, {args.device}, {where})",
              title_justify="left")
    for col in ("cell", "verdict", "runs on", "why"):
        t.add_column(col)
    stack_of = {c.id: c.stack for c in suite.cells}
    for cell_id, v in verdicts.items():  # runnable / needs a probe / not runnable, and why
        used = fallback.stack_to_run(stack_of[cell_id], v)
        t.add_row(cell_id, preflight.summary(v),
                  used if used == stack_of[cell_id] else f"{used} (fallback for {stack_of[cell_id]})",
                  "; ".join(v["reasons"]) or "-")
    console().print(t)
    return 0
