"""Reading the commands a README shows and running them as a shell would, from the test's interpreter."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

BIN = Path(sys.executable).parent


def code_blocks(text: str, kind: str) -> List[str]:
    """The bodies of the fenced blocks of one language (```shell, ```python...) in ``text``, in order."""
    return re.findall(rf"```{kind}\n(.*?)```", text, re.DOTALL)


def shell_commands(readme: Path) -> List[str]:
    """Every line of every ```shell block of ``readme``."""
    return [line for block in code_blocks(readme.read_text(encoding="utf-8"), "shell")
            for line in block.strip().splitlines()]


def run_shown(command: str, cwd: Path, env: Optional[Dict[str, str]] = None,
              timeout: int = 900) -> subprocess.CompletedProcess:
    """``command`` as shown: ``NAME=value`` prefixes go to the environment, ``python`` and ``pip`` are this
    interpreter's, any other program is the one installed beside it."""
    words = shlex.split(command)
    env = dict(os.environ if env is None else env)
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if words[0] == "pip":
        words = [sys.executable, "-m", "pip"] + words[1:]
    else:
        words[0] = sys.executable if words[0] == "python" else str(BIN / words[0])
    return subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
