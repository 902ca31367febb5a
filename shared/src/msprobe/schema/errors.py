"""The one error type users see from the suite: a single English line naming file and field."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

PathLike = Union[str, Path]


class MsprobeError(Exception):
    """A user mistake or bad input. The CLI prints it as one line and exits non-zero."""

    exit_code = 2


class SchemaError(MsprobeError, ValueError):
    """A file does not follow its format: says which file, which field, and what was expected."""

    def __init__(self, path: Optional[PathLike], field: Optional[str], expected: str,
                 got: Any = None, has_got: bool = False) -> None:
        self.path = str(path) if path is not None else None
        self.field = field
        self.expected = expected
        parts = []
        if self.path:
            parts.append(self.path)
        if field:
            parts.append(f"field '{field}'")
        head = ": ".join(parts)
        message = f"{head}: {expected}" if head else expected
        if has_got:
            message += f", got {_short(got)}"
        super().__init__(" ".join(message.splitlines()))  # a quoted name may hold any line break


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def field_path(*parts: Union[str, int]) -> str:
    """Join JSON keys and list indices the way error messages show them: data.X.input_args[0].dtype."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out
