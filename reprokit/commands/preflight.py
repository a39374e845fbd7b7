"""`reproduce.py preflight --suite S`: per cell, whether it can run here and why not.

The verdict column says "runnable", "runnable (PTX JIT)", "runnable (probed <date>)", "needs a
probe" (run the gpu-smoke suite on this host first), "not runnable" or "not implemented"; `--json`
gives the full verdicts (status ok / jit / probe / blocked). "runs on" names the stack whose image
runs the cell: a fallback link of its chain (reprokit/plan/fallback.py) where its own is not accepted.
`--fingerprint FILE` plans for another host (a fingerprint `reproduce.py fingerprint` wrote there):
nothing is probed here; the engine is assumed to answer there and the images to be buildable.

The local runner's GPU cells are judged on the environments that would run them (reprokit/
env_preflight.py): each stack's local environment, or the interpreter `--python STACK=PATH` names,
probed by running it (nothing is built: an environment not made yet "needs a probe"). With
`--fingerprint FILE` the file's own `environments` (as it states them: each says how it was
obtained) are used where it has them; the others are probed HERE and assumed to be what runs
there, and the output says so."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from reprokit.catalog import suites
from reprokit.console import console
from reprokit.errors import UserError
from reprokit.plan import fallback, preflight
from reprokit.probes import fingerprint
from reprokit.runners import byo, host_preflight


def add_arguments(p) -> None:
    p.add_argument("--suite", required=True)
    p.add_argument("--runner", choices=["local", "docker", "slurm"], default="local")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--json", action="store_true", help="verdicts as JSON")
    p.add_argument("--fingerprint", metavar="FILE",
                   help="a host fingerprint (JSON, as `reproduce.py fingerprint` writes it) of the host "
                        "to plan for, instead of this one")
    byo.add_arguments(p)


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


def _environment_note(env_of, stack: str) -> str:
    """' via PYTHON (framework version, a substitution for the pin)' for a stack whose environment
    preflight judged (local runner, GPU cells), else ''."""
    from reprokit.runners import byo

    rec = env_of.seen.get(stack) if hasattr(env_of, "seen") else None
    if not rec or rec.get("not_built"):
        return ""
    pin = suites.load_stacks()[stack].get("original", {}).get("framework_version")
    same = byo.pin_matches(pin, rec.get("version"))
    label = "" if same is not False else f", a substitution for {pin}"
    return f" via {rec.get('python')} ({rec.get('framework')} {rec.get('version') or '?'}{label})"


def run(args) -> int:
    suite = suites.load_suite(args.suite)
    if (args.python or args.python_config) and args.runner != "local":
        flag = "--python" if args.python else "--python-config"
        raise UserError(f"{flag} applies to --runner local here (the Slurm local launcher runs the "
                        f"same environments: judge them with --runner local); add --runner local or "
                        f"drop {flag}")
    if args.fingerprint:
        fp, where = load_fingerprint(args.fingerprint), f"host of {args.fingerprint}"
    else:
        if args.device == "gpu":  # the verdicts are for this host: a GPU verdict needs a GPU here
            fingerprint.require_gpu("preflight --device gpu", "run it with --device cpu, on the host "
                               "with the NVIDIA GPU and its driver, or with --fingerprint FILE of it")
        fp, where = fingerprint.host_fingerprint(), "this host"
    byo.from_args(args)
    env_of = None
    if args.runner == "local":
        from reprokit.runners import env_preflight

        env_of = env_preflight.environments_for(fp, suites.load_stacks(),
                                                other_host=bool(args.fingerprint), build=False)
    verdicts = host_preflight.suite_verdicts(suite.cells, fp, args.runner, args.device,
                                        other_host=bool(args.fingerprint), environments=env_of)
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
        runs_on = used if used == stack_of[cell_id] else f"{used} (fallback for {stack_of[cell_id]})"
        t.add_row(cell_id, preflight.summary(v), runs_on + _environment_note(env_of, used),
                  "; ".join(v["reasons"]) or "-")
    console().print(t)
    if env_of is not None and args.device == "gpu":  # where the environments judged were probed
        from reprokit.runners import env_preflight

        console().print(env_preflight.where_line(env_of, args.fingerprint or "this host"))
    return 0
