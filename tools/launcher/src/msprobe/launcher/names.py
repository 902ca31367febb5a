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
BASE_HINT = "build the base images with `bash dockerfiles/build_images.sh` (or pass --base)"
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
