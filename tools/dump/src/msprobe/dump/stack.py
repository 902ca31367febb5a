"""Python call stacks for stack.json, cheap enough for every API call: frames are walked with
``sys._getframe`` and each (code, line) is formatted once per process.

Caches key on ``id(code)``, never on the code object: hashing a code object hashes its bytecode and
constants on every lookup (per frame, per call). ``_CODES`` holds every code object an id-keyed cache
refers to, so an id cannot be reused while it is cached; the caches are bounded (``LIMIT`` distinct stacks
or code objects, as generated code may bring new ones every step) and cleared all together.

The contract with the writers: ``capture`` hands out one list object per distinct stack while it is cached,
so a writer may group entries by the list's identity (``output._write_metadata``, ``msprobe.schema.rank_writer.StacksJson``)
only while it holds the lists it groups by. After a clear an equal stack comes back as a new list: it is then
written twice, never under another stack's entries."""
from __future__ import annotations

import dis
import linecache
import os
import sys
from typing import Dict, List, Optional, Tuple

LIMIT = 1 << 16
_FORMATTED: Dict[Tuple[object, int], str] = {}
_STACKS: Dict[Tuple, List[str]] = {}
_SKIP_DIRS = (os.sep + os.path.join("msprobe", "dump") + os.sep, os.sep + os.path.join("msprobe", "pytorch") + os.sep,
              os.sep + os.path.join("msprobe", "mindspore") + os.sep)


def _line_of(code, lasti: int) -> int:
    """The source line of bytecode offset ``lasti`` (what ``frame.f_lineno`` computes on every access)."""
    line = code.co_firstlineno
    if not hasattr(code, "co_lines"):  # Python 3.9
        for start, number in dis.findlinestarts(code):
            if start > lasti:
                break
            line = number
        return line
    for start, end, number in code.co_lines():
        if start <= lasti < end:
            return number if number is not None else line
        if number is not None:
            line = number
    return line


def _frame_line(code, lasti: int) -> str:
    key = (id(code), lasti)
    text = _FORMATTED.get(key)
    if text is None:
        lineno = _line_of(code, lasti)
        source = linecache.getline(code.co_filename, lineno).strip()
        text = f"File {code.co_filename}, line {lineno}, in {code.co_name}, \n {source}"
        _FORMATTED[key] = text
        _CODES[id(code)] = code
    return text


_SKIP: Dict[int, bool] = {}
_CODES: Dict[int, object] = {}  # keeps every code object an id-keyed cache refers to alive


def _skipped(code) -> bool:
    name = code.co_filename
    skip = any(d in name for d in _SKIP_DIRS) or name.endswith(("torch/overrides.py", "torch/nn/modules/module.py"))
    _SKIP[id(code)] = skip
    _CODES[id(code)] = code
    return skip


_RECENT: Dict[int, Tuple[object, Dict[int, List[str]], Tuple[Tuple, List[object]]]] = {}
_RECENT_LIMIT = 4
_SUSPENDABLE = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


def capture(limit: int = 64) -> List[str]:
    """The caller's stack (at most ``limit`` frames), innermost first, without this package's own
    frames (upstream's order).

    While a (non-generator) frame runs, its callers wait at fixed instructions, so the frame object
    identifies the rest of the stack, and the frame with its current instruction the whole stack: the
    callers are walked once per frame (a module's forward issuing many API calls), and a loop issuing
    many API calls from one line (an optimizer over its parameters) finds its stack by that line. The
    few frames remembered for that are released by ``forget()`` at the end of each dumped window."""
    found = _anchor(sys._getframe(1))
    if found is None:
        return []
    anchor, lasti = found
    if anchor.f_code.co_flags & _SUSPENDABLE:  # a resumed generator may have other callers
        return _frames_of(*_with_callers(anchor, lasti, _walk(anchor.f_back, limit - 1)))
    hit = _RECENT.get(id(anchor))
    if hit is not None and hit[0] is anchor:
        _, sites, callers = hit
        frames = sites.get(lasti)
        if frames is not None:
            return frames
    else:
        callers = _walk(anchor.f_back, limit - 1)
        if len(_RECENT) >= _RECENT_LIMIT:
            _RECENT.clear()
        sites = {}
        _RECENT[id(anchor)] = (anchor, sites, callers)
    frames = sites[lasti] = _frames_of(*_with_callers(anchor, lasti, callers))
    return frames


def _with_callers(frame, lasti: int, callers: Tuple[Tuple, List[object]]) -> Tuple[Tuple, List[object]]:
    keys, codes = callers
    return (id(frame.f_code), lasti) + keys, [frame.f_code] + codes


def _anchor(frame) -> Optional[Tuple[object, int]]:
    """(frame, its current instruction) of the first frame that is not this package's or torch's own."""
    skip_of = _SKIP.get
    while frame is not None:
        skip = skip_of(id(frame.f_code))
        if skip is None:
            skip = _skipped(frame.f_code)
        if not skip:
            return frame, frame.f_lasti
        frame = frame.f_back
    return None


def _walk(frame, limit: int) -> Tuple[Tuple, List[object]]:
    """(id of code, instruction) pairs, flattened, and the code objects of ``frame`` and its callers that
    are not this package's or torch's own, at most ``limit``."""
    skip_of = _SKIP.get
    keys: List[int] = []
    codes = []
    while frame is not None and len(codes) < limit:
        code = frame.f_code
        skip = skip_of(id(code))
        if skip is None:
            skip = _skipped(code)
        if not skip:  # f_lasti, not f_lineno: the line number is decoded once per (code, offset), not per call
            keys.append(id(code))
            keys.append(frame.f_lasti)
            codes.append(code)
        frame = frame.f_back
    return tuple(keys), codes


def _frames_of(key: Tuple, codes: List[object]) -> List[str]:
    frames = _STACKS.get(key)
    if frames is None:
        if len(_STACKS) >= LIMIT or len(_CODES) >= LIMIT:
            _clear()
        # one list object per distinct stack: writers may dedupe by identity
        frames = [_frame_line(code, key[2 * i + 1]) for i, code in enumerate(codes)]
        _STACKS[key] = frames
    return frames


def forget() -> None:
    """Release the frames ``capture`` remembers (they hold their locals)."""
    _RECENT.clear()


def _clear() -> None:
    """Every cache at once: an id-keyed entry must never outlive the code object ``_CODES`` keeps for it."""
    for cache in (_RECENT, _STACKS, _FORMATTED, _SKIP, _CODES):
        cache.clear()
