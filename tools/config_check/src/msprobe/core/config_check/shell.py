"""Hyperparameters from a launch script: the ``--key value`` options of its launch commands.

A small shell reader, not a regex: quotes, backslash continuations, comments, ``NAME=value``
assignments (expanded where used, with word splitting when unquoted, as bash does), ``;``, ``|``,
``&&`` and newlines between commands. ``--flag`` followed by another option is a boolean flag, so
``--bf16 --train-iters 10`` gives ``bf16 = True, train-iters = "10"``; ``python train.py --lr 1``
counts as a launch command like ``torchrun`` and ``msrun`` do. ``script_exports`` reads what the
script exports to its launch commands' environment.
"""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Tuple

from .catalog import same_value

LAUNCHERS = re.compile(r"^(python[0-9.]*|torchrun|msrun|deepspeed|accelerate|mpirun|srun|"
                       r"python[0-9.]* -m torch\.distributed\.(launch|run))$")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_OPTION = re.compile(r"^--?[A-Za-z]")
_SEPARATORS = {"\n", ";", "|", "||", "&&", "&"}

# A word is a list of (text, kind) pieces. kind: "lit" (single quotes, escapes: taken as is),
# "dq" (double quotes: variables expanded, no splitting), "raw" (unquoted: expanded and split).
Word = List[Tuple[str, str]]


def parse_shell(text: str) -> Dict[str, Any]:
    """{option: value or True} from every launch command of the script, in order."""
    variables: Dict[str, str] = {}
    options: Dict[str, Any] = {}
    for command in _commands(text):
        words = _expand(command, variables)
        if words and all(_ASSIGN.match(w) for w in words if w not in ("export", "declare", "local", "readonly")):
            for word in words:
                match = _ASSIGN.match(word)
                if match:
                    variables[match[1]] = match[2]
            continue
        start = _launcher_index(words)
        if start is not None:
            merge_into(options, _options(words[start + 1:]))
    return options


def script_exports(text: str, environ: Optional[Dict[str, str]] = None) -> Dict[str, Optional[str]]:
    """What the script puts in its launch commands' environment: ``export NAME=value`` (or ``NAME=value`` then
    ``export NAME``, ``declare -x``), ``NAME=value`` and ``env NAME=value`` before a launch command; ``unset
    NAME`` gives None. ``$NAME`` in a value is the script's own variable, else ``environ``'s (``PATH=/x:$PATH``)."""
    variables: Dict[str, str] = dict(environ or {})
    exported: Dict[str, Optional[str]] = {}
    for command in _commands(text):
        words = _expand(command, variables)
        if not words:
            continue
        if words[0] == "unset":
            for name in words[1:]:
                variables.pop(name, None)
                exported[name] = None
            continue
        keyword = words[0] in ("export", "declare", "local", "readonly", "typeset")
        exporting = words[0] == "export" or (keyword and "-x" in words[1:])
        assignments = [w for w in words[1 if keyword else 0:] if not w.startswith("-")]
        if all(_ASSIGN.match(w) or (keyword and _NAME.match(w)) for w in assignments):
            for word in assignments:
                name, has_value, value = word.partition("=")
                if has_value:
                    variables[name] = value
                if exporting and name in variables:
                    exported[name] = variables[name]
            continue
        exported.update(_launch_prefixes(words))
    return exported


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _launch_prefixes(words: List[str]) -> Dict[str, Optional[str]]:
    """``NAME=value`` words (after an optional ``env``) that a launch command starts with: its environment."""
    index = 1 if words[0] == "env" else 0
    found: Dict[str, Optional[str]] = {}
    while index < len(words) and _ASSIGN.match(words[index]):
        name, _, value = words[index].partition("=")
        found[name] = value
        index += 1
    if index < len(words) and LAUNCHERS.match(os.path.basename(words[index])):
        return found
    return {}


def merge_into(target: Dict[str, Any], new: Dict[str, Any]) -> None:
    """Same key twice with different values keeps both, in msprobe's ``duplicate_value`` form."""
    for key, value in new.items():
        if key not in target or same_value(target[key], value):
            target.setdefault(key, value)
            continue
        old = target[key]
        if isinstance(old, dict) and old.get("description") == "duplicate_value":
            if not any(same_value(v, value) for v in old["values"]):
                old["values"].append(value)
        else:
            target[key] = {"description": "duplicate_value", "values": [old, value]}


def _launcher_index(words: List[str]):
    for index, word in enumerate(words):
        if _ASSIGN.match(word) and index == 0:
            continue
        if LAUNCHERS.match(os.path.basename(word)):
            return index
    return None


def _options(words: List[str]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("--") or len(word) == 2:
            continue
        key, has_value, value = word[2:].partition("=")
        if has_value:
            out[key] = value
            continue
        values = []
        while index < len(words) and not _OPTION.match(words[index]) and not words[index].endswith(".py"):
            values.append(words[index])
            index += 1
        out[key] = True if not values else values[0] if len(values) == 1 else values
    return out


def _expand(command: List[Word], variables: Dict[str, str]) -> List[str]:
    out: List[str] = []
    for word in command:
        current = [""]
        for text, kind in word:
            if kind == "lit":
                current[-1] += text
                continue
            value = _substitute(text, variables)
            if kind == "dq":
                current[-1] += value
                continue
            parts = value.split()
            if not parts:
                continue
            if value[:1].isspace():
                current.append("")
            current[-1] += parts[0]
            current.extend(parts[1:])
            if value[-1:].isspace():
                current.append("")
        out.extend(part for part in current if part)
    return out


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _substitute(text: str, variables: Dict[str, str]) -> str:
    """$NAME, ${NAME}, ${NAME:-default}; unknown names stay as written (same text compares equal)."""
    def one(match: "re.Match[str]") -> str:
        name = match.group(1) or match.group(3)
        if name in variables:
            return variables[name]
        return match.group(2) if match.group(2) is not None else match.group(0)
    return _VARIABLE.sub(one, text)


def _commands(text: str) -> List[List[Word]]:
    """Split the script into commands of words; quoted pieces keep their spaces."""
    commands: List[List[Word]] = [[]]
    word: Word = []
    pending = False
    i, n = 0, len(text)

    def end_word() -> None:
        nonlocal word, pending
        if pending:
            commands[-1].append(word)
        word, pending = [], False

    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                word.append((text[i + 1], "lit"))
                pending = True
            i += 2
        elif c in " \t\r":
            end_word()
            i += 1
        elif c == "#" and not pending:
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif c in "\n;|&<>":
            end_word()
            if c in "\n;|&" and commands[-1]:
                commands.append([])
            i += 1
        elif c == "'":
            close = text.find("'", i + 1)
            close = n if close < 0 else close
            word.append((text[i + 1:close], "lit"))
            pending, i = True, close + 1
        elif c == '"':
            j = i + 1
            buf = ""
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\$`\n':
                    buf += text[j + 1] if text[j + 1] != "\n" else ""
                    j += 2
                    continue
                buf += text[j]
                j += 1
            word.append((buf, "dq"))
            pending, i = True, j + 1
        elif c == "$" and text[i + 1:i + 2] == "(":
            depth, j = 0, i + 1
            while j < n:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            word.append((text[i:j], "lit"))
            pending, i = True, j
        else:
            j = i
            while j < n and text[j] not in " \t\r\n;|&<>'\"\\#" and not (text[j] == "$" and text[j + 1:j + 2] == "("):
                j += 1
            j = max(j, i + 1)
            word.append((text[i:j], "raw"))
            pending, i = True, j
    end_word()
    return [command for command in commands if command]
