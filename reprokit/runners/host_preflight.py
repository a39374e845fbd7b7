"""Preflight of a suite's cells on a host: probe what a fingerprint cannot say, then judge.

In the runner stage, since it probes what the runners would use; `decide` completes a plan
(reprokit/plan/plan.py) with these verdicts before anything runs.

A Docker engine and the built images (docker runner), the GPU probe cache (a GPU host, image
runners), the environments that would run the local runner's GPU cells (runners/env_preflight.py):
probed here, then every cell judged by the pure rules of reprokit/plan/preflight.py (`cell_verdicts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from reprokit.containers import engine as docker_engine
from reprokit.containers import images as image_store
from reprokit.plan.compat import load_compat
from reprokit.plan.plan import Plan
from reprokit.plan.preflight import cell_verdicts, host_from_fingerprint, runs_images
from reprokit.runners import env_preflight


def decide(plan: Plan, runner: str, host: dict, launcher: str | None = None,
           images: Mapping[str, Any] | None = None) -> Plan:
    """The plan completed for `runner` on the host `host` (a host fingerprint): every runnable
    cell's preflight verdict, probing what the fingerprint cannot say (engine, images). A Slurm
    container launcher's `images` (reprokit/runners/slurm_setup.py launcher_images) are given."""
    verdicts = suite_verdicts(plan.runnable, host, runner, plan.options.device, launcher=launcher,
                              images=images)
    return replace(plan, runner=runner, host=host, verdicts=verdicts)


def suite_verdicts(cells: Iterable[Any], fingerprint: Mapping[str, Any], runner: str,
                   device: str = "cpu", *, other_host: bool = False,
                   environments: Callable[[str], Mapping[str, Any] | None] | None = None,
                   build_envs: bool = False, launcher: str | None = None,
                   images: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Preflight verdict per cell id of a suite on this host, for `runner` ("local" or "docker").

    Probes what a fingerprint cannot tell: whether a Docker engine answers and which stack images
    are built (docker runner only). With `other_host` (a stored fingerprint of another machine,
    `preflight --fingerprint FILE`) nothing is probed here: the engine is assumed to answer there
    and every image to be buildable from images/. Cells not implemented get a verdict saying so.

    The local runner's GPU cells are judged on the environments that would run them (`environments`:
    stack -> probe record; by default env_preflight.environments_for, which probes them here, builds
    nothing unless `build_envs`, and takes a fingerprint's own `environments` first).
    """
    from reprokit.catalog.suites import load_stacks

    compat = load_compat()
    stacks = load_stacks()
    engine = None
    if images is not None:  # a Slurm container launcher's images, as its nodes will run them
        images = dict(images)
    elif other_host:
        engine = True
        images = {spec["image"]: "buildable" for spec in stacks.values()}
    else:
        images = {}
        if runner == "docker":
            engine, _ = docker_engine.answers()
            if engine:
                images = image_store.image_states(sorted({spec["image"] for spec in stacks.values()}),
                                                  "gpu" if device == "gpu" else "cpu")
    host = host_from_fingerprint(fingerprint, engine_present=engine, images=images, launcher=launcher)
    probes, cache_warning = host_probes(host, runner)
    if environments is None and runner == "local":
        environments = env_preflight.environments_for(fingerprint, stacks, other_host=other_host,
                                                       build=build_envs)
    return cell_verdicts(cells, host, runner, compat, probes, cache_warning, stacks, device,
                         environments=environments)


def host_probes(host: Mapping[str, Any], runner: str) -> tuple[list[dict], str | None]:
    """The GPU probe cache's entries when they matter (a GPU host, a runner of images), and a warning
    when the cache cannot be read: then nothing is known and every PTX-JIT stack needs a probe."""
    from reprokit.errors import UserError
    from reprokit.plan import probe_cache

    if not host.get("gpus") or not runs_images(runner, host):
        return [], None
    try:
        return probe_cache.load()["entries"], None
    except UserError as e:
        return [], f"warning: {e}"
