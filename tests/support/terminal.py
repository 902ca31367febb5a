"""Run a command as a person at a terminal sees it: stderr on a pseudo-terminal, stdout captured.

Progress bars are drawn only when stderr is a terminal; tests use this to see them (and to see
that ``--quiet`` turns them off). ``printed`` gives the bytes a terminal would receive, for the tests that
names from a dump never reach it as escape codes (issue 40).
"""
from __future__ import annotations

import os
import pty
import re
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


# What a terminal acts on rather than shows (escape sequences, bell, carriage return, backspace...): a tab
# and a line break are the only control bytes a report may print.
TERMINAL_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
HOSTILE_ESCAPES = "\x1b]0;pwn\x07\x1b[2J\r"
"""Sets the terminal's title, clears the screen, returns to the line's start: what a hostile name may hold."""
HOSTILE_SHOWN = "\\x1b]0;pwn\\x07\\x1b[2J\\r"
"""The same as the suite prints it (msprobe.cli.terminal.printable: Python's repr escapes)."""


def printed(command: Sequence[Union[str, Path]], cwd: Union[str, Path]) -> Tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of ``command`` as the bytes a terminal would receive (no newline
    translation, so a carriage return stays one)."""
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, timeout=600)
    return done.returncode, done.stdout, done.stderr
