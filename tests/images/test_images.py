"""The msprobe/<tool> images and the launcher (`msprobe image build|list`, `msprobe run`) on the real daemon.

Builds, once per session: the bases (dockerfiles/build_images.sh base torch: cached tarball + torch layer),
the wheels (`just wheels`, ~2 min) and every tool image (`msprobe image build`, ~1 min each on 2 cores,
seconds when docker's cache holds the layers). Needs root, docker.io and debootstrap; outside CI a machine
without them skips with the reason, under CI=true that fails. MSPROBE_SKIP_IMAGES=1 skips explicitly.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parents[2]
VERSION = (REPO / "VERSION").read_text().strip()
MSPROBE = Path(sys.executable).parent / "msprobe"
LIGHT = ("msprobe/config-check", "msprobe/ckpt-compare")
pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(3600)]


def _missing_prerequisite() -> str:
    if os.environ.get("MSPROBE_SKIP_IMAGES") == "1":
        return "MSPROBE_SKIP_IMAGES=1"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "building images needs root (debootstrap, dockerd)"
    for tool, package in (("docker", "docker.io"), ("dockerd", "docker.io"), ("debootstrap", "debootstrap")):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install -y {package})"
    return ""


def _run(cmd: List, timeout: float = 1800, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)


def _out(proc) -> str:
    return (proc.stdout + proc.stderr)[-3000:]


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    reason = _missing_prerequisite()
    if reason:
        if os.environ.get("CI") == "true" and reason != "MSPROBE_SKIP_IMAGES=1":
            pytest.fail(f"docker images cannot be tested in CI: {reason}")
        pytest.skip(reason)
    bases = _run(["bash", REPO / "dockerfiles/build_images.sh", "base", "torch"])
    assert bases.returncode == 0, _out(bases)
    dist = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, MSPROBE_DIST=str(dist), MSPROBE_VENV=sys.prefix)
    wheels = _run([REPO / "dev", "wheels"], cwd=REPO, env=env)
    assert wheels.returncode == 0, _out(wheels)
    built = _run([MSPROBE, "image", "build", "--dist", dist], cwd=REPO)
    assert built.returncode == 0, _out(built)
    return dist


def _inspect(name: str) -> dict:
    return json.loads(_run(["docker", "image", "inspect", name]).stdout)[0]


@pytest.mark.parametrize("image", ["shared", "dump", "overflow", "config-check", "ckpt-compare"])
def test_image_is_tagged_runs_as_a_user_in_data_with_msprobe_as_entrypoint(images, image):
    info = _inspect(f"msprobe/{image}:{VERSION}")
    assert info["Id"] == _inspect(f"msprobe/{image}:latest")["Id"]
    config = info["Config"]
    assert config["Entrypoint"] == ["msprobe"] and config["WorkingDir"] == "/data" and config["User"] == "1000:1000"
    helped = _run(["docker", "run", "--rm", "--network", "none", f"msprobe/{image}", "--help"], timeout=300)
    assert helped.returncode == 0 and "inspect" in helped.stdout, _out(helped)
    history = _run(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", f"msprobe/{image}"]).stdout
    assert "wheels" not in history, history  # the wheels stayed in the build stage


@pytest.mark.parametrize("image", LIGHT)
def test_config_check_and_ckpt_compare_images_are_light(images, image):
    assert _inspect(image)["Size"] < 300e6
    probe = _run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c",
                  "import importlib.util as u; print([m for m in ('torch', 'pandas', 'mindspore') if u.find_spec(m)])"])
    assert probe.stdout.strip() == "[]", _out(probe)


def test_dump_image_has_the_cpu_torch_of_its_base(images):
    probe = _run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "python", "msprobe/dump", "-c",
                  "import torch, msprobe.pytorch; print(torch.__version__, float(torch.ones(2, 2).sum()))"])
    assert probe.returncode == 0 and probe.stdout.split() == ["2.13.0+cpu", "4.0"], _out(probe)


def test_a_base_without_the_framework_is_refused_in_one_line(images):
    refused = _run([MSPROBE, "image", "build", "dump", "--dist", images, "--base", "msprobe/base:py311"])
    assert refused.returncode == 2, _out(refused)
    assert refused.stderr.strip() == ("msprobe: error: base image msprobe/base:py311 cannot carry dump: missing: "
                                      "framework module 'torch' does not import: No module named 'torch'")


def test_run_mounts_inputs_read_only_writes_as_the_caller_and_returns_the_exit_code(images, tmp_path):
    (tmp_path / "a.sh").write_text("torchrun train.py --lr 0.1 --bf16\n")
    (tmp_path / "b.sh").write_text("torchrun train.py --lr 0.2 --fp16\n")
    out = tmp_path / "out"
    for name in ("a", "b"):
        packed = _run([MSPROBE, "run", "config_check", "-O", out, "--", "config_check", "-d", tmp_path / f"{name}.sh",
                       "-o", out / f"{name}.zip"])
        assert packed.returncode == 0, _out(packed)
        assert (out / f"{name}.zip").stat().st_uid == os.getuid()
    failed = _run([MSPROBE, "run", "config-check", "-O", out, "--", "config_check", "-c", out / "a.zip",
                   out / "b.zip", "-o", out / "result", "--fail-on-error"])
    assert failed.returncode == 1 and "hyperparameters" in failed.stdout, _out(failed)
    readonly = _run([MSPROBE, "run", "shared", "-O", out, "--", "--help", tmp_path / "a.sh"])
    assert readonly.returncode == 0, _out(readonly)


def test_run_has_no_network(images, tmp_path):
    probe = _run([MSPROBE, "run", "shared", "-O", tmp_path, "--exec", "--", "python", "-c",
                  "import socket; print(sorted(n for _, n in socket.if_nameindex()))"])
    assert probe.returncode == 0 and probe.stdout.strip() == "['lo']", _out(probe)


@pytest.mark.parametrize("args, message", [
    (["run", "overflow", "--", "overflow_check", "-i", "/no/such/dump"], "/no/such/dump: no such file or directory"),
    (["run", "no_such_tool", "--", "--help"], "image msprobe/no-such-tool:latest not found"),
])
def test_run_refuses_in_one_line(images, tmp_path, args, message):
    refused = _run([MSPROBE, *args], cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, _out(refused)
    assert message in refused.stderr


def test_no_daemon_is_one_line(tmp_path):
    refused = _run([MSPROBE, "run", "shared", "--", "--help"], env=dict(os.environ, DOCKER_HOST="unix:///no.sock"))
    assert refused.returncode == 2 and refused.stderr.startswith("msprobe: error: no docker daemon answers"), _out(refused)


def test_image_list_shows_the_tools(images):
    listed = _run([MSPROBE, "image", "list"], env=dict(os.environ, COLUMNS="200"))
    assert listed.returncode == 0
    for image in ("msprobe/shared", "msprobe/dump", "msprobe/config-check", "msprobe/base"):
        assert image in listed.stdout


def test_env_diff_recipe_through_the_images(images, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("recipes", REPO / "tests/packaging/test_recipes.py")
    recipes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipes)
    check_env_diff, dev, launch_scripts = recipes.check_env_diff, recipes.dev, recipes.launch_scripts
    a, b = launch_scripts(tmp_path)
    out = tmp_path / "env"
    check_env_diff(dev("env-diff", a, b, out, image=True), out)
