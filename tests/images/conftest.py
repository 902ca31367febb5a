"""The images every test here runs against, built once per session by the README's `./dev images`.

That is: the bases (dockerfiles/build_images.sh: cached debootstrap tarball, torch layer, the MSAdapter
rootfs `docker import`ed), the wheels (`just wheels`) plus the pure-Python dump wheel, and every tool
image (`msprobe image build`).
Needs root, docker.io and debootstrap; outside CI a machine without them skips with the reason, under
CI=true that fails. MSPROBE_SKIP_IMAGES=1 skips them explicitly (and fails under CI=true, like any other reason).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.ci import unavailable
from tests.images.docker_support import missing_prerequisite, out, readme_command, run_readme


@pytest.fixture(scope="session")
def suite_images(tmp_path_factory) -> Path:
    """The folder holding dist/ (the wheels the images were built from) and images.log (what was said)."""
    reason = missing_prerequisite()
    if reason:
        unavailable(f"docker images: {reason}")
    work = tmp_path_factory.mktemp("images")
    env = dict(os.environ, MSPROBE_DIST=str(work / "dist"), MSPROBE_VENV=sys.prefix)
    built = run_readme(readme_command("./dev images"), cwd=work, env=env, timeout=3600)
    (work / "images.log").write_text(built.stdout + built.stderr)
    assert built.returncode == 0, out(built)
    return work
