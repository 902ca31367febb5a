"""The msprobe/<tool> images and the launcher (`msprobe image build|list`, `msprobe run`) on the real daemon.

The images come from `./dev images`, run once per session by tests/images/conftest.py.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.images.docker_support import MSPROBE, VERSION, inspect as _inspect, out as _out, run as _run
from tests.packaging import test_recipes as recipes

LIGHT = ("msprobe/config-check", "msprobe/ckpt-compare")
pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def images(suite_images) -> Path:
    """The dist/ folder the images were built from."""
    return suite_images / "dist"


@pytest.mark.parametrize("image", ["shared", "dump", "overflow", "config-check", "ckpt-compare", "msadapter"])
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
                  "import torch, msprobe.pytorch, msprobe.dump._kernels; "
                  "print(torch.__version__, float(torch.ones(2, 2).sum()))"])
    # the kernels: dist also holds the pure-Python dump wheel (for msprobe/msadapter); this one must not take it
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


PROBE = """
import os, sys
print(os.getuid(), os.getgid(), open("/proc/self/status").read().split("CapEff:")[1].split()[0])
open("made.txt", "w").write("x")
os.mkdir("sub")
open(os.path.join("sub", "f"), "w").write("y")
os.symlink(sys.argv[1] if len(sys.argv) > 1 else "/nonexistent", "link")
"""


def test_as_root_the_container_runs_as_the_image_user_and_hands_the_files_back(images, tmp_path):
    """Root's containers run as the image's 1000:1000 with no capabilities, never as root; what it made
    is root's after, the output folder's owner is set back (a new one, an existing one lent for the run), and a
    link it made is given back itself, never what it points to."""
    assert os.getuid() == 0  # (the docker tests run as root: tests/images/docker_support.py)
    (tmp_path / "probe.py").write_text(PROBE)
    outside = tmp_path / "not-yours"
    outside.write_text("z")
    os.chown(outside, 1000, 1000)
    (tmp_path / "existing").mkdir(mode=0o755)
    for folder in ("new", "existing"):
        out = tmp_path / folder
        probe = _run([MSPROBE, "run", "shared", "-O", out, "--exec", "--", "python", tmp_path / "probe.py", outside])
        assert probe.returncode == 0 and probe.stdout.split() == ["1000", "1000", "0000000000000000"], _out(probe)
        made = [out, out / "made.txt", out / "sub", out / "sub" / "f", out / "link"]
        assert [(p.lstat().st_uid, p.lstat().st_gid) for p in made] == [(0, 0)] * 5
        assert (outside.stat().st_uid, (out / "link").readlink()) == (1000, outside)
        assert oct(out.stat().st_mode & 0o777) == "0o755"


def test_a_caller_other_than_root_runs_as_itself(images, tmp_path, monkeypatch, capfd):
    from msprobe.launcher import run as runner
    from msprobe.launcher.client import connect
    from msprobe.launcher.names import default_spec

    (tmp_path / "probe.py").write_text(PROBE)
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)
    monkeypatch.setattr(os, "getuid", lambda: 4242)
    monkeypatch.setattr(os, "getgid", lambda: 4343)
    code = runner.run(connect(), default_spec("shared"), ["python", str(tmp_path / "probe.py")], out, as_command=True)
    said = capfd.readouterr()
    assert code == 0 and said.out.split() == ["4242", "4343", "0000000000000000"], said.err
    assert ((out / "made.txt").stat().st_uid, (out / "made.txt").stat().st_gid) == (4242, 4343)


def test_a_build_leaves_no_dangling_build_stage(images):
    stages = _run(["docker", "images", "--quiet", "--filter", "dangling=true", "--filter", "label=msprobe.build-stage"])
    assert stages.returncode == 0 and stages.stdout.strip() == "", _out(stages)


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


def test_env_diff_recipe_through_the_images(images, tmp_path):
    a, b = recipes.launch_scripts(tmp_path)
    out = tmp_path / "env"
    recipes.check_env_diff(recipes.dev("env-diff", a, b, out, image=True), out)


def test_ckpt_diff_recipe_through_the_images(images, tmp_path):
    a, b = recipes.checkpoints(tmp_path)
    out = tmp_path / "diff" / "ckpt.json"
    recipes.check_ckpt_diff(recipes.dev("ckpt-diff", a, b, out, image=True), out)


def test_first_overflow_recipe_through_the_images(images, tmp_path):
    """overflow_check in msprobe/overflow, then op_generate writes and runs the script in msprobe/op-generate."""
    dump = recipes.overflowing_dump(tmp_path)
    out = tmp_path / "fo"
    recipes.check_first_overflow(recipes.dev("first-overflow", dump, out, image=True), out)
