"""Python call stacks for stack.json, cheap enough for every API call: frames are walked with
``sys._getframe`` and each (code, line) is formatted once per process."""
from __future__ import annotations

import linecache
import os
import sys
from typing import Dict, List, Tuple

_FORMATTED: Dict[Tuple[object, int], str] = {}
_STACKS: Dict[Tuple, List[str]] = {}
_SKIP_DIRS = (os.sep + os.path.join("msprobe", "dump") + os.sep, os.sep + os.path.join("msprobe", "pytorch") + os.sep,
              os.sep + os.path.join("msprobe", "mindspore") + os.sep)


def _frame_line(code, lineno: int) -> str:
    key = (code, lineno)
    text = _FORMATTED.get(key)
    if text is None:
        source = linecache.getline(code.co_filename, lineno).strip()
        text = f"File {code.co_filename}, line {lineno}, in {code.co_name}, \n {source}"
        _FORMATTED[key] = text
    return text


_SKIP: Dict[object, bool] = {}


def _skipped(code) -> bool:
    skip = _SKIP.get(code)
    if skip is None:
        name = code.co_filename
        skip = any(d in name for d in _SKIP_DIRS) or name.endswith(("torch/overrides.py", "torch/nn/modules/module.py"))
        _SKIP[code] = skip
    return skip


def capture(limit: int = 64) -> List[str]:
    """The caller's stack, innermost first, without this package's own frames (upstream's order)."""
    frame = sys._getframe(1)
    keys = []
    skip_of = _SKIP.get
    while frame is not None and len(keys) < limit:
        code = frame.f_code
        skip = skip_of(code)
        if skip is None:
            skip = _skipped(code)
        if not skip:
            keys.append((code, frame.f_lineno))
        frame = frame.f_back
    key = tuple(keys)
    frames = _STACKS.get(key)
    if frames is None:
        frames = [_frame_line(code, line) for code, line in keys]
        _STACKS[key] = frames
    return frames
