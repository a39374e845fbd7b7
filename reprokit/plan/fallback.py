"""Fallback chains: which stack runs a GPU cell whose original image preflight does not accept here.

On a GPU the 2017-2019 images cannot reach (or have not been probed on), a published number would
otherwise get no measurement at all. Each stack has an ordered chain in compat.yaml (`fallbacks`):
the original stack, then the nearest image of the same framework whose binaries may reach newer
GPUs, then today's stack. `resolve` walks it with preflight's own verdicts and returns the verdict
of the first link preflight accepts, with the chain and the substitution it made; the cell then
runs in that link's image and its result names the substitution (a `version` stand-in,
data/standins.yaml), so its verdicts say "other stack".

Rules: chains apply to cells that need a GPU, under every runner: for docker and slurm a link is
the link stack's image; for the local runner it is the link stack's local environment (judged on
its probe: reprokit/runners/env_preflight.py), so on a host whose torch-0.1 environment cannot reach the
GPU, torch-modern's (the installed torch) runs the cell, labelled. Probe cells (suite gpu-smoke) are never
substituted: they test one image. A link with no image in the kit (`stack: null`) is shown with
why, never accepted. A link that needs a probe is not accepted either (the chain moves on, and
says that probing the original with gpu-smoke may let it run). Pure functions over data; tested
with stored host fingerprints of Ampere, Hopper and Blackwell GPUs. On a GPU host, chains have been
evaluated only for the local runner, on one NVIDIA H100 (2026-11-26, docs/gpu-run/session.log,
`preflight --runner local --device gpu`): none offered a link that runs there. Chains over images
(docker, slurm), and a cell run on a fallback link, have never run on a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CHAIN_RUNNERS = ("docker", "slurm", "local")


def chain_of(stack: str, compat: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stack's links after its original (compat.yaml `fallbacks`), [] when it has none."""
    return [dict(link) for link in (compat.get("fallbacks") or {}).get(stack, [])]


def _describe(stack: str, compat: Mapping[str, Any], stacks: Mapping[str, Any],
              environments=None) -> str:
    if environments is not None:  # the local runner: the environment, as probed
        env = environments(stack) or {}
        cuda = f", CUDA {env['cuda']}" if env.get("cuda") else ""
        return (f"{stack} (local environment {env.get('python') or 'not built'}: "
                f"{env.get('framework') or 'framework unknown'} {env.get('version') or '?'}{cuda})")
    spec = stacks[stack]
    original = spec.get("original") or {}
    entry = compat["stacks"][stack]
    framework = " ".join(x for x in (spec.get("framework"), original.get("framework_version")) if x)
    cuda = f", CUDA {entry['cuda']}" if entry.get("cuda") else ""
    return f"{stack} (image {spec['image']}: {framework or 'framework unknown'}{cuda})"


def _gpu_names(host: Mapping[str, Any]) -> str:
    names = sorted({f"{g.get('name')} (CC {g.get('compute_capability')})" for g in host.get("gpus") or []})
    return ", ".join(names) or "no GPU"


def _link_summary(link: Mapping[str, Any], describe) -> str:
    name = link["stack"] or link["candidate"]
    if link["status"] == "unavailable":
        return f"{link['kind']} {name}: {link['reasons'][0]}"
    why = "; ".join(link["reasons"][:2])
    return f"{link['kind']} {name}: {describe(link)}" + (f" ({why})" if why and not link["runnable"] else "")


def resolve(
    stack: str,
    original: dict[str, Any],
    check,
    *,
    host: Mapping[str, Any],
    needs_gpu: bool,
    runner: str,
    compat: Mapping[str, Any],
    stacks: Mapping[str, Any],
    probe_cell: bool = False,
    describe,
    environments=None,
) -> dict[str, Any]:
    """The verdict a cell of `stack` runs under: `original` (preflight's verdict for its own stack)
    when it is runnable or no chain applies; else the first accepted link's verdict, or `original`
    again when no link is accepted. `check(link_stack)` gives preflight's verdict for a link and
    `describe(verdict)` its phrase (preflight.summary: passed in, so this module imports no preflight).

    A walked chain is recorded as verdict["chain"] = {"original", "stack" (the stack that runs;
    None when none does), "links": [{"stack", "kind", "status", "runnable", "reasons", ...}],
    "substitution": {"original", "used", "why"} or None}."""
    links = chain_of(stack, compat)
    if original.get("runnable") or not links or not needs_gpu or probe_cell or runner not in CHAIN_RUNNERS:
        return original
    if runner == "local" and environments is None:  # the local runner's links are environments
        return original
    walked: list[dict[str, Any]] = [{"stack": stack, "kind": "original", **_brief(original)}]
    chosen: dict[str, Any] | None = None
    for link in links:
        if link["stack"] is None:
            walked.append({"stack": None, "kind": link["kind"], "candidate": link["candidate"],
                           "status": "unavailable", "runnable": False, "reasons": [link["why_not"]]})
            continue
        verdict = check(link["stack"])
        walked.append({"stack": link["stack"], "kind": link["kind"], **_brief(verdict)})
        if verdict.get("runnable"):
            chosen = verdict
            break
    lines = [_link_summary(w, describe) for w in walked]
    if chosen is None:
        out = dict(original)
        out["reasons"] = list(original.get("reasons", [])) + [
            "fallback chain: no link runs here: " + "; ".join(lines[1:])]
        out["chain"] = {"original": stack, "stack": None, "links": walked, "substitution": None}
        return out
    used = walked[-1]["stack"]
    probe_hint = " (probe the original with `reproduce.py run --suite gpu-smoke --runner docker` " \
                 "to try it first)" if original.get("status") == "probe" and environments is None else ""
    why = (f"fallback chain on {_gpu_names(host)}: " + "; ".join(lines[:-1])
           + f"; the first link preflight accepts is {used}{probe_hint}")
    substitution = {"original": f"GPU stack {_describe(stack, compat, stacks, environments)}",
                    "used": f"fallback link {_describe(used, compat, stacks, environments)}",
                    "why": why}
    out = dict(chosen)
    out["reasons"] = [f"fallback: runs on {used} instead of {stack}: {why}"] + list(chosen.get("reasons", []))
    out["chain"] = {"original": stack, "stack": used, "links": walked, "substitution": substitution}
    return out


def _brief(verdict: Mapping[str, Any]) -> dict[str, Any]:
    return {"status": verdict.get("status"), "runnable": bool(verdict.get("runnable")),
            "reasons": list(verdict.get("reasons", [])), "checks": list(verdict.get("checks", []))}


def stack_to_run(cell_stack: str, verdict: Mapping[str, Any] | None) -> str:
    """The stack whose image runs a cell: the accepted fallback link, else the cell's own."""
    chain = (verdict or {}).get("chain") or {}
    return chain.get("stack") or cell_stack


def substitution(verdict: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The substitution a fallback made for a cell ({original, used, why}), or None."""
    return ((verdict or {}).get("chain") or {}).get("substitution")
