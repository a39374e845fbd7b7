"""Pick the runner and device: `--runner auto` uses Docker when an engine answers, local otherwise.

For the local runner the device is the environments' as much as the host's (`local_device`): each
stack's environment is probed (runners/env_probe.py) and preflight judges the GPU cells on it
(env_preflight.py), so `--device gpu` with an environment that cannot use a GPU is a one-line error
before anything runs, and `--device auto` runs on the GPU only the cells whose environment can,
the others on the CPU, saying why in one line."""

from __future__ import annotations

from reprokit.errors import UserError
from reprokit.probes import fingerprint
from reprokit.runners.local import LocalRunner


def docker_engine_answers() -> tuple[bool, str]:
    """Whether a Docker engine answers, and why not (reprokit/containers/engine.py)."""
    from reprokit.containers import engine

    return engine.answers()


def choose_device(device: str) -> str:
    if device != "auto":
        return device
    gpus, _ = fingerprint.nvml_gpus()
    return "gpu" if gpus else "cpu"


def missing_images(stacks: list[str], device: str) -> list[str]:
    """The stacks among `stacks` whose image (for this device's flavour) is not built."""
    from reprokit.catalog.suites import load_stacks
    from reprokit.containers import images

    specs = load_stacks()
    found = images.presence((specs[s]["image"] for s in stacks), "gpu" if device == "gpu" else "cpu")
    return [s for s in stacks if found[specs[s]["image"]] is None]


def choose_runner(name: str, device: str, gpus: str | None, stacks: list[str] | None = None,
                  local_because: str | None = None):
    """`auto` takes Docker only when an engine answers AND every stack the run needs has its image
    built; otherwise the local runner, saying why. `local_because`: `auto` takes the local runner
    for this reason (--python names interpreters, which only the local runner runs)."""
    device = choose_device(device)
    if name == "auto" and local_because:
        return LocalRunner(), device, local_because
    if name in ("auto", "docker"):
        ok, why = docker_engine_answers()
        if ok and name == "auto" and stacks:
            missing = missing_images(stacks, device)
            if missing:
                return (LocalRunner(), device, f"{why}, but no image built for "
                        f"{', '.join(missing)} (`reproduce.py build`); local runner")
        if ok:
            from reprokit.runners.docker import DockerRunner

            return DockerRunner(device=device, gpus=gpus), device, why
        if name == "docker":
            raise UserError(f"--runner docker: {why}; start dockerd (see README) or use "
                            "--runner local")
        return LocalRunner(), device, f"{why}: local runner"
    return LocalRunner(), device, "asked for"


def _env_failed(verdict: dict) -> dict | None:
    """The failed `environment` check of a GPU cell's verdict (env_preflight.py), if that is why it
    cannot run on the GPU."""
    if verdict.get("runnable"):
        return None
    return next((c for c in verdict.get("checks", []) if c["name"] == "environment" and not c["ok"]),
                None)


def gpu_environments(cells: list, host: dict, *, other_host: bool, runner: str = "local",
                     say=None) -> tuple[dict, dict[str, str]]:
    """Every cell's GPU verdict under the local runner (or the Slurm local launcher: `runner`
    "slurm", `other_host`: the node's) on `host`, judged on the environments (probed here, built
    first if need be, as the run would), and {stack: why its environment cannot use a GPU} for the
    stacks whose GPU cells fail on that alone (a fallback link's environment may still run them)."""
    from reprokit.catalog.suites import load_stacks
    from reprokit.runners import env_preflight, host_preflight

    env_of = env_preflight.environments_for(host, load_stacks(), other_host=other_host, build=True,
                                            say=say)
    verdicts = host_preflight.suite_verdicts(cells, host, runner, "gpu", environments=env_of,
                                        other_host=other_host)
    by_stack: dict[str, str] = {}
    for c in cells:
        failed = _env_failed(verdicts.get(c.id) or {})
        if failed:
            by_stack.setdefault(c.stack, failed["detail"].split("; pass --python")[0])
    return verdicts, by_stack


def refuse_gpu(flag: str, by_stack: dict[str, str], other: str) -> None:
    """The one-line error of a GPU run whose environments cannot use a GPU (none when all can)."""
    if by_stack:
        stack, detail = next(iter(by_stack.items()))
        more = f" (and {len(by_stack) - 1} more stack(s))" if len(by_stack) > 1 else ""
        raise UserError(f"{flag}: {detail}{more}; pass --python {stack}=PATH naming an interpreter "
                        f"with a GPU build, --runner docker, or {other}")


def local_device(asked: str, cells: list, say=print) -> tuple[str, set[str], str]:
    """(device, ids of cells that run on the CPU instead, why in one line) for the local runner.

    `cpu`: as asked. `auto` on a host where NVML finds no GPU: cpu. Otherwise every GPU cell's
    preflight verdict on the environment that would run it (probed here; environments are built
    first if need be, as the run would): with `gpu` a cell whose environment cannot use a GPU is a
    UserError naming the fix; with `auto` such cells (and any other the GPU cannot run) run on the
    CPU."""
    from reprokit.probes import fingerprint

    if asked == "cpu":
        return "cpu", set(), "as asked"
    gpus, summary = fingerprint.nvml_gpus()
    if not gpus:
        reason = summary.get("reason") or "NVML sees 0 GPUs"
        if asked == "auto":
            return "cpu", set(), f"--device auto: this host has no GPU ({reason})"
        return "gpu", set(), "as asked"  # fingerprint.require_gpu refused this already
    verdicts, by_stack = gpu_environments(cells, fingerprint.host_fingerprint(), other_host=False,
                                          say=say)
    if asked == "gpu":
        refuse_gpu("--device gpu", by_stack, "--device auto to run such cells on the CPU")
        return "gpu", set(), "as asked; every GPU cell's environment can use the GPU (probed)"
    to_cpu = {c.id for c in cells if c.id in verdicts and not verdicts[c.id].get("runnable")
              and c.gpus_on("gpu")}
    names = sorted({c.stack for c in cells if c.id in to_cpu})
    if to_cpu and len(to_cpu) == len([c for c in cells if c.gpus_on("gpu")]):
        first = next(iter(by_stack.values()), "preflight: the GPU cannot run them")
        return "cpu", set(), (f"--device auto: no environment here can use the GPU ({first}"
                              + (f"; {len(names) - 1} more stack(s)" if len(names) > 1 else "") + ")")
    if to_cpu:
        return "gpu", to_cpu, (f"--device auto: gpu, except {len(to_cpu)} cell(s) of "
                               f"{', '.join(names)} on the CPU (their environment or the GPU cannot "
                               "run them there: `reproduce.py preflight --runner local --device gpu`)")
    return "gpu", set(), "--device auto: every GPU cell's environment can use the GPU (probed)"
