"""APIs whose inf/nan is expected and must not be reported as the start of an overflow.

Uninitialised memory (``empty``) may hold any bit pattern; the buffers that a receiving
collective overwrites (``recv``, ``all_gather``...) may hold garbage before the call. The
positions below are the tensor arguments to ignore, by top-level index or keyword name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Optional, Tuple

from msprobe.schema import EntryName


@dataclass(frozen=True)
class IgnoreRule:
    """Which tensors of one API may legitimately hold inf/nan."""

    inputs: FrozenSet = field(default_factory=frozenset)
    """Top-level positional indices (int) or keyword names (str) of inputs to skip."""
    outputs: FrozenSet = field(default_factory=frozenset)
    """Top-level output indices to skip."""


_EMPTY = IgnoreRule(outputs=frozenset({0}))
_BUFFER = IgnoreRule(inputs=frozenset({0, "tensor", "output", "tensor_list", "output_tensor"}))

# Keyed by API name (the part between prefix and call count); the prefix must be one that creates tensors.
_CREATION_PREFIXES = ("Torch", "Tensor", "Mint", "Functional", "Primitive", "Aten")
_CREATION: Dict[str, IgnoreRule] = {name: _EMPTY for name in (
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided")}
_DISTRIBUTED: Dict[str, IgnoreRule] = {name: _BUFFER for name in (
    "recv", "irecv", "all_gather", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter",
    "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "scatter", "gather", "all_to_all",
    "all_to_all_single")}


def rule_for(parsed: Optional[EntryName]) -> Optional[IgnoreRule]:
    """The ignore rule of an entry, or None."""
    if parsed is None or parsed.kind != "api" or parsed.direction != "forward":
        return None
    if parsed.prefix == "Distributed":
        return _DISTRIBUTED.get(parsed.name)
    if parsed.prefix in _CREATION_PREFIXES:
        return _CREATION.get(parsed.name.rsplit(".", 1)[-1])
    return None


def ignored(rule: Optional[IgnoreRule], role: str, trail: Tuple) -> bool:
    """Whether the tensor at ``trail`` under ``role`` is covered by the rule."""
    if rule is None:
        return False
    head = trail[0] if trail else 0
    if role in ("input_args", "input"):
        return head in rule.inputs
    if role == "input_kwargs":
        return head in rule.inputs
    if role in ("output", "outputs"):
        return head in rule.outputs
    return False
