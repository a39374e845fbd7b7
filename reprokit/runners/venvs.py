"""Per-stack Python environments for the local runner (and the Slurm local launcher), found by trying.

A stack's `local` block (reprokit/data/stacks.yaml) may name an ordered list of `candidates`: each an
interpreter version (`python: "3.6"`), an optional pip to install first (old interpreters bundle a pip
that ignores Requires-Python), pinned `requirements` and a `check` (Python code that must exit 0 in
the new environment, e.g. importing Theano's compiled scan loop). The first candidate whose
interpreter exists here, whose requirements install and whose check passes wins. When none does, the
stack falls back to its stand-in: `local.env: host` (the current interpreter) or `local.env: venv`
(a venv of the current interpreter from `local.requirements`), with `local.substitutes`.

Every attempt (candidate, interpreter, pins, outcome, the error's last line, date) is returned with
the chosen environment; the local runner copies them into run.json and every cell result, and
`python -m reprokit.runners.venvs --try-all --write` records them as data (reprokit/data/stack_attempts.yaml).

Interpreters are looked up as REPROKIT_PYTHON_<X>_<Y> (a path), then pyenv's versions
($PYENV_ROOT, default ~/.pyenv), then `python<X>.<Y>` on PATH. Environments are cached by a hash of
interpreter, pip and requirements under REPROKIT_VENV_DIR (default ~/.cache/reprokit/venvs); a
candidate whose check failed is remembered there too (`<name>.failed.json`; delete it, or set
REPROKIT_RETRY_ENVS=1, to try again).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from reprokit import files, kitdata
from reprokit.runners import bounded
from reprokit.runners.base import StackUnavailable

INSTALL_TIMEOUT_S = 1800
CHECK_TIMEOUT_S = 600


def venv_root() -> Path:
    return Path(os.environ.get("REPROKIT_VENV_DIR", Path.home() / ".cache" / "reprokit" / "venvs"))


def venv_path(stack: str, requirements: list[str], key: str = "") -> Path:
    digest = hashlib.sha256((key + "\n".join(sorted(requirements))).encode()).hexdigest()[:12]
    return venv_root() / f"{stack}-{digest}"


@dataclass
class Environment:
    """The interpreter that runs a stack's cells and how it was chosen."""
    python: str
    env_vars: dict[str, str]
    substitutes: list[dict]
    chosen: dict
    attempts: list[dict] = field(default_factory=list)
    probe: dict | None = None  # what it can use (runners/env_probe.py), when probed already

    def record(self) -> dict:
        """What run.json and every cell result keep (cell_result.schema.json `environment`)."""
        return {"chosen": self.chosen, "attempts": self.attempts}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _last_line(text: str, default: str) -> str:
    """The error's last line; a compiler's first `error:` beside it when the output has one (a
    failed C build of Theano folds the compiler output into one exception line)."""
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else default
    m = re.search(r"(?:[\w./-]+:\d+:\d+: )?(?:fatal )?error: [^\n]*", text or "")
    if m and m.group(0) not in last[:300]:
        compiler = m.group(0).split(". ")[0].strip()
        compiler = re.sub(r"^\S*/([^/\s]+:\d+:\d+: )", r"\1", compiler)  # the file name only
        return f"{last[:150]} ... {compiler[:250]}"
    return last[:400]


