"""Random-number calls: same API, same call stack, same count and same seeds on each rank.

Stacks are matched on (file name, function, code line) of each frame, so moved lines and
different install folders do not count; frames inside installed libraries and the standard
library are matched on (file name, function) only, and launcher frames (runpy) are dropped.
"""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Tuple

from .results import ERROR, PASS, ItemResult

_FRAME = re.compile(r"^File (?P<path>.*?), line (?P<line>\d+), in (?P<func>[^,]*), ?(?P<code>.*)$", re.DOTALL)
_LIBRARY = ("site-packages", "dist-packages", "/lib/python", "\\lib\\python", "<frozen")


def _frame_key(frame: str) -> Tuple[str, ...]:
    match = _FRAME.match(frame)
    if not match:
        return (frame,)
    path = match["path"]
    if any(marker in path for marker in _LIBRARY):
        return (os.path.basename(path), match["func"])
    return (os.path.basename(path), match["func"], match["code"].strip())


def _is_launcher(frame: str) -> bool:
    match = _FRAME.match(frame)
    return bool(match) and (os.path.basename(match["path"]) == "runpy.py" or match["path"].startswith("<frozen runpy"))


def _call_site(stack: List[str]) -> str:
    """The innermost frame outside libraries: where the user's code asked for random numbers."""
    for frame in reversed(stack):
        match = _FRAME.match(frame)
        if match and not any(marker in match["path"] for marker in _LIBRARY):
            return f"{os.path.basename(match['path'])}:{match['line']} {match['func']}: {match['code'].strip()}"
    return stack[-1] if stack else ""


def _grouped(entries: List[Dict[str, Any]]) -> Dict[Tuple, Dict[str, Any]]:
    out: Dict[Tuple, Dict[str, Any]] = {}
    for entry in entries:
        stack = [f for f in entry.get("stack", []) if not _is_launcher(str(f))]
        key = tuple(_frame_key(str(f)) for f in stack)
        merged = out.setdefault(key, {"count": 0, "stack": stack, "seeds": []})
        merged["count"] += int(entry.get("count", 0))
        merged["seeds"].extend(entry.get("seeds", []))
    return out


def compare_random(bench: Dict[int, Dict[str, Any]], cmp: Dict[int, Dict[str, Any]]) -> ItemResult:
    rows = []
    for rank in sorted(set(bench) | set(cmp)):
        b_rank, c_rank = bench.get(rank), cmp.get(rank)
        for op in sorted(set(b_rank or {}) | set(c_rank or {})):
            b_group = _grouped((b_rank or {}).get(op, []))
            c_group = _grouped((c_rank or {}).get(op, []))
            for key in list(b_group) + [k for k in c_group if k not in b_group]:
                rows.append(_row(op, rank, b_group.get(key), c_group.get(key)))
    note = ""
    only = sorted(set(bench) ^ set(cmp))
    if only:
        note = f"ranks {only} collected in one pack only"
    return ItemResult("random", rows, note=note, note_level=ERROR if note else PASS)


def _row(op: str, rank: int, b: Any, c: Any) -> Tuple[Any, ...]:
    b_count, c_count = (b or {}).get("count", 0), (c or {}).get("count", 0)
    b_seeds, c_seeds = (b or {}).get("seeds", []), (c or {}).get("seeds", [])
    same = b is not None and c is not None and b_count == c_count and b_seeds == c_seeds
    stack = (b or c)["stack"]
    return (op, rank, _call_site(stack), b_count, c_count, _seeds(b_seeds), _seeds(c_seeds),
            PASS if same else ERROR, "\n".join(b["stack"]) if b else "no match stack",
            "\n".join(c["stack"]) if c else "no match stack")


def _seeds(seeds: List[Any]) -> str:
    if not seeds:
        return ""
    text = ", ".join(str(s) for s in seeds[:20])
    return text + (f", ... ({len(seeds)} in all)" if len(seeds) > 20 else "")
