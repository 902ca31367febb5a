"""Text from someone else's dump, made safe to print on a terminal.

Entry names, folder names and stack frames come from the dump's author: a name holding ``\\x1b]0;...\\x07``
would set the terminal's title, ``\\x1b[2J`` clear the screen, ``\\r`` or ``\\n`` overwrite or forge a line of
the report. Every console line that may hold such text goes through :func:`printable`.
"""
from __future__ import annotations

import typer


def printable(text: str) -> str:
    """``text`` with each unprintable character (controls, escapes, line breaks, bidi marks, surrogates)
    written as Python's repr writes it (``\\x1b``, ``\\n``, ``\\u202e``); printable text, any script, unchanged."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def echo(line: str, err: bool = False) -> None:
    """One console line that may quote a dump's names, printed through :func:`printable`."""
    typer.echo(printable(line), err=err)
