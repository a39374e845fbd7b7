"""Bring your own interpreter: `--python STACK=PATH` (or `--python-config FILE`) names an existing
interpreter for a stack, e.g. a cluster's PyTorch module, a conda environment, a notebook's python.

The local runner and the Slurm local launcher then run that stack's cells with it, instead of the
environment reprokit/runners/venvs.py would choose (no candidate is tried, nothing is installed).
Its versions are probed (reprokit/runners/env_probe.py) and compared with the stack's pins
(stacks.yaml `original`: framework version, Python, CUDA and cuDNN where the interpreter's build has
them); every difference is a labelled substitution in each cell result (implementation.substitutes)
and the environment's `chosen` record says `byo: true`. A bad path, a file that is not executable,
or an interpreter that cannot import the stack's framework is one line and exit status 2, before
anything runs. The mapping is held for the process (`use`), so the local runner, the Slurm local
launcher and preflight see the same interpreters. The stack's environment variables (stacks.yaml
`local.env_vars`, e.g. Theano's THEANO_FLAGS with device=cpu) apply only where the user has not set
the variable: THEANO_FLAGS=device=cuda,floatX=float32 in the environment lets a user's Theano with
libgpuarray use the GPU.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from reprokit import files
from reprokit.errors import UserError

EXAMPLE = "--python torch-1.3=/usr/bin/python3"
_CHOSEN: dict[str, str] = {}


def option(text: str) -> tuple[str, str]:
    """argparse `type=` of --python: STACK=PATH (syntax only; the path is checked by `check`)."""
    stack, sep, path = str(text).partition("=")
    if not sep or not stack.strip() or not path.strip():
        raise UserError(f"--python must be STACK=PATH, not '{text}'; pass e.g. {EXAMPLE} (the "
                        "interpreter that runs that stack's cells)")
    return stack.strip(), path.strip()


def load_config(path: str) -> list[tuple[str, str]]:
    """--python-config FILE: a YAML mapping of stack name to interpreter path."""
    import yaml

    fix = "give a YAML file mapping stack names to interpreter paths (torch-1.3: /usr/bin/python3)"
    try:
        doc = files.load_yaml(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"--python-config {path}: cannot read it ({e.strerror}); {fix}") from None
    except yaml.YAMLError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "not YAML"
        raise UserError(f"--python-config {path}: not valid YAML ({first}); {fix}") from None
    except (files.DuplicateKey, files.NotFinite) as e:
        raise UserError(f"--python-config {path}: {e}; {fix}") from None
    except (ValueError, OverflowError) as e:  # a date such as 2021-13-01: YAML, but not buildable
        raise UserError(f"--python-config {path}: holds a value YAML cannot build ({e}); {fix}") from None
    if not isinstance(doc, dict) or not doc or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in doc.items()):
        raise UserError(f"--python-config {path}: not a mapping of stack names to paths; {fix}")
    return [(k.strip(), v.strip()) for k, v in doc.items()]


def check(pairs: list[tuple[str, str]], stacks: dict) -> dict[str, str]:
    """{stack: absolute path} of the interpreters named; a bad entry is a one-line UserError."""
    out: dict[str, str] = {}
    for stack, path in pairs:
        flag = f"--python {stack}={path}"
        if stack not in stacks:
            raise UserError(f"{flag}: unknown stack '{stack}'; known: {', '.join(sorted(stacks))}")
        p = Path(os.path.expanduser(path))
        if not p.is_absolute():
            p = Path.cwd() / p  # kept unresolved: a venv's python is a link whose target is not the venv
        if stack in out and out[stack] != str(p):
            raise UserError(f"{flag}: stack {stack} is already given {out[stack]}; name one "
                            "interpreter per stack")
        if not p.exists():
            raise UserError(f"{flag}: no such file; give the path of an existing Python interpreter "
                            "(e.g. the output of `which python` with the module or environment loaded)")
        if p.is_dir():
            raise UserError(f"{flag} is a directory; give the interpreter itself (e.g. "
                            f"{p / 'bin' / 'python'})")
        if not os.access(p, os.X_OK):
            raise UserError(f"{flag} is not executable; give the path of a Python interpreter you "
                            "can run (check its permissions)")
        out[stack] = str(p)
    return out


def use(mapping: dict[str, str]) -> dict[str, str]:
    """Make `mapping` the interpreters of this process; returns the previous mapping."""
    from reprokit.runners import venvs

    old = dict(_CHOSEN)
    _CHOSEN.clear()
    _CHOSEN.update(mapping)
    # venvs.environment_for asks the registry first: the user's interpreter comes before any
    # candidate (registered here, so the venv code imports nothing of this module)
    venvs.user_environments({stack: (lambda spec, stack=stack, path=path: environment(stack, spec, path))
                             for stack, path in mapping.items()})
    return old


def chosen() -> dict[str, str]:
    return dict(_CHOSEN)


def interpreter_for(stack: str) -> str | None:
    return _CHOSEN.get(stack)


def env_vars(spec: dict) -> dict[str, str]:
    """The stack's local variables the user has not set (theirs win for their interpreter)."""
    return {k: v for k, v in spec.get("local", {}).get("env_vars", {}).items() if k not in os.environ}


