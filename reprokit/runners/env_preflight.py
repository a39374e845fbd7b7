"""Probe the local environments that would run a stack's GPU cells (plan/env_rules.py judges them).

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

The rules are pure and live in the plan stage (reprokit/plan/env_rules.py: an environment as a stack
preflight judges, and its `environment` check); here `environments_for` probes the environments and
`where_line` says where they were probed. Where "here", with the local runner
and --device gpu, this ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run: every
run.json's `preflight` and `environments`: the torch and JAX environments seeing the GPU, the driver
and torch's sm_90 SASS checked, JAX's coverage unknown). No run there used the "fingerprint" or
"assumed" case, and no TensorFlow, Theano or MXNet environment was installed there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


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
