"""Pairing the entries of two dumps: same name first, then the name mapping, then module structure.

1. An entry of the same name on both sides (same framework: nearly all of them).
2. APIs by mapped name (``mapping.NameMapping.api_key``) and direction, k-th with k-th in dump order.
3. Modules and parameter gradients by path (MindSpore attribute names mapped), direction and call.
4. Modules still unpaired by structure: k-th with k-th of the same direction and depth in dump order
   (class names differ across frameworks: ``Dense`` / ``Linear``).
"""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Deque, Dict, Hashable, Iterable, List, Optional, Tuple

from msprobe.schema import try_parse_entry

from .mapping import NameMapping

Pairs = List[Tuple[str, Optional[str]]]


def pair_entries(target: Iterable[str], golden: Iterable[str], mapping: NameMapping) -> Tuple[Pairs, List[str]]:
    """``[(target entry, golden entry or None)]`` in target order, and the golden entries left unpaired."""
    target, golden = list(target), list(golden)
    if target == golden:  # one run's layout on both sides: every entry is its own partner
        return list(zip(target, target)), []
    golden_set = set(golden)
    paired: Dict[str, str] = {t: t for t in target if t in golden_set}
    if len(paired) < len(target):
        for key_of in (lambda n: _api_key(n, mapping), lambda n: _module_key(n, mapping), _structure_key):
            _pair_by(key_of, target, golden, paired)
    used = set(paired.values())
    return list(zip(target, map(paired.get, target))), [g for g in golden if g not in used]


def _pair_by(key_of, target: List[str], golden: List[str], paired: Dict[str, str]) -> None:
    used = set(paired.values())
    queues: Dict[Hashable, Deque[str]] = defaultdict(deque)
    for name in golden:
        if name not in used:
            key = key_of(name)
            if key is not None:
                queues[key].append(name)
    if not queues:
        return
    for name in target:
        if name in paired:
            continue
        key = key_of(name)
        queue = queues.get(key) if key is not None else None
        if queue:
            paired[name] = queue.popleft()


def _api_key(name: str, mapping: NameMapping) -> Optional[Hashable]:
    return mapping.api_key(name)


def _module_key(name: str, mapping: NameMapping) -> Optional[Hashable]:
    parsed = try_parse_entry(name)
    if parsed is None or not parsed.is_module:
        return None
    return parsed.kind, mapping.module_path(parsed.name), parsed.direction, parsed.call or 0


def _structure_key(name: str) -> Optional[Hashable]:
    parsed = try_parse_entry(name)
    if parsed is None or not parsed.is_module:
        return None
    return parsed.kind, parsed.name.count("."), parsed.direction
