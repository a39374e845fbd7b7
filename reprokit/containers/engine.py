"""The one way the kit connects to a Docker engine (the docker SDK, never the CLI).

`client()` is every command's and runner's connection: TIMEOUT_S is its read timeout for every
call (a build step, a `docker save` chunk or an image load can be silent for minutes; the Docker
runner waits for a cell in slices with timeouts of its own). `answers()` only asks whether an engine
answers at all, within PING_TIMEOUT_S: `--runner auto`, preflight, and the Docker runner after a
failed call (is the engine gone?).
"""

from __future__ import annotations

from reprokit.errors import UserError

TIMEOUT_S = 600
PING_TIMEOUT_S = 5


def _connect(timeout: float):
    import docker

    c = docker.from_env(timeout=timeout)
    c.ping()
    return c


def client():
    """A client of the engine DOCKER_HOST (or the local socket) names; a one-line UserError when
    none answers."""
    try:
        return _connect(TIMEOUT_S)
    except Exception as e:  # no SDK, no socket, engine down: all mean "no engine"
        raise UserError(f"no Docker engine answers ({type(e).__name__}); run .ci/docker-setup.sh "
                        "or start dockerd") from None


def answers() -> tuple[bool, str]:
    """(whether an engine answers a ping within PING_TIMEOUT_S, the reason in words)."""
    try:
        _connect(PING_TIMEOUT_S)
        return True, "a Docker engine answers"
    except Exception as e:
        return False, f"no Docker engine ({type(e).__name__})"
