"""Preflight of a local environment: whether the interpreter that would run a stack's GPU cells can.

The local runner (and the Slurm local launcher) runs no image: a cell runs in the stack's local
environment (reprokit/runners/venvs.py, or the user's interpreter: runners/byo.py). Its GPU cells
are judged on what that environment's probe (runners/env_probe.py) says, not on the image's CUDA
binaries: whether it can use a GPU at all, then the driver against the CUDA version it was built
with and the compute capability against its compiled architecture list (torch.cuda.get_arch_list(),
tf.sysconfig.get_build_info()), through the same rules as an image (preflight.py).

Where the environment was probed matters (`where` in its record, set by `environments_for`):

* "here": the host that runs it; `devices` (what the framework sees) decides.
* "fingerprint": a stored host fingerprint carried an `environments` section (the output of
  `python -m reprokit.runners.env_probe` on that host): as "here", for that host.
* "assumed": `preflight --fingerprint FILE` for another host, environment probed on THIS host and
  assumed to be the one that runs there (e.g. a --python interpreter on a shared file system): its
  build decides (a CUDA build is assumed to see the GPU there, which is not checked; a CPU-only
  build cannot), and the verdict says so.

Pure functions over data, except `environments_for`, which probes. Where "here", with the local runner
and --device gpu, this ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run: every
run.json's `preflight` and `environments`: the torch and JAX environments seeing the GPU, the driver
and torch's sm_90 SASS checked, JAX's coverage unknown). No run there used the "fingerprint" or
"assumed" case, and no TensorFlow, Theano or MXNet environment was installed there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

FIX = ("pass --python {stack}=PATH (an interpreter with a GPU build of {fw}), --runner docker or "
       "--device cpu")


def _arch_to_cc(arch: str) -> str | None:
    m = re.fullmatch(r"(?:sm|compute)_(\d+)(\d)[a-z]?", str(arch).strip())
    return f"{m.group(1)}.{m.group(2)}" if m else None


def binary_of(env: Mapping[str, Any]) -> dict[str, Any]:
    """The environment's framework build as a compat.yaml-style binary: SASS and PTX from its
    compiled architecture list; both unknown when the framework does not tell."""
    arch = env.get("arch_list")
    what = f"{env.get('framework')} {env.get('version')}"
    if not arch:
        return {"id": what, "sass": None, "ptx": None, "critical": True,
                "evidence": "U: the framework does not list its compiled architectures",
                "description": f"{what}'s kernels"}
    sass = sorted({cc for a in arch if str(a).startswith("sm_") and (cc := _arch_to_cc(a))})
    ptx = sorted({cc for a in arch if str(a).startswith("compute_") and (cc := _arch_to_cc(a))})
    return {"id": what, "sass": sass, "ptx": ptx, "critical": True,
            "evidence": "probed: " + ", ".join(map(str, arch)), "description": f"{what}'s kernels"}


def stack_from_environment(name: str, env: Mapping[str, Any] | None, compat: Mapping[str, Any],
                           *, needs_gpu: bool = False) -> dict[str, Any]:
    """The stack description preflight works on, for a stack run by its local environment."""
    env = env or {}
    cuda = env.get("cuda")
    blockers = []
    major = re.match(r"(\d+)", str(cuda or ""))
    for b in compat.get("blockers", []):  # the MIG rule is the CUDA version's, whoever built it
        if "mig_enabled" in b.get("when", {}) and major and int(major.group(1)) < 11:
            blockers.append(dict(b))
    return {"name": name, "image": None, "needs_gpu": needs_gpu, "gpu": True, "cuda": cuda,
            "binaries": [binary_of(env)] if env.get("devices") is not None else [],
            "blockers": blockers, "environment": dict(env)}


def check_environment(v, name: str, env: Mapping[str, Any] | None) -> bool:
    """The `environment` check of a GPU cell; True when the GPU checks should follow."""
    if env is None or env.get("not_built"):
        why = (env or {}).get("not_built") or "not probed"
        v.check("environment", True, f"environment of {name}: {why}", status="probe",
                reason=f"needs a probe: the local environment of {name} is not built yet, so what it "
                f"can use is not known ({why}); build it with `python -m reprokit.runners.venvs "
                f"--stack {name}` (or a CPU run of the stack), then run preflight again")
        return False
    fw = env.get("framework") or "its framework"
    label = f"environment of {name} ({env.get('python')}: {fw} {env.get('version') or '?'})"
    fix = FIX.format(stack=name, fw=fw)
    if env.get("error"):
        v.check("environment", False, f"{label}: {env.get('why') or env['error']}; {fix}")
        return False
    where = env.get("where", "here")
    if where == "assumed":
        if env.get("gpu_build") is False:
            v.check("environment", False, f"{label} cannot use a GPU: {env.get('why')} (probed on "
                    f"this host); {fix}")
            return False
        if env.get("gpu_build") is None:
            v.check("environment", True, f"{label}: {env.get('why')}", status="probe",
                    reason=f"needs a probe: whether the {label} can use a GPU is not known from its "
                    "probe on this host; run preflight on the host itself")
            return False
        v.check("environment", True, f"{label}: {env.get('why')}",
                reason=f"assumed: {label} was probed on this host, not on the fingerprint's: a "
                "GPU build is taken to see the GPU there (not checked)")
        return True
    if "gpu" not in (env.get("devices") or []):
        there = " (probed there: the fingerprint's environments)" if where == "fingerprint" else ""
        v.check("environment", False, f"{label} cannot use a GPU: {env.get('why')}{there}; {fix}")
        return False
    v.check("environment", True, f"{label}: {env.get('why')}")
    return True


def environments_for(fingerprint: Mapping[str, Any], stacks: Mapping[str, Any], *,
                     other_host: bool, build: bool, say=None) -> Callable[[str], dict | None]:
    """stack -> its environment's record for preflight (None: not built, with build False).
    A fingerprint's own `environments` come first (probed on its host); the others are probed
    here, and with `other_host` marked "assumed"."""
    from reprokit.runners import env_probe, venvs

    carried = fingerprint.get("environments") if isinstance(fingerprint.get("environments"), dict) else {}
    seen: dict[str, dict | None] = {}

    def env_of(stack: str) -> dict | None:
        if stack in seen:
            return seen[stack]
        if stack in carried and isinstance(carried[stack], dict):
            rec: dict | None = dict(carried[stack], where="fingerprint")
        else:
            spec = stacks[stack]
            chosen = venvs.environment_for(stack, spec, say=say or (lambda *_: None), build=build)
            if chosen is None:
                rec = {"not_built": f"its venv ({' '.join(spec['local']['requirements'])}) is not "
                       "made yet"}
            else:
                rec = dict(env_probe.for_environment(stack, spec, chosen),
                           where="assumed" if other_host else "here")
        seen[stack] = rec
        return rec

    env_of.seen = seen  # type: ignore[attr-defined]  # what was judged, for `where_line`
    return env_of


def where_line(env_of: Callable[[str], dict | None], source: str) -> str:
    """One line for the preflight table: where the environments it judged were probed."""
    seen = getattr(env_of, "seen", {})
    wheres = {(rec or {}).get("where") for rec in seen.values()} - {None}
    parts = []
    if "fingerprint" in wheres:
        parts.append(f"some as {source} states them (each record's `probe` says how it was "
                     "obtained: a probe on that host, or by hand)")
    if "assumed" in wheres:
        parts.append("probed on THIS host and assumed to be what runs on the host of "
                     f"{source}: a GPU build is taken to see its GPU there (not checked); a "
                     "CPU-only build cannot")
    if "here" in wheres:
        parts.append("probed on this host")
    unbuilt = sorted(s for s, rec in seen.items() if rec is None or rec.get("not_built"))
    if unbuilt:
        parts.append(f"not built yet, so not probed: {', '.join(unbuilt)}")
    return "environments: " + ("; ".join(parts) or "none judged (no cell needs a GPU)")
