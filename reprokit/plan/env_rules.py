"""The preflight rules for a local environment (the interpreter that would run a stack's GPU cells,
as reprokit/runners/env_probe.py describes it): its framework build as a compat.yaml-style binary, the
stack description preflight works on, and the `environment` check of a GPU cell. Pure functions over
the probe's record; reprokit/runners/env_preflight.py gets the records (`environments_for`) and says
where they were probed. Where the environment was probed (`where`) is explained there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reprokit.plan.compat import version_tuple

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
    built = version_tuple(cuda) if str(cuda or "")[:1].isdigit() else None
    for b in compat.get("blockers", []):  # a CUDA rule (MIG) is the CUDA version's, whoever built it
        if b.get("cuda_below") and built and built < version_tuple(b["cuda_below"]):
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