def _step_error(cmd: list[str], timeout: float, failed: str) -> str | None:
    """None when the command succeeds; else why it did not: the exception, or its stderr's last
    line (`failed` when it printed nothing)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{type(e).__name__}: {e}"
    return None if proc.returncode == 0 else _last_line(proc.stderr, failed)


def interpreter_version(path: str) -> str | None:
    """X.Y.Z of the interpreter at `path`, or None when it does not run."""
    try:  # bounded: the path may be anything (reprokit/runners/bounded.py)
        out = bounded.run([path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                          timeout=60)
    except (OSError, subprocess.SubprocessError, bounded.TooMuchOutput):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def find_interpreter(version: str) -> tuple[str | None, str | None, str]:
    """(path, X.Y.Z, where it was looked for) of an interpreter of `version` ("3.6")."""
    looked = []
    env_name = "REPROKIT_PYTHON_" + version.replace(".", "_")
    explicit = os.environ.get(env_name)
    paths: list[str] = []
    if explicit:
        paths.append(explicit)
    looked.append(env_name)
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    looked.append(f"{pyenv}/{version}.*")
    if pyenv.is_dir():
        for d in sorted(pyenv.glob(f"{version}.*"), reverse=True):
            if (d / "bin" / f"python{version}").exists():
                paths.append(str(d / "bin" / f"python{version}"))
    on_path = shutil.which(f"python{version}")
    looked.append(f"python{version} on PATH")
    if on_path:
        paths.append(on_path)
    for p in paths:
        full = interpreter_version(p)
        if full and (full == version or full.startswith(version + ".")):
            return p, full, ", ".join(looked)
    return None, None, ", ".join(looked)


def _attempt(stack: str, cand: dict, index: int) -> dict:
    return {"stack": stack, "candidate": cand["id"], "index": index, "python": cand["python"],
            "interpreter": None, "interpreter_version": None, "pip": cand.get("pip"),
            "requirements": list(cand["requirements"]), "outcome": None, "error": None,
            "date": _now(), "seconds": 0.0, "cached": False}


def candidate_env_vars(cand: dict, base: dict[str, str], path: Path) -> dict[str, str]:
    """The stack's env_vars updated by the candidate's, with {venv} replaced by the environment's
    directory (e.g. a Theano compile cache of its own: Theano names its default one after the
    platform and Python version only, so two Theano releases on one interpreter would share it)."""
    return {k: v.replace("{venv}", str(path)) for k, v in {**base, **cand.get("env_vars", {})}.items()}


def _run_check(py: str, check: str, env_vars: dict[str, str]) -> tuple[bool, str]:
    env = dict(os.environ)
    env.update(env_vars)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        proc = bounded.run([py, "-c", check], timeout=CHECK_TIMEOUT_S, env=env, cwd="/")
    except (OSError, subprocess.SubprocessError, bounded.TooMuchOutput) as e:
        return False, f"{type(e).__name__}: {e}"
    if proc.returncode != 0:
        return False, _last_line(proc.stderr or proc.stdout, f"check exited {proc.returncode}")
    return True, _last_line(proc.stdout, "")


@contextlib.contextmanager
def one_creator(path: Path):
    """Hold an exclusive lock next to the environment at `path` while it is made or checked, so two
    processes that need it at once do not build it over each other: the second waits for the first
    and then finds it complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def try_candidate(stack: str, cand: dict, index: int, env_vars: dict[str, str], say=print,
                  use_cache: bool = True) -> dict:
    """One attempt: find the interpreter, make (or reuse) the venv, install, run the check.
    Returns the attempt record; `outcome` is ok, no-interpreter, venv-failed, install-failed or
    check-failed; on ok `venv_python` is the environment's interpreter."""
    att = _attempt(stack, cand, index)
    t0 = time.monotonic()
    py, full, looked = find_interpreter(cand["python"])
    if py is None:
        att.update(outcome="no-interpreter", error=f"no Python {cand['python']} here (looked at: "
                   f"{looked})")
        return att
    att.update(interpreter=py, interpreter_version=full)
    key = json.dumps([full, cand.get("pip"), cand.get("pip_args", [])])
    path = venv_path(f"{stack}-{cand['id']}", cand["requirements"], key)
    vpy = path / "bin" / "python"
    marker = path / ".reprokit-complete"
    failed = path.with_name(path.name + ".failed.json")
    retry = os.environ.get("REPROKIT_RETRY_ENVS") == "1" or not use_cache
    with one_creator(path):  # a second driver (or test worker) waits, then reuses it
        if failed.exists() and not retry:
            try:
                old = json.loads(failed.read_text())
                old.update(cached=True, date=att["date"], seconds=0.0,
                           error=f"{old.get('error')} (remembered from {old.get('date')}; delete "
                                 f"{failed} or set REPROKIT_RETRY_ENVS=1 to try again)")
                return old
            except (OSError, ValueError):
                pass
        if not (marker.exists() and vpy.exists()) or retry:
            say(f"stack {stack}: trying {cand['id']} (Python {full}: {' '.join(cand['requirements'])}; "
                f"one time, cached in {path})")
            # no requirements (tests): no pip either, so nothing is installed or downloaded
            bare = [] if cand["requirements"] or cand.get("pip") else ["--without-pip"]
            err = _step_error([py, "-m", "venv", "--clear", *bare, str(path)], 600, "venv failed")
            if err:
                att.update(outcome="venv-failed", error=err, seconds=round(time.monotonic() - t0, 1))
                return att
            steps = []
            if cand.get("pip"):
                steps.append([str(vpy), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              f"pip=={cand['pip']}"])
            if cand["requirements"]:
                steps.append([str(vpy), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              *cand.get("pip_args", []), *cand["requirements"]])
            for cmd in steps:
                err = _step_error(cmd, INSTALL_TIMEOUT_S, "pip failed")
                if err:
                    att.update(outcome="install-failed", error=err,
                               seconds=round(time.monotonic() - t0, 1))
                    return att
        if cand.get("check"):
            ok, detail = _run_check(str(vpy), cand["check"], candidate_env_vars(cand, env_vars, path))
            if not ok:
                att.update(outcome="check-failed", error=detail, seconds=round(time.monotonic() - t0, 1))
                if use_cache:
                    failed.write_text(json.dumps(att, indent=1) + "\n")
                return att
            att["check_output"] = detail or None
        marker.write_text(json.dumps({k: att[k] for k in ("candidate", "interpreter_version", "pip",
                                                          "requirements")}) + "\n")
        failed.unlink(missing_ok=True)
        att.update(outcome="ok", seconds=round(time.monotonic() - t0, 1), venv_python=str(vpy))
        return att


