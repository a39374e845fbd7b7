"""Pick the runner and device: `--runner auto` uses Docker when an engine answers, local otherwise."""

from __future__ import annotations

from reprokit import fingerprint
from reprokit.errors import UserError
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
    from reprokit.containers import images
    from reprokit.suites import load_stacks

    specs = load_stacks()
    found = images.presence((specs[s]["image"] for s in stacks), "gpu" if device == "gpu" else "cpu")
    return [s for s in stacks if found[specs[s]["image"]] is None]


def choose_runner(name: str, device: str, gpus: str | None, stacks: list[str] | None = None):
    """`auto` takes Docker only when an engine answers AND every stack the run needs has its image
    built; otherwise the local runner, saying why."""
    device = choose_device(device)
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
