"""The oldest torch the dump claims (``OLDEST``), in a cached virtual environment, for the PyTorch adapter's
tests: ``python = oldest_torch_python()``.

The venv lives in ``${MSPROBE_CACHE:-~/.cache/msprobe}/torch-<version>/`` and is made once under a file
lock. It holds torch itself (PyPI's wheel, with the CUDA libraries it loads at import: ~2.5 GB, a few
minutes the first time); everything else (numpy, pytest, pyyaml, typer...) comes from the suite's own venv
through a ``.pth`` line appended after its own site-packages, so its torch shadows the suite's.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from filelock import FileLock

from tests.support.msadapter_env import cache_dir

OLDEST = "2.2.2"
_DONE = ".msprobe-complete"


def oldest_torch_python(version: str = OLDEST) -> Path:
    root = cache_dir() / f"torch-{version}"
    python = root / "bin" / "python"
    root.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root) + ".lock"):
        if (root / _DONE).exists():
            return python
        venv.EnvBuilder(clear=True, with_pip=True).create(root)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                               f"torch=={version}", "numpy<2"], capture_output=True, text=True, timeout=3000,
                              env=dict(os.environ, PIP_CONSTRAINT=""))
        if done.returncode != 0:
            raise RuntimeError(f"installing torch {version} failed: {(done.stderr or done.stdout).strip()[-500:]}")
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        Path(site, "zz-msprobe-suite.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        (root / _DONE).write_text(version)
    return python


if __name__ == "__main__":
    print(oldest_torch_python(*sys.argv[1:]))
