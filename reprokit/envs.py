"""Per-stack Python environments for the local runner.

A stack with `local.env: host` runs on the current interpreter (its framework is installed with the
kit). A stack with `local.env: venv` gets its own virtual environment created from its pinned
requirements, because some frameworks (Theano, MXNet) need numpy < 2, which the host cannot share.
Environments are cached by a hash of their requirements under REPROKIT_VENV_DIR
(default ~/.cache/reprokit/venvs).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

from reprokit.runners.base import StackUnavailable


def venv_root() -> Path:
    return Path(os.environ.get("REPROKIT_VENV_DIR", Path.home() / ".cache" / "reprokit" / "venvs"))


def venv_path(stack: str, requirements: list[str]) -> Path:
    digest = hashlib.sha256("\n".join(sorted(requirements)).encode()).hexdigest()[:12]
    return venv_root() / f"{stack}-{digest}"


def python_for(stack: str, spec: dict, say=print) -> str:
    """The interpreter that runs this stack's cells, creating its venv on first use."""
    local = spec["local"]
    if local["env"] == "host":
        return sys.executable
    reqs = local["requirements"]
    path = venv_path(stack, reqs)
    py = path / "bin" / "python"
    marker = path / ".reprokit-complete"
    if marker.exists() and py.exists():
        return str(py)
    say(f"creating environment for stack {stack}: {' '.join(reqs)} (one time, cached in {path})")
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(path)
        proc = subprocess.run([str(py), "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", *reqs],
                              capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.SubprocessError) as e:
        raise StackUnavailable(f"could not create the {stack} environment at {path}: {e}") from e
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise StackUnavailable(f"pip could not install {' '.join(reqs)} for stack {stack}: {last}")
    marker.write_text("\n".join(reqs) + "\n")
    return str(py)
