"""What was computed from a tensor's contents during a dumped window (statistics, snapshots), by contents.

One API's output is the next one's input, and views (``transpose``, ``view``, ``reshape``, the identity
views of backward gating) hold the same elements as the tensor they view, so their statistics are the
same. A tensor whose elements form one dense block of its root's storage is keyed by (root, offset,
numel, dtype, version): a view family shares one version counter, so a write through any member changes
the key. With ``permuted=False`` (byte-order-sensitive values: CRC-32) only contiguous tensors share a
key; with ``by_contents=False`` (shape-sensitive values: snapshots) every tensor is keyed by itself and
its version, as are tensors that are not dense; inference tensors (no version counter) are never
cached. Entries hold weak references: the cache never keeps an activation alive, and a key whose
tensor died is never served. Not seen: a write through ``.data`` (a tensor with a version counter of
its own) to contents cached in the same dumped window.
"""
from __future__ import annotations

import weakref
from typing import Any, Dict, Optional, Tuple

import torch

from .internals import root, version

def dense(t: torch.Tensor) -> bool:
    """True when the elements fill one block of memory in some order (a transpose of a contiguous tensor)."""
    expected = 1
    for stride, size in sorted(zip(t.stride(), t.shape)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


class ContentCache:
    """A bounded map from a tensor's contents to a value computed from them."""

    def __init__(self, limit: int, by_contents: bool = True, permuted: bool = True) -> None:
        self.limit = limit
        self._by_contents = by_contents
        self._permuted = permuted
        self.entries: Dict[Tuple, Tuple[Any, Any]] = {}
        """key -> (weak reference to the owner, value)"""

    def _key(self, t: torch.Tensor) -> Tuple[Optional[Tuple], torch.Tensor]:
        changes = version(t)
        if changes is None:  # an inference tensor: nothing tells a change, so no key
            return None, t
        if self._by_contents and (t.is_contiguous() or (self._permuted and dense(t))):
            owner = root(t)
            return (id(owner), t.storage_offset(), t.numel(), t.dtype, changes), owner
        return (id(t), -1, -1, t.dtype, changes), t

    def lookup(self, tensor: torch.Tensor) -> Tuple[Optional[Any], Optional[Tuple], Any]:
        """The value cached for the tensor's contents (None on a miss), with the key and owner for a
        ``store`` right after a miss."""
        key, owner = self._key(tensor)
        hit = self.entries.get(key) if key is not None else None
        if hit is not None and hit[0]() is owner:
            return hit[1], key, owner
        return None, key, owner

    def store(self, key: Optional[Tuple], owner: Any, value: Any) -> None:
        if key is None:
            return
        if len(self.entries) >= self.limit:
            self.entries.clear()
        self.entries[key] = (weakref.ref(owner), value)

    def __len__(self) -> int:
        return len(self.entries)

    def clear(self) -> None:
        self.entries.clear()

    def take(self) -> Dict[Any, Tuple[Any, Any]]:
        """Empty the cache and return what it held, for another thread to drop."""
        held, self.entries = self.entries, {}
        return held
