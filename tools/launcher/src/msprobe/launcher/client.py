"""The docker daemon connection, with one-line errors instead of the SDK's tracebacks."""
from __future__ import annotations

import os

import docker
from docker.errors import DockerException

from msprobe.schema import MsprobeError


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def connect() -> "docker.DockerClient":
    """A client that has answered a ping; MsprobeError when no daemon does."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except DockerException as exc:
        raise MsprobeError(f"no docker daemon answers at {where} (start one, e.g. `bash .ci/dockerd.sh start`, "
                           f"or set DOCKER_HOST): {first_line(exc)}") from exc
    return client


def require_image(client: "docker.DockerClient", name: str, hint: str):
    """The image called ``name``; MsprobeError naming ``hint`` when it is not there."""
    try:
        return client.images.get(name)
    except docker.errors.ImageNotFound:
        raise MsprobeError(f"image {name} not found: {hint}") from None
    except DockerException as exc:
        raise MsprobeError(f"image {name}: {first_line(exc)}") from exc
