"""Two ranks on the CPU under torchrun (gloo), as the tests that need a real distributed run start them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional


def two_ranks(script: Path, *args: Any, env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None,
              timeout: int = 300) -> None:
    """``torchrun --standalone --nproc_per_node 2 SCRIPT ARGS`` (one OpenMP thread per rank unless ``env`` is
    given); fails the test with the tails of its output when it exits non-zero."""
    torchrun = Path(sys.executable).parent / "torchrun"
    done = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", str(script), *map(str, args)],
                          env=env if env is not None else dict(os.environ, OMP_NUM_THREADS="1"), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