def probe(stack: str, spec: dict, path: str) -> dict:
    """The interpreter's `environments` entry; a one-line UserError when it cannot be run or cannot
    import the stack's framework."""
    from reprokit.runners import env_probe

    flag = f"--python {stack}={path}"
    try:
        rec = env_probe.probe(path, spec["framework"], env_vars(spec), byo=True)
    except env_probe.ProbeError as e:
        raise UserError(f"{flag}: {e}; give the path of a working Python interpreter") from None
    if rec.get("error"):
        module = rec.get("framework")
        raise UserError(f"{flag}: that interpreter cannot import {module} ({rec['error'][:160]}); "
                        f"name an interpreter with {module} installed (e.g. the cluster's module for "
                        "it), or drop the option to use the kit's environment")
    return rec


def verify(mapping: dict[str, str], stacks: dict) -> dict[str, dict]:
    """Probe every named interpreter before anything runs: {stack: environments entry}."""
    return {stack: probe(stack, stacks[stack], path) for stack, path in mapping.items()}


def _tokens(pin: str | None) -> list[tuple[list[str], bool]]:
    """Dotted version numbers in a pin's text, each with whether it means 'or later' (3.5+)."""
    return [(m.group(1).split("."), bool(m.group(2)))
            for m in re.finditer(r"(\d+(?:\.\d+)+)(\+?)", str(pin or ""))]


def pin_matches(pin: str | None, version: str | None) -> bool | None:
    """Whether `version` is one the pin names (1.3 matches 1.3.1; 3.5+ matches 3.11); None when the
    pin names no version (`unstated`)."""
    tokens = _tokens(pin)
    if not tokens:
        return None
    have = re.findall(r"\d+", str(version or "").split("+")[0])
    for parts, or_later in tokens:
        if or_later:
            if [int(x) for x in have[:len(parts)]] >= [int(x) for x in parts]:
                return True
        elif have[:len(parts)] == parts:
            return True
    return False


def substitutes(stack: str, spec: dict, rec: dict, path: str) -> list[dict]:
    """A labelled substitution for every pin of the stack the interpreter differs from."""
    original = spec.get("original") or {}
    why = (f"--python {stack}={path}: the user's interpreter runs this stack (its versions as "
           f"probed: {rec.get('probe')})")
    build = f"CUDA {rec['cuda']} build" if rec.get("cuda") else "CPU-only build" \
        if rec.get("gpu_build") is False else "build unknown"
    out = []
    checks = [("framework", original.get("framework_version"),
               f"{rec.get('framework')} {rec.get('version')} ({build}) at {path}", rec.get("version")),
              ("Python", original.get("python"), f"Python {rec.get('python_version')}",
               rec.get("python_version"))]
    if rec.get("cuda"):
        checks.append(("CUDA", original.get("cuda"), f"CUDA {rec['cuda']}", rec["cuda"]))
    if rec.get("cudnn") and rec["cudnn"] != "built in":
        checks.append(("cuDNN", original.get("cudnn"), f"cuDNN {rec['cudnn']}", rec["cudnn"]))
    for what, pin, used, version in checks:
        if pin_matches(pin, version) is False:
            label = f"{spec.get('framework')} {pin}" if what == "framework" else f"{what} {pin}"
            out.append({"original": f"{label} (stacks.yaml pin of {stack})", "used": used, "why": why})
    return out


def environment(stack: str, spec: dict, path: str):
    """The venvs.Environment that runs `stack` with the user's interpreter."""
    from reprokit.runners.venvs import Environment

    rec = probe(stack, spec, path)
    chosen = {"candidate": "byo", "python": rec.get("python_version"), "interpreter": path,
              "requirements": [], "fallback": False, "byo": True,
              "why": f"named with --python {stack}={path}",
              "versions": {"framework": rec.get("framework"), "version": rec.get("version"),
                           "cuda": rec.get("cuda"), "cudnn": rec.get("cudnn")}}
    return Environment(path, env_vars(spec), substitutes(stack, spec, rec, path), chosen, [], probe=rec)


# -- the command line's options (run and preflight) --------------------------------------------
def add_arguments(p) -> None:
    """--python STACK=PATH and --python-config FILE (the run and preflight commands)."""
    p.add_argument("--python", metavar="STACK=PATH", action="append", type=option, default=[],
                   help="run STACK's cells with this interpreter (e.g. a cluster's PyTorch module) "
                        "instead of the kit's environment; repeatable; local runner and the Slurm "
                        "local launcher; its versions are recorded and differences from the stack's "
                        "pins labelled as substitutions")
    p.add_argument("--python-config", metavar="FILE",
                   help="a YAML file mapping stack names to interpreter paths (as --python)")


def from_args(args) -> dict[str, str]:
    """from_options of a command's parsed --python / --python-config."""
    return from_options(args.python, args.python_config)


def from_options(python, python_config: str | None) -> dict[str, str]:
    """The --python (STACK, PATH) pairs and --python-config file's interpreters, checked and probed
    (one line, exit 2, when one is missing, not executable or lacks the stack's framework), then
    used by this process."""
    from reprokit.catalog import suites

    pairs = list(python or [])
    if python_config:
        pairs += load_config(python_config)
    if not pairs:
        return {}
    stacks = suites.load_stacks()
    mapping = check(pairs, stacks)
    verify(mapping, stacks)
    use(mapping)
    return mapping
