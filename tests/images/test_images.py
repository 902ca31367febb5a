"""Docker images of the suite: built offline by dockerfiles/build_images.sh, each smoke-tested with --network none.

Needs root, docker.io and debootstrap (apt). Outside CI a machine without them skips with the reason;
under CI=true a missing prerequisite fails, because CI is where the images must be proven.
MSPROBE_SKIP_IMAGES=1 skips explicitly. First build on a machine ~10 min (debootstrap, pip download, the
msadapter rootfs); later runs reuse ${MSPROBE_CACHE:-~/.cache/msprobe} and docker's layer cache (~1 min).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERD = REPO / ".ci" / "dockerd.sh"
BUILD = REPO / "dockerfiles" / "build_images.sh"
TOOL_IMAGES = {
    "dump": "msprobe-dump",
    "overflow": "msprobe-overflow",
    "config_check": "msprobe-config-check",
    "ckpt_compare": "msprobe-ckpt-compare",
}
SMALL_DUMP = Path("test/msprobe_test/visualization_ut/input/step0/rank0")

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(2700)]


def _missing_prerequisite() -> str:
    if os.environ.get("MSPROBE_SKIP_IMAGES") == "1":
        return "MSPROBE_SKIP_IMAGES=1"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "building images needs root (debootstrap, dockerd)"
    for tool, package in (("docker", "docker.io"), ("dockerd", "docker.io"), ("debootstrap", "debootstrap"),
                          ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install -y {package})"
    return ""


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI") == "true" and os.environ.get("MSPROBE_SKIP_IMAGES") != "1":
        pytest.fail(f"docker images cannot be tested in CI: {reason}")
    print(f"skipping docker image tests: {reason}")
    pytest.skip(reason)


def _run(cmd: List[str], timeout: float = 300) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _tail(proc: "subprocess.CompletedProcess[str]", n: int = 30) -> str:
    return "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-n:])


@pytest.fixture(scope="module")
def docker_daemon():
    reason = _missing_prerequisite()
    if reason:
        _skip_or_fail(reason)
    was_running = _run(["bash", str(DOCKERD), "status"], timeout=60).returncode == 0
    start = _run(["bash", str(DOCKERD), "start"], timeout=180)
    if start.returncode != 0:
        _skip_or_fail(f"dockerd does not start: {_tail(start, 3)}")
    yield
    if not was_running:
        _run(["bash", str(DOCKERD), "stop"], timeout=120)


@pytest.fixture(scope="module")
def built(docker_daemon) -> dict:
    """Build every image once; returns {tool: image} for the tool images that were built."""
    proc = _run(["bash", str(BUILD)], timeout=2400)
    assert proc.returncode == 0, f"build_images.sh failed:\n{_tail(proc)}"
    images = {}
    for tool, image in TOOL_IMAGES.items():
        has_package = (REPO / "tools" / tool / "pyproject.toml").is_file()
        if has_package:
            images[tool] = image
        else:
            assert f"skip {image}" in proc.stderr, proc.stderr
    return images


def _docker_run(image: str, args: List[str], mounts: List[str] = ()) -> "subprocess.CompletedProcess[str]":
    cmd = ["docker", "run", "--rm", "--network", "none"]
    for m in mounts:
        cmd += ["-v", m]
    return _run(cmd + [image] + args, timeout=300)


@pytest.mark.parametrize("tool", sorted(TOOL_IMAGES))
def test_tool_image_runs_msprobe_help(built, tool):
    if tool not in built:
        pytest.skip(f"tools/{tool}/pyproject.toml missing: image not built")
    proc = _docker_run(built[tool], ["msprobe", "--help"])
    assert proc.returncode == 0, _tail(proc)
    assert "Usage" in proc.stdout and "inspect" in proc.stdout, proc.stdout


def test_dump_image_has_cpu_torch_and_adapters(built):
    if "dump" not in built:
        pytest.skip("tools/dump/pyproject.toml missing")
    proc = _docker_run(built["dump"], ["python", "-c",
                                       "import torch, msprobe.dump, msprobe.pytorch; print('torch', torch.__version__);"
                                       "print(float(torch.ones(2, 2).sum()))"])
    assert proc.returncode == 0, _tail(proc)
    assert "torch 2.13.0+cpu" in proc.stdout and "4.0" in proc.stdout, proc.stdout


def test_dump_image_inspects_a_mounted_dump(built, peer_fixtures):
    if "dump" not in built:
        pytest.skip("tools/dump/pyproject.toml missing")
    rank = peer_fixtures / SMALL_DUMP
    assert rank.is_dir(), rank
    proc = _docker_run(built["dump"], ["msprobe", "inspect", "/data"], mounts=[f"{rank}:/data:ro"])
    assert proc.returncode == 0, _tail(proc)
    assert "1 rank dump(s)" in proc.stdout, proc.stdout


def test_overflow_image_has_its_command(built):
    if "overflow" not in built:
        pytest.skip("tools/overflow/pyproject.toml missing")
    proc = _docker_run(built["overflow"], ["msprobe", "overflow_check", "--help"])
    assert proc.returncode == 0, _tail(proc)
    assert "not installed" not in proc.stdout, proc.stdout


def test_config_check_image_imports_its_package(built):
    if "config_check" not in built:
        pytest.skip("tools/config_check/pyproject.toml missing")
    proc = _docker_run(built["config_check"], ["python", "-c", "import msprobe.core.config_check, pandas; print('ok')"])
    assert proc.returncode == 0 and "ok" in proc.stdout, _tail(proc)
    proc = _docker_run(built["config_check"], ["msprobe", "config_check", "--help"])
    assert proc.returncode == 0, _tail(proc)


def test_ckpt_compare_image_has_cpu_torch(built):
    if "ckpt_compare" not in built:
        pytest.skip("tools/ckpt_compare/pyproject.toml missing")
    proc = _docker_run(built["ckpt_compare"], ["python", "-c",
                                               "import torch, msprobe.ckpt_compare; print('torch', torch.__version__)"])
    assert proc.returncode == 0, _tail(proc)
    assert "torch 2.13.0+cpu" in proc.stdout, proc.stdout


def test_msadapter_image_runs_mindspore_and_the_py39_packages(built):
    code = ("import mindspore, msadapter.pytorch as torch, msprobe.schema, msprobe.dump; "
            "print('mindspore', mindspore.__version__, tuple(torch.ones(2, 3).shape), str(torch.ones(1).dtype))")
    proc = _docker_run("msprobe-msadapter:py39",
                       ["env", "GLOG_v=3", "PYTHONPATH=/repo/shared/src:/repo/tools/dump/src", "python3.9", "-c", code],
                       mounts=[f"{REPO}:/repo:ro"])
    assert proc.returncode == 0, _tail(proc)
    assert "mindspore 2.0.0 (2, 3) Float32" in proc.stdout, proc.stdout
