"""``msprobe run TOOL -- ARGS``: one tool's image on the user's files, through the docker SDK.

Every argument that names an existing path is bind-mounted read-only at its absolute path; the output
directory (default: the current one) is mounted writable at its own path and is the working directory. A
path not there yet (with a slash) must lie under it and is passed absolute, so it names the file it names on
the host; a bare word stays as it is. The container runs as a non-root user with no network and no
capabilities, its output
is streamed, and its exit code is returned. Which paths may be mounted: guard.py; who the container runs
as and who owns its files: owner.py.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import docker
from docker.errors import DockerException

from msprobe.schema import MsprobeError

from .client import first_line, require_image
from .guard import check_input, check_output
from .names import ImageSpec
from .owner import Handover, image_user

MAX_MOUNTS = 64


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _path_of(arg: str) -> Tuple[str, str]:
    """(prefix, candidate path): ``--out=x`` -> ("--out=", "x"); an option or empty value -> (arg, "")."""
    if arg.startswith("-"):
        head, sep, value = arg.partition("=")
        return (head + sep, value) if sep else (arg, "")
    return "", arg


def _there(path: Path, value: str, made: Sequence[Path]) -> bool:
    """Whether ``path`` exists, or will once the output folder is made: an argument naming the output folder
    or a folder above it is a path, as it would be if planned after the mkdir."""
    try:
        # realpath, not resolve: it does not raise on a link loop (a path that is not there)
        return path.exists() or Path(os.path.realpath(path)) in made
    except OSError as exc:
        raise MsprobeError(f"msprobe run: cannot read {value}: {exc.strerror or exc}") from None


def plan(args: Sequence[str], output: Path,
         made: Sequence[Path] = ()) -> Tuple[List[str], Dict[str, Dict[str, str]]]:
    """The arguments with paths made absolute, and the volumes: inputs read-only, ``output`` writable;
    ``made``: the folders (resolved) that will be made for the output before the run, counted as there."""
    volumes = {str(output): {"bind": str(output), "mode": "rw"}}
    new_args: List[str] = []
    for arg in args:
        prefix, value = _path_of(arg)
        if not value:
            new_args.append(arg)
            continue
        path = Path(value).expanduser().absolute()
        check_input(path, value)  # as written: under /proc even a stat can fail
        if _there(path, value, made):
            path = path.resolve()
            check_input(path, value)
            if not _inside(path, output) and not any(_inside(path, Path(m)) for m in volumes):
                volumes[str(path)] = {"bind": str(path), "mode": "ro"}
        elif "/" in value or os.sep in value:
            # a path to be written: through the writable mount, where the same path on the host would be
            if not _inside(path, output):
                raise MsprobeError(f"msprobe run: {value}: no such file or directory (outputs go under {output})")
        else:  # a bare word (a command name, or a file name relative to the working directory, the output one)
            new_args.append(arg)
            continue
        new_args.append(prefix + str(path))
    if len(volumes) > MAX_MOUNTS:
        raise MsprobeError(f"msprobe run: {len(volumes)} paths to mount, at most {MAX_MOUNTS}")
    return new_args, volumes


def output_folder(output: Path) -> Path:
    """The output folder, absolute with its links resolved, checked (guard.py) before anything is made."""
    resolved = output.expanduser().absolute().resolve()
    check_output(resolved, str(output))
    return resolved


@dataclass(frozen=True)
class Launch:
    """A run decided before the docker daemon is asked (refusals come first), nothing made yet."""

    output: Path
    """The output folder, absolute and resolved."""
    made: Tuple[Path, ...]
    """The folders missing for it, leaf first: made by :func:`run`, removed again when nothing ran."""
    command: List[str]
    volumes: Dict[str, Dict[str, str]]


def prepare(args: Sequence[str], output: Path) -> Launch:
    """The output folder checked and the arguments planned, against the folders as they will be once the
    output folder is made."""
    output = output_folder(output)
    made = tuple(folder for folder in (output, *output.parents) if not folder.exists())
    return Launch(output, made, *plan(args, output, made))


def run(client: "docker.DockerClient", spec: ImageSpec, args: Sequence[str], output: Path,
        as_command: bool = False) -> int:
    """Run ``msprobe ARGS`` (``ARGS`` itself with ``as_command``) in the tool's image; returns its exit code."""
    return start(client, spec, prepare(args, output), as_command)


def start(client: "docker.DockerClient", spec: ImageSpec, launch: Launch, as_command: bool = False) -> int:
    """:func:`run` as ``launch`` planned it (the CLI plans before it connects to the daemon)."""
    image = f"{spec.image}:latest"
    found = require_image(client, image, f"build it with `msprobe image build {spec.tool}`")
    output, command, volumes = launch.output, launch.command, launch.volumes
    output.mkdir(parents=True, exist_ok=True)
    handover = Handover(output, bool(launch.made), image_user(found)) if os.getuid() == 0 else None
    if handover is not None:
        try:
            handover.before()
        except MsprobeError:
            for folder in launch.made:
                folder.rmdir()  # nothing was run: leave no empty folder behind
            raise
    user = "%d:%d" % (handover.user if handover is not None else (os.getuid(), os.getgid()))
    entry = {"entrypoint": command[:1], "command": command[1:]} if as_command else {"command": command}
    try:
        container = client.containers.create(image, **entry, user=user, network_mode="none", volumes=volumes,
                                             working_dir=str(output), environment={"HOME": "/tmp"},
                                             cap_drop=["ALL"], security_opt=["no-new-privileges"])
    except DockerException as exc:
        if handover is not None:
            handover.after()
        raise MsprobeError(f"msprobe run: cannot create a container of {image}: {first_line(exc)}") from exc
    try:
        # attached before it starts, as `docker run` does: an attach made after a fast container has exited
        # can wait forever for output that never comes
        output_stream = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
        container.start()
        for out, err in output_stream:
            for stream, chunk in ((sys.stdout, out), (sys.stderr, err)):
                if chunk:
                    stream.buffer.write(chunk)
                    stream.flush()
        return int(container.wait().get("StatusCode", 1))
    finally:
        container.remove(force=True)
        if handover is not None:
            handover.after()
