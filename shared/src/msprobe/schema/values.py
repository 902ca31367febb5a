"""Checks of single config.json values: each returns the value or raises a SchemaError naming the field."""
from __future__ import annotations

import difflib
import re
from typing import Any, List, Optional, Sequence, Tuple

from .errors import SchemaError
from .ranges import MAX_INDEX, IntRanges


def unknown(source: str, where: str, known: Sequence[str], key: Optional[str] = None) -> None:
    close = difflib.get_close_matches(key or where, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else f"; known keys: {', '.join(known)}"
    raise SchemaError(source, where, "unknown key" + hint)


def choice(value: Any, choices: Sequence[str], source: str, name: str) -> str:
    if value not in choices:
        raise SchemaError(source, name, f"expected one of {', '.join(choices)}", value, has_got=True)
    return value


def string(value: Any, source: str, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise SchemaError(source, name, "expected a non-empty string", value, has_got=True)
    return value


def optional_string(value: Any, source: str, name: str) -> Optional[str]:
    return None if value is None else string(value, source, name)


def boolean(value: Any, source: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(source, name, "expected true or false", value, has_got=True)
    return value


def optional_int(value: Any, source: str, name: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(source, name, "expected an integer", value, has_got=True)
    return value


def str_list(value: Any, source: str, name: str) -> List[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaError(source, name, "expected a list of strings", value, has_got=True)
    return value


RANGE_RE = re.compile(r"^\s*(\d{1,20})\s*-\s*(\d{1,20})\s*$")


def int_list(value: Any, source: str, name: str) -> IntRanges:
    """A list of non-negative ints and ``"a-b"`` ranges, e.g. ``[0, "2-4"]``; ranges stay ranges."""
    if isinstance(value, IntRanges):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise SchemaError(source, name, 'expected a list of integers or "a-b" ranges', value, has_got=True)
    out: List[Tuple[int, int]] = []
    for item in value:
        if isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= MAX_INDEX:
            out.append((item, item))
            continue
        match = RANGE_RE.match(item) if isinstance(item, str) else None
        if match and int(match.group(1)) <= int(match.group(2)) <= MAX_INDEX:
            out.append((int(match.group(1)), int(match.group(2))))
            continue
        raise SchemaError(source, name, f'expected integers from 0 to {MAX_INDEX} or "a-b" ranges with a <= b',
                          item, has_got=True)
    return IntRanges(out)
