"""``msprobe image build``: the tool images, from the suite's wheels in dist/, through the docker SDK."""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import docker
from docker.errors import BuildError, ContainerError, DockerException

from msprobe.schema import MsprobeError

from .client import first_line, require_image
from .names import NO_IMAGE, ImageSpec, base_hint

WHEEL = re.compile(r"^msprobe_([a-z0-9_]+)-(\d+\.\d+\.\d+)-[^-]+-[^-]+-[^-]+\.whl$")
MAX_LOG_LINES = 40


def dist_tools(dist: Path, version: str) -> List[str]:
    """Tools that have a wheel of ``version`` in dist, plus msadapter (the dump tool on the MSAdapter base)."""
    if not dist.is_dir():
        raise MsprobeError(f"{dist}: no such directory (build the wheels first: `just wheels`)")
    found = sorted(m.group(1) for m in map(WHEEL.match, (p.name for p in dist.iterdir())) if m and m.group(2) == version)
    tools = [name for name in found if name not in NO_IMAGE]
    return tools + (["msadapter"] if "dump" in tools else [])


def check_base(client: "docker.DockerClient", spec: ImageSpec) -> Dict[str, str]:
    """Run check_base.py in the base; its facts (python, machine, glibc) or one line naming what is missing."""
    require_image(client, spec.base, base_hint(spec.base))
    code = resources.files(__package__).joinpath("check_base.py").read_text(encoding="utf-8")
    try:
        out = client.containers.run(spec.base, ["python3", "-c", code, *spec.frameworks], entrypoint=[],
                                    network_mode="none", user="0", remove=True, stdout=True, stderr=False)
    except ContainerError as exc:
        said = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        raise MsprobeError(f"base image {spec.base} cannot carry {spec.tool}: {said[-1] if said else first_line(exc)}") from None
    except DockerException as exc:
        raise MsprobeError(f"base image {spec.base} cannot carry {spec.tool}: {first_line(exc)} "
                           "(is python3 on its PATH?)") from exc
    line = out.decode(errors="replace").strip().splitlines()[-1]
    return dict(item.split("=", 1) for item in line.split()[1:])


def platform_args(facts: Dict[str, str]) -> List[str]:
    """pip download options for wheels that install on the base: its CPython, machine and glibc."""
    major, minor = facts["python"].split(".")
    machine = facts["machine"]
    glibc_minor = int(facts["glibc"].split(".")[1])
    args = ["--only-binary=:all:", "--python-version", f"{major}.{minor}", "--implementation", "cp",
            "--abi", f"cp{major}{minor}", "--abi", "abi3", "--abi", "none", "--platform", "any"]
    for minor_glibc in range(glibc_minor, 16, -1):
        args += ["--platform", f"manylinux_2_{minor_glibc}_{machine}"]
    # linux_<machine>: the suite's own wheels with C kernels, built on this host by `just wheels`
    return args + ["--platform", f"manylinux2014_{machine}", "--platform", f"linux_{machine}"]


def fetch_wheels(requirement: str, dist: Path, dest: Path, facts: Dict[str, str]) -> None:
    """The tool's wheel and its siblings from dist, third-party wheels (pinned by pip's resolver) from the index."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--dest", str(dest),
           "--find-links", str(dist), *platform_args(facts), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("ERROR")] or proc.stderr.splitlines()[-1:]
        said = lines[0] if lines else "no output"
        if re.search(r"(requirement|found for) msprobe-dump\b", said):
            # a wheel of the dump built for one CPython (not the suite's cp39-abi3 one) installs nowhere else
            said += (f" (no wheel of it in {dist} installs on python {facts['python']}: build the suite's with "
                     f"`just wheels`, or a pure one with MSPROBE_PURE_WHEEL=1 pip wheel --no-deps -w {dist} ./tools/dump)")
        raise MsprobeError(f"pip download of {requirement} for the image failed: {said}")


def build_one(client: "docker.DockerClient", spec: ImageSpec, version: str, dist: Path,
              say: Callable[[str], None]) -> Tuple[str, int]:
    """Build msprobe/<tool>:<version> and tag it :latest; returns (name, size in bytes)."""
    facts = check_base(client, spec)
    say(f"image: {spec.image}:{version} on {spec.base} (python {facts['python']} {facts['machine']})")
    requirement = f"{spec.distribution}=={version}"
    with tempfile.TemporaryDirectory(prefix="msprobe-image-") as tmp:
        context = Path(tmp)
        (context / "wheels").mkdir()
        fetch_wheels(requirement, dist, context / "wheels", facts)
        recipe = resources.files(__package__).joinpath("tool.Dockerfile").read_text(encoding="utf-8")
        (context / "Dockerfile").write_text(recipe, encoding="utf-8")
        tag = f"{spec.image}:{version}"
        before = _image_id(client, tag)
        try:
            image, _ = client.images.build(path=str(context), tag=tag, network_mode="none", rm=True, forcerm=True,
                                           buildargs={"BASE": spec.base, "REQUIREMENT": requirement},
                                           labels={"msprobe.tool": spec.tool, "msprobe.base": spec.base})
        except BuildError as exc:
            tail = [str(e.get("stream", e.get("error", ""))).rstrip() for e in exc.build_log][-MAX_LOG_LINES:]
            say("\n".join(line for line in tail if line))
            raise MsprobeError(f"docker build of {tag} failed: {first_line(exc)}") from None
        except DockerException as exc:
            raise MsprobeError(f"docker build of {tag} failed: {first_line(exc)}") from exc
    image.tag(spec.image, "latest")
    _drop_leftovers(client, requirement, before if before != image.id else None)
    return tag, int(image.attrs.get("Size", 0))


def _image_id(client: "docker.DockerClient", name: str) -> Optional[str]:
    try:
        return client.images.get(name).id
    except DockerException:  # (not there yet)
        return None


def _drop_leftovers(client: "docker.DockerClient", requirement: str, replaced: Optional[str]) -> None:
    """Remove what a build leaves untagged: its build stage (~285 MB, labelled in tool.Dockerfile) and the image
    the tags named before, unless a container or another tag still uses it. The stage's layers were docker's
    cache of the venv install: a rebuild installs it again from the wheels (seconds)."""
    try:
        client.images.prune(filters={"dangling": True, "label": f"msprobe.build-stage={requirement}"})
        if replaced is not None:
            client.images.remove(replaced)
    except DockerException:  # in use (a container of the old image runs): docker keeps it, as `docker rmi` would
        pass
