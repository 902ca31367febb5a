"""Run a command as a person at a terminal sees it: stderr on a pseudo-terminal, stdout captured.

Progress bars are drawn only when stderr is a terminal; tests use this to see them (and to see
that ``--quiet`` turns them off).
"""
from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path
from typing import Sequence, Tuple, Union


def on_a_terminal(command: Sequence[Union[str, Path]], cwd: Union[str, Path]) -> Tuple[int, str]:
    """(exit status, everything written to stderr) of ``command`` run with stderr on a pseudo-terminal."""
    leader, follower = pty.openpty()
    with subprocess.Popen([str(part) for part in command], cwd=cwd, stdout=subprocess.PIPE, stderr=follower,
                          env=dict(os.environ, TERM="xterm", COLUMNS="100")) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.stdout.read()
    os.close(leader)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")
