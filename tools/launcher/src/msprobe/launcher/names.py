"""Image names and what each tool's image is built on."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Tuple

from msprobe.schema import MsprobeError

REPOSITORY = "msprobe"
PLAIN_BASE = "msprobe/base:py311"
TORCH_BASE = "msprobe/base-torch:2.13.0-cpu"
MSADAPTER_BASE = "msprobe/base-msadapter:py39"
BASE_BUILDS = {PLAIN_BASE: "base", TORCH_BASE: "torch", MSADAPTER_BASE: "msadapter"}
"""The argument of dockerfiles/build_images.sh that builds each of the suite's bases (and only what it needs:
all of them would take the 4.4 GB MSAdapter rootfs too)."""
NO_IMAGE = ("launcher",)  # distributions that run on the host only


@dataclass(frozen=True)
class ImageSpec:
    """How the image of one tool is made."""

    tool: str
    """Tool name as the user types it, with underscores (``config_check``); the image is msprobe/config-check."""
    distribution: str
    """The distribution installed into the image (its dependencies come with it)."""
    base: str
    """Image to build on: it provides python3 (3.9+, with venv) and the framework, e.g. an Ascend CANN image."""
    frameworks: Tuple[str, ...] = ()
    """Modules the base must import (checked before building), e.g. ("torch", "torch_npu")."""

    @property
    def image(self) -> str:
        return f"{REPOSITORY}/{self.tool.replace('_', '-')}"


def base_hint(base: str) -> str:
    """What to do when the base image ``base`` is not on the daemon."""
    which = BASE_BUILDS.get(base)
    if which is None:
        return "pull or build it first, or pass another --base (`docker images` lists this daemon's images)"
    return f"build it with `bash dockerfiles/build_images.sh {which}` in the msprobe checkout (or pass --base)"


def tool_key(name: str) -> str:
    """``config-check``, ``msprobe/config-check`` and ``config_check`` all name the tool config_check."""
    key = name.split("/", 1)[1] if name.startswith(REPOSITORY + "/") else name
    key = key.split(":", 1)[0].replace("-", "_")
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,40}", key):
        raise MsprobeError(f"tool name {name!r}: expected a tool such as dump, overflow or config_check")
    return key


def default_spec(tool: str) -> ImageSpec:
    """The suite's defaults: torch tools on the CPU torch base, MSAdapter on its Python 3.9 base, others plain."""
    if tool == "msadapter":
        return ImageSpec(tool, "msprobe-dump", MSADAPTER_BASE, ("mindspore", "msadapter"))
    distribution = "msprobe-" + tool.replace("_", "-")
    if tool in ("dump", "op_generate"):
        return ImageSpec(tool, distribution, TORCH_BASE, ("torch",))
    return ImageSpec(tool, distribution, PLAIN_BASE)
