"""Pick the runner and device: `--runner auto` uses Docker when an engine answers, local otherwise."""

from __future__ import annotations

from reprokit import fingerprint
from reprokit.errors import UserError
from reprokit.runners.local import LocalRunner


def docker_engine_answers() -> tuple[bool, str]:
    try:
        import docker
        client = docker.from_env(timeout=5)
        client.ping()
        return True, "a Docker engine answers"
    except Exception as e:  # no SDK, no socket, engine down: all mean "no engine"
        return False, f"no Docker engine ({type(e).__name__})"


def choose_device(device: str) -> str:
    if device != "auto":
        return device
    gpus, _ = fingerprint.nvml_gpus()
    return "gpu" if gpus else "cpu"


def missing_images(stacks: list[str], device: str) -> list[str]:
    """The stacks among `stacks` whose image (for this device's flavour) is not built."""
    import docker

    from reprokit import images
    from reprokit.suites import load_stacks

    client = docker.from_env(timeout=10)
    flavour = "gpu" if device == "gpu" else "cpu"
    specs = load_stacks()
    missing = []
    for stack in stacks:
        try:
            found = images.find_image(client, specs[stack]["image"], flavour)
        except Exception:
            found = None
        if found is None:
            missing.append(stack)
    return missing


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
            try:
                from reprokit.runners.docker import DockerRunner
            except ModuleNotFoundError:
                if name == "docker":
                    raise UserError("the docker runner is not available in this version; use "
                                    "--runner local") from None
                return LocalRunner(), device, f"{why}, but no docker runner yet; local"
            return DockerRunner(device=device, gpus=gpus), device, why
        if name == "docker":
            raise UserError(f"--runner docker: {why}; start dockerd (see README) or use "
                            "--runner local")
        return LocalRunner(), device, f"{why}: local runner"
    return LocalRunner(), device, "asked for"
