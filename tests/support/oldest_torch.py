"""The oldest torch the dump claims (``OLDEST``), in a cached virtual environment, for the PyTorch adapter's
tests: ``python = oldest_torch_python()``.

The venv lives in ``${MSPROBE_CACHE:-~/.cache/msprobe}/torch-<version>/``, made once under a file lock
(tests/support/cached_venv.py). It is self-contained: torch itself (PyPI's wheel, with the CUDA libraries it
loads at import: ~2.5 GB, a few minutes the first time) and what the adapter's tests import (``PACKAGES``),
so it reads nothing of the clone that built it and serves every clone on the machine. The suite's own
packages come from the checkout through ``PYTHONPATH``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.cached_venv import ensure_venv
from tests.support.msadapter_env import cache_dir

OLDEST = "2.2.2"
# the dump's dependencies (shared: typer; dump: numpy, pyyaml) and the test runner's
PACKAGES = ("numpy<2", "pyyaml", "typer>=0.9", "pytest", "pytest-timeout", "filelock")


def oldest_torch_python(version: str = OLDEST) -> Path:
    root = ensure_venv(cache_dir() / f"torch-{version}", recipe={"torch": version, "packages": list(PACKAGES)},
                       depends_on=[], build=lambda root: _install(root, version))
    return root / "bin" / "python"


def _install(root: Path, version: str) -> None:
    done = subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           f"torch=={version}", *PACKAGES], capture_output=True, text=True, timeout=3000,
                          env=dict(os.environ, PIP_CONSTRAINT=""))
    if done.returncode != 0:
        raise RuntimeError(f"installing torch {version} failed: {(done.stderr or done.stdout).strip()[-500:]}")


if __name__ == "__main__":
    print(oldest_torch_python(*sys.argv[1:]))