def _fallback(stack: str, spec: dict, say) -> tuple[str, dict]:
    """The stand-in on the current interpreter: (python, chosen record)."""
    local = spec["local"]
    full = "%d.%d.%d" % sys.version_info[:3]
    has_candidates = bool(local.get("candidates"))
    chosen = {"candidate": "stand-in" if has_candidates else f"kit {local['env']}", "python": full,
              "interpreter": sys.executable, "requirements": list(local["requirements"]),
              "fallback": has_candidates}
    if local["env"] == "host":
        return sys.executable, chosen
    reqs = local["requirements"]
    path = venv_path(stack, reqs)
    py = path / "bin" / "python"
    marker = path / ".reprokit-complete"
    chosen["interpreter"] = str(py)
    with one_creator(path):
        if marker.exists() and py.exists():
            return str(py), chosen
        say(f"creating environment for stack {stack}: {' '.join(reqs)} (one time, cached in {path})")
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(path)
            proc = subprocess.run([str(py), "-m", "pip", "install", "--quiet",
                                   "--disable-pip-version-check", *reqs],
                                  capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as e:
            raise StackUnavailable(f"could not create the {stack} environment at {path}: {e}") from e
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
            raise StackUnavailable(f"pip could not install {' '.join(reqs)} for stack {stack}: {last}")
        marker.write_text("\n".join(reqs) + "\n")
        return str(py), chosen


def _summary(att: dict) -> str:
    detail = att.get("error") if att["outcome"] != "ok" else att.get("check_output")
    return (f"{att['candidate']} (Python {att.get('interpreter_version') or att['python']}): "
            f"{att['outcome']}" + (f": {detail}" if detail else ""))


# The environments of interpreters the user named (--python STACK=PATH): stack -> a function of the
# stack's spec that makes it. reprokit/runners/byo.py registers them (user_environments).
_USER_ENVIRONMENTS: dict[str, Callable[[dict], Environment]] = {}


def user_environments(makers: dict[str, Callable[[dict], Environment]]) -> None:
    """Replace the registry of user-named environments (runners/byo.py `use`)."""
    _USER_ENVIRONMENTS.clear()
    _USER_ENVIRONMENTS.update(makers)


def environment_for(stack: str, spec: dict, say=print, build: bool = True) -> Environment | None:
    """Try the stack's candidates in order; the first that works runs its cells, else the stand-in.
    REPROKIT_STAND_INS=1 skips the candidates (the stand-in of every stack, as before). An
    interpreter the user named for the stack (`--python STACK=PATH`, runners/byo.py) comes first
    and is not tried against anything. With `build=False` nothing is created or installed: a
    candidate not built yet is passed over, and None says the stand-in's venv is not built either
    (preflight asks this way)."""
    user = _USER_ENVIRONMENTS.get(stack)
    if user is not None:
        return user(spec)
    local = spec["local"]
    base_vars = dict(local.get("env_vars", {}))
    attempts: list[dict] = []
    if os.environ.get("REPROKIT_STAND_INS") != "1":
        for i, cand in enumerate(local.get("candidates", [])):
            if not build and not _built(stack, cand):
                continue
            att = try_candidate(stack, cand, i, base_vars, say)
            vpy = att.pop("venv_python", None)
            attempts.append(att)
            if att["outcome"] == "ok" and vpy:
                chosen = {"candidate": cand["id"], "python": att["interpreter_version"],
                          "interpreter": vpy, "requirements": list(cand["requirements"]),
                          "fallback": False}
                return Environment(vpy, candidate_env_vars(cand, base_vars, Path(vpy).parent.parent),
                                   list(cand.get("substitutes", [])), chosen, attempts)
            say(f"stack {stack}: candidate {_summary(att)}")
    if not build and local["env"] == "venv" and not _stand_in_built(stack, spec):
        return None
    py, chosen = _fallback(stack, spec, say)
    if attempts:
        chosen["why"] = "no candidate worked: " + "; ".join(_summary(a) for a in attempts)
        say(f"stack {stack}: falls back to its stand-in on Python {chosen['python']} "
            f"({len(attempts)} candidate(s) failed)")
    elif local.get("candidates"):
        chosen["why"] = "REPROKIT_STAND_INS=1: candidates not tried"
    return Environment(py, base_vars, list(local["substitutes"]), chosen, attempts)


def _built(stack: str, cand: dict) -> bool:
    """Whether the candidate's venv exists, complete (its interpreter looked up, nothing made)."""
    py, full, _ = find_interpreter(cand["python"])
    if py is None:
        return False
    key = json.dumps([full, cand.get("pip"), cand.get("pip_args", [])])
    path = venv_path(f"{stack}-{cand['id']}", cand["requirements"], key)
    return (path / ".reprokit-complete").exists() and (path / "bin" / "python").exists()


def _stand_in_built(stack: str, spec: dict) -> bool:
    path = venv_path(stack, spec["local"]["requirements"])
    return (path / ".reprokit-complete").exists() and (path / "bin" / "python").exists()


def python_for(stack: str, spec: dict, say=print) -> str:
    """The interpreter that runs this stack's cells, creating its venv on first use."""
    return environment_for(stack, spec, say).python


# ---- recording attempts as data (reprokit/data/stack_attempts.yaml) -------------------------------

ATTEMPTS_FILE = kitdata.PACKAGED / "stack_attempts.yaml"


def try_all(stacks: dict[str, dict], only: list[str] | None = None, say=print) -> list[dict]:
    """Every candidate of every stack (not only up to the first that works), afresh."""
    out = []
    for name, spec in stacks.items():
        if only and name not in only:
            continue
        base_vars = dict(spec["local"].get("env_vars", {}))
        for i, cand in enumerate(spec["local"].get("candidates", [])):
            att = try_candidate(name, cand, i, base_vars, say, use_cache=False)
            att.pop("venv_python", None)
            att.pop("cached", None)
            say(f"{name}: {_summary(att)}")
            out.append(att)
    return out


def write_attempts(attempts: list[dict], machine: str, path: Path = ATTEMPTS_FILE) -> None:
    """Replace the recorded attempts of the stacks tried; keep the others and the manual ones."""
    import yaml

    doc = files.load_yaml(path.read_text()) if path.exists() else None
    doc = doc or {"schema_version": 1, "attempts": []}
    tried = {a["stack"] for a in attempts}
    kept = [a for a in doc["attempts"] if a.get("how") != "envs" or a["stack"] not in tried]
    for a in attempts:
        a = {k: v for k, v in a.items() if k not in ("interpreter",)}
        a.update(how="envs", machine=machine)
        kept.append(a)
    kept.sort(key=lambda a: (a["stack"], a.get("how") != "envs", a.get("index", 99), a["date"]))
    doc["attempts"] = kept
    header = ("# Every attempt to install a stack's candidate environments (reprokit/data/stacks.yaml\n"
              "# local.candidates), successful or not, with the last line of its error: `how: envs`\n"
              "# entries are written by `python -m reprokit.runners.venvs --try-all --write` from real\n"
              "# attempts; `how: manual` entries were made by hand (the command is given). Schema:\n"
              "# reprokit/schemas/stack_attempts.schema.json.\n")
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True))


def main(argv: list[str] | None = None) -> int:
    from reprokit.catalog import suites

    p = argparse.ArgumentParser(prog="python -m reprokit.runners.venvs",
                                description="try the stacks' candidate environments")
    p.add_argument("--try-all", action="store_true", help="try every candidate of every stack")
    p.add_argument("--stack", action="append", help="only this stack (repeatable)")
    p.add_argument("--write", action="store_true", help=f"record the attempts in {ATTEMPTS_FILE.name}")
    p.add_argument("--machine", default="project machine (Debian 12, 2 cores, pyenv interpreters)")
    args = p.parse_args(argv)
    stacks = suites.load_stacks()
    unknown = [s for s in args.stack or [] if s not in stacks]
    if unknown:
        print(f"error: unknown stack {', '.join(unknown)}; known: {', '.join(stacks)}", file=sys.stderr)
        return 2
    if not args.try_all:
        for name, spec in stacks.items():
            if args.stack and name not in args.stack:
                continue
            env = environment_for(name, spec, say=lambda *_: None)
            print(json.dumps({"stack": name, **env.record()}))
        return 0
    attempts = try_all(stacks, args.stack)
    if args.write:
        write_attempts(attempts, args.machine)
    return 0 if attempts else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
