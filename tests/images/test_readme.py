"""Every command dockerfiles/README.md shows is run, here or in another test of tests/images, as written
(the checkout's relative paths made absolute: tests/images/docker_support.py run_readme)."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.images.docker_support import (REPO, VERSION, missing_prerequisite, out, readme_command,
                                         readme_commands, run, run_readme)
from tests.support import msadapter_env as mae
from tests.support.ci import unavailable

GOLDEN_DUMP = REPO / "tests" / "dump" / "golden" / "data" / "statistics-mix"  # two steps, one rank each


def test_every_readme_command_is_run_by_a_test():
    sources = "\n".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("*.py"))
    starts = re.findall(r'readme_command\(\s*"([^"]+)"', sources)
    left_out = [c for c in readme_commands() if not any(c.startswith(s) for s in starts)]
    assert len(readme_commands()) >= 10 and not left_out, left_out


@pytest.mark.docker
def test_dockerd_start_status_and_a_stop_that_kills_only_its_own_daemon(tmp_path):
    reason = missing_prerequisite()
    if reason:
        unavailable(reason)
    started = run_readme(readme_command("bash .ci/dockerd.sh start"), cwd=tmp_path, timeout=300)
    assert started.returncode == 0 and "docker daemon" in started.stderr, out(started)
    status = run_readme(readme_command("bash .ci/dockerd.sh status"), cwd=tmp_path)
    assert status.returncode == 0 and status.stdout.startswith("running"), out(status)
    # with a cache of its own, stop has no pid of ours: it must leave the daemon the session uses alone
    # (CI's .ci/run stops the real one on exit)
    stopped = run_readme(readme_command("bash .ci/dockerd.sh stop"), cwd=tmp_path,
                         env=dict(os.environ, MSPROBE_CACHE=str(tmp_path)))
    assert stopped.returncode == 0 and "no dockerd started by us is running" in stopped.stderr, out(stopped)
    assert run(["docker", "info"], timeout=120).returncode == 0


@pytest.mark.msadapter
def test_build_rootfs_prints_the_rootfs_path(tmp_path):
    mae.require_rootfs()
    built = run_readme(readme_command("bash dockerfiles/msadapter/build_rootfs.sh"), cwd=tmp_path, timeout=3600)
    assert built.returncode == 0 and built.stdout.strip() == str(mae.rootfs_path()), out(built)
    assert mae.is_built()


@pytest.mark.docker
@pytest.mark.slow
def test_dev_images_built_every_tool_image_from_both_dump_wheels(suite_images):
    said = (suite_images / "images.log").read_text()
    for image in ("shared", "dump", "overflow", "config-check", "ckpt-compare", "msadapter"):
        assert f"image: built msprobe/{image}:{VERSION} and msprobe/{image}:latest" in said, said[-3000:]
    wheels = sorted(p.name for p in (suite_images / "dist").glob("msprobe_dump-*.whl"))
    assert wheels == [f"msprobe_dump-{VERSION}-cp39-abi3-linux_x86_64.whl"], wheels  # one for 3.9 and 3.11


@pytest.mark.docker
@pytest.mark.slow
def test_a_base_that_is_not_there_is_refused_in_one_line(suite_images):
    refused = run_readme(readme_command(".venv/bin/msprobe image build dump --base"), cwd=suite_images)
    assert refused.returncode == 2, out(refused)
    assert refused.stderr.strip() == ("msprobe: error: image my/cann-torch-npu:8.0 not found: pull or build it first, "
                                      "or pass another --base (`docker images` lists this daemon's images)")


@pytest.mark.docker
@pytest.mark.slow
def test_use_commands(suite_images, tmp_path):
    shutil.copytree(GOLDEN_DUMP, tmp_path / "out")
    shutil.copytree(GOLDEN_DUMP, tmp_path / "msprobe_demo" / "overflow" / "dump")
    (tmp_path / "a.sh").write_text("torchrun train.py --lr 0.1 --bf16\n")
    inspected = run_readme(readme_command("docker run --rm --network none -v"), cwd=tmp_path)
    assert inspected.returncode == 0 and "total: 2 rank dump(s)" in inspected.stdout, out(inspected)
    overflow = run_readme(readme_command(".venv/bin/msprobe run overflow"), cwd=tmp_path)
    assert overflow.returncode == 0, out(overflow)
    assert overflow.stdout.startswith("step0: 1 rank(s), no overflow found"), out(overflow)
    packed = run_readme(readme_command(".venv/bin/msprobe run config_check"), cwd=tmp_path)
    assert packed.returncode == 0, out(packed)
    # -o msprobe_out/env_diff/a.zip names the file at that path, also with -O msprobe_out/env_diff as the
    # working directory
    zipped = tmp_path / "msprobe_out" / "env_diff" / "a.zip"
    assert zipped.is_file() and zipped.stat().st_uid == os.getuid(), sorted(tmp_path.rglob("*.zip"))
    # piped, with no COLUMNS: a table fitted to 80 columns cut the names (`msprobe/ckpt-c…`)
    listed = run_readme(readme_command(".venv/bin/msprobe image list"), cwd=tmp_path,
                        env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    assert listed.returncode == 0 and "…" not in listed.stdout, out(listed)
    names = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    for image in ("msprobe/shared", "msprobe/dump", "msprobe/config-check", "msprobe/ckpt-compare",
                  "msprobe/msadapter", "msprobe/base-msadapter", "msprobe/base-torch"):
        assert image in names, listed.stdout
