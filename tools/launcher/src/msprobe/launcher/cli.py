"""Commands ``msprobe image build|list`` and ``msprobe run`` (registered through ``msprobe.commands``)."""
from __future__ import annotations

from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import List, Optional

import typer

from msprobe.schema import MsprobeError

from . import build, run as runner
from .client import connect
from .names import REPOSITORY, base_hint, default_spec, tool_key


def register_image(app: typer.Typer) -> None:
    image_app = typer.Typer(no_args_is_help=True, help="Build and list the msprobe/<tool> images (docker SDK).")
    image_app.command("build")(build_images)
    image_app.command("list")(list_images)
    app.add_typer(image_app, name="image")


def register_run(app: typer.Typer) -> None:
    app.command("run", context_settings={"ignore_unknown_options": True})(run_tool)


def suite_version() -> str:
    return metadata.version("msprobe-launcher")


def build_images(
    tools: Optional[List[str]] = typer.Argument(None, help="Tools to build (default: every tool with a wheel in "
                                                "--dist, and msadapter when its base exists)."),
    dist: Path = typer.Option(Path("dist"), "--dist", help="Folder with the suite's wheels (`just wheels`)."),
    base: Optional[str] = typer.Option(None, "--base", help="Base image for the one tool named, e.g. an Ascend "
                                       "image with CANN, torch and torch_npu; it must have python3 >= 3.9."),
    framework: Optional[str] = typer.Option(None, "--framework", help="Comma-separated modules the base must "
                                            "import (default: the tool's, e.g. torch for dump)."),
) -> None:
    """Build msprobe/<tool>:<version> and :latest from the wheels in dist, with no network during the build."""
    version = suite_version()
    available = build.dist_tools(dist, version)
    wanted = [tool_key(t) for t in tools] if tools else available
    if (base or framework) and len(wanted) != 1:
        raise MsprobeError("msprobe image build: --base and --framework apply to one tool; name exactly one")
    client = connect()
    for tool in wanted:
        if tool not in available:
            raise MsprobeError(f"msprobe image build: no wheel of {default_spec(tool).distribution} {version} in "
                               f"{dist} (build them with `just wheels`)")
        spec = default_spec(tool)
        if base:
            spec = replace(spec, base=base)
        if framework is not None:
            spec = replace(spec, frameworks=tuple(m for m in framework.split(",") if m))
        if not tools and tool == "msadapter" and not client.images.list(name=spec.base):
            typer.echo(f"image: skip {spec.image}: base {spec.base} not built ({base_hint(spec.base)})")
            continue
        name, size = build.build_one(client, spec, version, dist, typer.echo)
        typer.echo(f"image: built {name} and {spec.image}:latest ({size / 1e6:.0f} MB)")


def list_images() -> None:
    """The msprobe images on this docker daemon, with their sizes."""
    client = connect()
    rows = [("image", "tags", "size", "created", "base")]
    images = [img for img in client.images.list() if any(t.startswith(REPOSITORY + "/") for t in img.tags)]
    for img in sorted(images, key=lambda i: sorted(i.tags)[0]):
        tags = sorted(t for t in img.tags if t.startswith(REPOSITORY + "/"))
        labels = img.labels or {}
        rows.append((tags[0].rsplit(":", 1)[0], ", ".join(t.rsplit(":", 1)[1] for t in tags),
                     f"{img.attrs.get('Size', 0) / 1e6:.0f} MB", str(img.attrs.get("Created", ""))[:19],
                     labels.get("msprobe.base", "")))
    # plain columns as wide as their widest cell: a table fitted to the terminal cut names short in pipes
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def run_tool(
    tool: str = typer.Argument(..., help="The tool whose image runs: dump, overflow, config_check, ..."),
    args: Optional[List[str]] = typer.Argument(None, help="Arguments of `msprobe` inside the image (after --)."),
    output: Path = typer.Option(Path("."), "-O", "--output-dir", help="Writable directory (working directory in "
                                "the container); every other path in ARGS is mounted read-only."),
    exec_: bool = typer.Option(False, "--exec", help="Run ARGS as the command (e.g. python script.py) instead "
                               "of `msprobe ARGS`."),
) -> int:
    """Run `msprobe ARGS` in msprobe/<tool>: no network, not as root, your paths mounted; returns its exit code."""
    spec = default_spec(tool_key(tool))
    if exec_ and not args:
        raise MsprobeError("msprobe run --exec: give the command after --")
    launch = runner.prepare(args or [], output)  # refused paths are said before the daemon is asked
    return runner.start(connect(), spec, launch, as_command=exec_)
