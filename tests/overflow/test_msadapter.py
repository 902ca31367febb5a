"""MSAdapter 0.1.0 on MindSpore 2.0.0 (Python 3.9 rootfs): online overflow_check with doc 29's script shape,
then the offline analysis of what it wrote, here on the host."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprobe.overflow import analyze_dump
from tests.support import msadapter_env as mae

pytestmark = [pytest.mark.msadapter, pytest.mark.slow]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "msadapter_overflow.py"


PACKAGES = ["shared", "tools/dump", "tools/overflow"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The task is found through its entry point, as for users: the packages are installed in the rootfs."""
    mae.ensure_rootfs()
    mae.install_repo_packages(PACKAGES)
    yield
    # keep the shared cached rootfs free of this repo's packages
    mae.run_py39(["-m", "pip", "uninstall", "-y", "-q", "msprobe-shared", "msprobe-dump", "msprobe-overflow"],
                 cwd=tmp_path_factory.mktemp("uninstall"))


# L0: linear1's own output (800) is finite; exp runs in the root model (not a recorded module), so the first
# module that sees inf is linear1's backward, whose incoming gradient is exp(800)
@pytest.mark.parametrize("level, first", [("L1", "Torch.exp.0.forward"), ("L0", "Module.linear1.Linear.backward.0")])
def test_msadapter_overflow_check(installed, tmp_path, level, first):
    done = mae.run_py39([str(SCRIPT), level], cwd=tmp_path, timeout=600)
    assert done.returncode == 0 and "done" in done.stdout, (done.stdout + done.stderr)[-3000:]
    dump = tmp_path / "dump"
    assert not (dump / "step0").exists()  # the finite step keeps nothing
    data = json.loads((dump / "step1" / "rank" / "dump.json").read_text())
    assert data["framework"] == "mindtorch" and data["task"] == "overflow_check"
    assert len(data["data"]) == 1, list(data["data"])  # overflow_nums = 1
    [name] = data["data"]
    assert name == first
    [result] = analyze_dump(dump / "step1")
    assert result.origin is not None and result.origin.op_name == name
