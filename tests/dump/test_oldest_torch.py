"""The PyTorch adapter on the oldest torch we claim (tests/support/oldest_torch.py): its internals, hooks,
backward entries, caches and crash safety, by the same tests as on the newest torch."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.oldest_torch import OLDEST, oldest_torch_python

REPO = Path(__file__).resolve().parents[2]
TESTS = ["test_internals.py", "test_backward.py", "test_gradient_entries.py", "test_kept_hooks.py", "test_content_cache.py",
         "test_device_batches.py", "test_crash.py", "test_nested.py", "test_compile.py"]


@pytest.mark.slow
def test_the_adapter_tests_pass_on_the_oldest_torch(tmp_path):
    python = oldest_torch_python()
    version = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True, check=True).stdout.strip()
    assert version.startswith(OLDEST)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(REPO / p) for p in ("shared/src", "tools/dump/src")))
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging",
                           *[str(REPO / "tests" / "dump" / name) for name in TESTS]],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
