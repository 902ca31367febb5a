"""tests/mindspore/test_internals.py on the oldest MindSpore we claim: 2.0.0 on Python 3.9, in the MSAdapter
rootfs (tests/support/msadapter_env.py); the host venv runs it on the newest."""
from __future__ import annotations

import pytest

from tests.support import msadapter_env as mae

pytestmark = pytest.mark.msadapter


def test_the_internals_tests_pass_on_mindspore_2_0():
    mae.require_rootfs()
    mae.ensure_rootfs()
    done = mae.run_py39(["-c", "import mindspore; print(mindspore.__version__)"], cwd=mae.REPO_ROOT)
    assert done.stdout.strip() == "2.0.0", done.stdout + done.stderr
    # --noconftest: tests/mindspore/conftest.py leaves out every file where mindspore has no mint (2.0)
    done = mae.run_py39(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
                         "tests/mindspore/test_internals.py"], cwd=mae.REPO_ROOT,
                        env={"PYTHONPATH": mae.repo_pythonpath(["shared", "tools/dump"])})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1] and "failed" not in done.stdout.splitlines()[-1]
