"""What a stack's local environment can use, probed once by running its own interpreter.

The host never imports a framework for a venv or a user's interpreter: it runs the environment's
interpreter on bench/env_probe.py (stack_fingerprint.collect of the stack's framework) with the
stack's environment variables, and reads what the framework says: version, CUDA build, cuDNN
version, compiled architecture list (torch.cuda.get_arch_list(), tf.sysconfig.get_build_info()),
the devices it sees (torch.cuda.is_available(), tf.config.list_physical_devices(), jax.devices(),
theano.config.device, mxnet.context.num_gpus()). `interpret` turns that into the run record's
`environments` entry (docs/FORMATS.md)::

    {"python": path, "python_version": "3.11.7", "devices": ["cpu"] | ["cpu", "gpu"],
     "framework": name, "version": str, "cuda": str | None, "cudnn": str | None,
     "arch_list": [..] | None, "gpu_build": bool | None, "why": "<one line>",
     "probe": "<how it was probed>", "byo": bool, "error": str | None}

`devices` is what the environment can use HERE (a GPU build on a host whose GPU it sees);
`gpu_build` whether it was built to use one at all (what preflight --fingerprint judges for another
host: see preflight.environment_check). Probes are cached per interpreter and installed packages
(bench/env_probe.py --key: the interpreter, its prefix and every dist-info name on its sys.path),
the stack's environment variables and this probe's own code, under $REPROKIT_ENV_PROBE_DIR (default
~/.cache/reprokit/env-probes), and in the process: a run probes each environment once.

THE GPU ANSWERS HAVE NEVER BEEN SEEN: no machine of this project has a GPU; every probe that ran
here reported a CPU-only build or a GPU build that sees no GPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
from pathlib import Path

from reprokit import files
from reprokit.files import BENCH
from reprokit.runners import bounded

PROBE_SCRIPT = BENCH / "env_probe.py"
PREFIX = "REPROKIT_ENV_PROBE "
TIMEOUT_S = 600
GPU_PLATFORMS = ("gpu", "cuda", "rocm")

# stacks.yaml `framework` -> the module the probe imports
MODULE_OF = {"torch": "torch", "tensorflow": "tensorflow", "theano": "theano", "keras-tf": "tensorflow",
             "keras-mxnet": "mxnet", "mxnet": "mxnet", "jax": "jax", "python": "python"}

_MEMO: dict[str, dict] = {}


class ProbeError(RuntimeError):
    """The interpreter could not be run, or printed no probe line: the one-line reason."""


def cache_dir() -> Path:
    return Path(os.environ.get("REPROKIT_ENV_PROBE_DIR")
                or Path.home() / ".cache" / "reprokit" / "env-probes")


def module_for(framework: str) -> str:
    return MODULE_OF.get(framework, framework)


def _env(env_vars: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(env_vars or {})
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _last_error_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _run(python: str, arg: str, env_vars: dict[str, str] | None, timeout: float) -> dict:
    """The probe's answer from `python` (a user's interpreter, possibly): its output bounded and its
    whole process group ended whatever happens (reprokit/runners/bounded.py)."""
    try:
        proc = bounded.run([python, str(PROBE_SCRIPT), arg], timeout=timeout, env=_env(env_vars), cwd="/")
    except subprocess.TimeoutExpired:
        raise ProbeError(f"{python} did not answer the environment probe within {timeout:.0f} s "
                         "(it and everything it started were stopped)") from None
    except bounded.TooMuchOutput:
        raise ProbeError(f"{python} printed more than {bounded.LIMIT:,} bytes to the environment probe "
                         "(it was stopped): is it a Python interpreter?") from None
    except OSError as e:
        raise ProbeError(f"{python} cannot be run ({e.strerror or e})") from None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(PREFIX):
            try:
                return json.loads(line[len(PREFIX):])
            except ValueError:
                break
    raise ProbeError(f"{python} printed no probe result (exit {proc.returncode}: "
                     f"{_last_error_line(proc.stderr or proc.stdout)})")


# variables that change what a framework sees or loads, as the probe's process has them
KEY_VARS = ("THEANO_FLAGS", "THEANORC", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
            "JAX_PLATFORMS", "KERAS_BACKEND", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_HOME")


def _key_vars(env_vars: dict[str, str] | None) -> list:
    env = _env(env_vars)
    return sorted((k, env[k]) for k in KEY_VARS if k in env) + sorted((env_vars or {}).items())


def cache_key(python: str, framework: str, env_vars: dict[str, str] | None) -> str:
    """What a probe is valid for: the host (what it sees depends on its GPUs; a home directory may
    be shared by several), the interpreter and its installed packages (asked of it, without
    importing any framework), the variables that change what a framework sees, and this probe's
    code."""
    key = _run(python, "--key", env_vars, 120)
    code = hashlib.sha256(PROBE_SCRIPT.read_bytes()
                          + (BENCH / "stack_fingerprint.py").read_bytes()).hexdigest()
    text = json.dumps([socket.gethostname(), key, module_for(framework), _key_vars(env_vars), code],
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _cudnn_text(value) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):  # cuDNN's integer: major*1000+minor*100+patch, major*10000+... from 9
        if value >= 10000:
            return "%d.%d.%d" % (value // 10000, (value % 10000) // 100, value % 100)
        return "%d.%d.%d" % (value // 1000, (value % 1000) // 100, value % 100)
    return str(value)


def _python(fw: dict, raw: dict, out: dict) -> bool:
    out.update(gpu_build=False, why="no framework: the stack runs plain Python on the CPU")
    return False


def _torch(fw: dict, raw: dict, out: dict) -> bool:
    cuda = fw.get("cuda")
    arch = fw.get("cuda_arch_list")
    out.update(cuda=cuda, cudnn=_cudnn_text(fw.get("cudnn_version")), gpu_build=cuda is not None,
               arch_list=list(arch) if isinstance(arch, list) else None)
    devices = [d for d in fw.get("devices") or [] if isinstance(d, dict)]
    sees = bool(fw.get("cuda_available")) and bool(devices)
    if cuda is None:
        out["why"] = f"CPU-only build of torch {out['version']} (torch.version.cuda is None)"
    elif sees:
        names = ", ".join(sorted({str(d.get("name")) for d in devices}))
        out["why"] = (f"torch {out['version']} (CUDA {cuda}) sees {len(devices)} GPU(s): {names} "
                      "(torch.cuda.is_available())")
    else:
        out["why"] = (f"CUDA {cuda} build of torch {out['version']}, but torch.cuda.is_available() "
                      "is False here")
    return sees


def _tensorflow(fw: dict, raw: dict, out: dict) -> bool:
    info = fw.get("build_info") if isinstance(fw.get("build_info"), dict) else {}
    built = fw.get("built_with_cuda")
    if built is None:
        built = info.get("is_cuda_build")
    arch = info.get("cuda_compute_capabilities")
    phys = fw.get("physical_devices") if isinstance(fw.get("physical_devices"), list) else []
    gpus = [d for d in phys if isinstance(d, dict) and d.get("device_type") == "GPU"]
    out.update(cuda=info.get("cuda_version"), cudnn=_cudnn_text(info.get("cudnn_version")),
               gpu_build=None if built is None else bool(built),
               arch_list=list(arch) if isinstance(arch, list) else None)
    if built is False:
        out["why"] = (f"CPU-only build of tensorflow {out['version']} "
                      "(tf.test.is_built_with_cuda() is False)")
    elif gpus:
        out["why"] = (f"tensorflow {out['version']} lists {len(gpus)} GPU(s) "
                      "(tf.config.list_physical_devices)")
    else:
        out["why"] = (f"tensorflow {out['version']} lists no GPU here "
                      f"(built with CUDA: {'unknown' if built is None else 'yes'})")
    return bool(gpus)


def _jax(fw: dict, raw: dict, out: dict) -> bool:
    devs = fw.get("devices") if isinstance(fw.get("devices"), list) else []
    gpus = [d for d in devs if isinstance(d, dict) and str(d.get("platform")).lower() in GPU_PLATFORMS]
    plugins = [d for d in raw.get("dists") or [] if d.lower().replace("-", "_").startswith(
        ("jax_cuda", "jax_rocm", "jaxlib_cuda"))]
    out.update(gpu_build=bool(gpus or plugins))
    if gpus:
        out["why"] = f"jax {out['version']} sees {len(gpus)} GPU(s) (jax.devices())"
    elif plugins:
        out["why"] = (f"jax {out['version']} has a GPU plugin ({plugins[0]}) but jax.devices() "
                      f"lists no GPU here (default backend {fw.get('default_backend')})")
    else:
        out["why"] = (f"CPU-only jax {out['version']}: no CUDA or ROCm plugin installed and "
                      f"jax.devices() lists {fw.get('default_backend') or 'cpu'} only")
    return bool(gpus)


def _theano(fw: dict, raw: dict, out: dict) -> bool:
    device = str(fw.get("device") or "")
    gpu_flag = device.startswith(("cuda", "gpu"))
    out.update(gpu_build=gpu_flag, cudnn=_cudnn_text(fw.get("cudnn_version")))
    out["why"] = (f"theano {out['version']} with device={device or '?'} (theano.config.device"
                  + (", from the environment's THEANO_FLAGS)" if gpu_flag else
                     "): the environment runs Theano on the CPU"))
    return bool(gpu_flag and not fw.get("errors", {}).get("device"))


def _mxnet(fw: dict, raw: dict, out: dict) -> bool:
    feats = fw.get("features") if isinstance(fw.get("features"), dict) else {}
    enabled = feats.get("enabled") or []
    n = fw.get("num_gpus")
    out.update(gpu_build=("CUDA" in enabled) if feats else None,
               cudnn="built in" if "CUDNN" in enabled else None)
    if out["gpu_build"] is False:
        out["why"] = f"CPU-only build of mxnet {out['version']} (mxnet.runtime.Features: no CUDA)"
    else:
        out["why"] = f"mxnet {out['version']}: mxnet.context.num_gpus() is {n}"
    return isinstance(n, int) and n > 0


# framework module -> (its raw probe, the raw record, the entry to fill) -> whether it sees a GPU
_BY_MODULE = {"python": _python, "torch": _torch, "tensorflow": _tensorflow, "jax": _jax,
              "theano": _theano, "mxnet": _mxnet}


def interpret(raw: dict, framework: str) -> dict:
    """The `environments` entry fields a raw probe (bench/env_probe.py) supports. Pure."""
    fw = raw.get("framework") or {}
    py = raw.get("python") or {}
    module = module_for(framework)
    out = {"python": py.get("executable"), "python_version": py.get("version"),
           "framework": module, "version": fw.get("version"), "cuda": None, "cudnn": None,
           "arch_list": None, "gpu_build": None, "devices": ["cpu"], "why": "", "error": None}
    if fw.get("error"):
        out.update(devices=[], error=str(fw["error"])[:300],
                   why=f"the interpreter cannot import {module}: {str(fw['error'])[:200]}")
        return out
    if module in _BY_MODULE:
        if _BY_MODULE[module](fw, raw, out):
            out["devices"] = ["cpu", "gpu"]
    else:
        out["why"] = f"framework {module}: what it can use is not probed by this kit"
    return out


def probe(python: str, framework: str, env_vars: dict[str, str] | None = None, *,
          byo: bool = False, use_cache: bool = True) -> dict:
    """The `environments` entry of the environment whose interpreter is `python`; ProbeError when
    the interpreter cannot be run or answers nothing."""
    module = module_for(framework)
    memo = json.dumps([python, module, _key_vars(env_vars)])
    if memo in _MEMO and use_cache:  # once per run
        return dict(_MEMO[memo], byo=byo)
    key = cache_key(python, framework, env_vars)
    path = cache_dir() / f"{key}.json"
    rec = None
    if use_cache and path.exists():
        try:
            rec = json.loads(path.read_text())
            rec["probe"] = rec["probe"] + f" (cached in {path})"
        except (OSError, ValueError, KeyError):
            rec = None
    if rec is None:
        raw = _run(python, module, env_vars, TIMEOUT_S)
        rec = interpret(raw, framework)
        rec["python"] = python  # the path the kit runs, not the interpreter's resolved one
        rec["probe"] = (f"{python} bench/env_probe.py {module} (the framework asked in its own "
                        f"process) on {files.utcnow()[:10]}")
        try:  # a temp file beside it, removed if the write fails (a full disk left 0-byte .tmp files)
            files.write_text_atomic(path, json.dumps(rec, indent=1) + "\n")
        except OSError:
            pass  # an unwritable cache costs a probe next time, nothing else
    _MEMO[memo] = rec
    return dict(rec, byo=byo)


def for_environment(stack: str, spec: dict, chosen) -> dict:
    """The `environments` entry of a stack's chosen environment (a venvs.Environment); a probe that
    fails is recorded with its reason, never fatal (the cells then show what is wrong)."""
    if chosen.probe is not None:
        return chosen.probe
    byo = bool(chosen.chosen.get("byo"))
    framework = spec.get("framework") or "python"
    try:
        return probe(chosen.python, framework, chosen.env_vars, byo=byo)
    except (ProbeError, OSError, ValueError) as e:  # the probe never costs the run
        return {"python": chosen.python, "devices": [], "framework": module_for(framework),
                "version": None, "cuda": None, "cudnn": None, "arch_list": None, "gpu_build": None,
                "why": f"not probed: {e}", "probe": "failed", "byo": byo, "error": str(e)}


def can_use_gpu(rec: dict | None) -> bool:
    return bool(rec) and "gpu" in (rec.get("devices") or [])


def describe(stack: str, rec: dict) -> str:
    """`stack`'s environment in a phrase: stack (python: framework version): why."""
    what = f"{rec.get('framework')} {rec.get('version') or '?'}"
    return f"{stack} ({rec.get('python')}: {what}): {rec.get('why')}"


def main(argv: list[str] | None = None) -> int:
    """`python -m reprokit.runners.env_probe [--stack S ...]`: the `environments` of this host's
    local stacks as JSON, the form a host fingerprint file may carry (preflight --fingerprint)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m reprokit.runners.env_probe")
    p.add_argument("--stack", action="append", help="only this stack (repeatable)")
    p.add_argument("--no-build", action="store_true",
                   help="probe only the environments already made (a venv not made yet is left out)")
    args = p.parse_args(argv)
    print(json.dumps({"environments": host_environments(args.stack, build=not args.no_build,
                                                        say=lambda m: print(m, file=sys.stderr))},
                     indent=1))
    return 0


def host_environments(only: list[str] | None = None, build: bool = True, say=print) -> dict:
    """{stack: environment record} of this host's local stacks (`only` these), probed here: the
    `environments` section a host fingerprint file may carry (preflight --fingerprint)."""
    from reprokit.catalog import suites
    from reprokit.runners import venvs

    out = {}
    for name, spec in suites.load_stacks().items():
        if only and name not in only:
            continue
        env = venvs.environment_for(name, spec, say=say, build=build)
        if env is not None:
            out[name] = for_environment(name, spec, env)
    return out


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
