"""APIs whose inf/nan is expected and must not be reported as the start of an overflow.

Uninitialised memory (``empty``) may hold any bit pattern; the buffers that a receiving
collective overwrites (``recv``, ``all_gather``...) may hold garbage before the call. The
positions below are the tensor arguments to ignore, by top-level index or keyword name.

The user's ignore list (``"ignore"`` of the ``overflow_check`` block, ``overflow_check --ignore``)
adds APIs whose inf/nan outputs are expected in their model, as masks are: ``Torch.log`` (any
inf/nan) or ``Torch.log:-inf`` (that value only; T5's relative-position bucket takes log(0) and
discards it on every healthy run). These rules are the ones every reader of overflows applies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, Optional, Tuple

from msprobe.schema import EntryName, SchemaError
from msprobe.schema.dump import stat_value


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


def literal_non_finite(entry: Dict[str, Any]) -> bool:
    """An input given as a plain number that is itself inf/nan (``masked_fill(mask, -inf)``, ``full(.., inf)``):
    the caller asked for inf/nan, so inf/nan outputs are expected (attention masks)."""
    return any(_literal_in(entry.get(role)) for role in ("input_args", "input_kwargs", "input"))


def _literal_in(value: Any) -> bool:
    if isinstance(value, list):
        return any(_literal_in(item) for item in value)
    if not isinstance(value, dict):
        return False
    if value.get("type") in ("float", "int") and "value" in value:
        number = stat_value(value["value"])
        return number is not None and not math.isfinite(number)
    return any(_literal_in(item) for key, item in value.items() if isinstance(item, (dict, list)))


def has_nan(record: Dict[str, Any]) -> bool:
    """NaN (not just inf) in the tensor: max/min propagate NaN in torch, MindSpore and numpy."""
    return any(_is_nan(record.get(key)) for key in ("Max", "Min"))


def _is_nan(value: Any) -> bool:
    number = stat_value(value)
    return number is not None and math.isnan(number)


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


IGNORE_VALUES = ("inf", "-inf", "nan")
IGNORE_FORM = "expected API[:inf|-inf|nan] (an entry name without its call count and direction), e.g. Torch.log:-inf"


@dataclass(frozen=True)
class UserIgnore:
    """One item of the user's ignore list."""

    api: str
    """``Prefix.name`` of the entries it covers (``Torch.log`` covers ``Torch.log.0.forward``...)."""
    value: Optional[str] = None
    """``inf``, ``-inf`` or ``nan``: only outputs holding that value and no other; None: any inf/nan."""

    def __str__(self) -> str:
        return self.api if self.value is None else f"{self.api}:{self.value}"

    def covers(self, parsed: Optional[EntryName], record: Dict[str, Any]) -> bool:
        """Whether this non-finite output record of the entry ``parsed`` is expected under this item."""
        if parsed is None or parsed.kind != "api" or f"{parsed.prefix}.{parsed.name}" != self.api:
            return False
        return self.value is None or non_finite_values(record) == {self.value}


def parse_ignore(items: Iterable[Any], source: str, field_name: str) -> Tuple[UserIgnore, ...]:
    """The ignore list from a config block or the command line; a malformed item is a one-line error naming it."""
    out = []
    for index, item in enumerate(items):
        api, _, value = item.partition(":") if isinstance(item, str) else ("", "", "")
        prefix, dot, name = api.partition(".")
        if not (prefix and dot and name) or any(c.isspace() for c in api) or (value and value not in IGNORE_VALUES):
            raise SchemaError(source, f"{field_name}[{index}]", IGNORE_FORM, item, has_got=True)
        out.append(UserIgnore(api, value or None))
    return tuple(out)


def user_ignore_for(ignores: Tuple[UserIgnore, ...], parsed: Optional[EntryName],
                    record: Dict[str, Any]) -> Optional[UserIgnore]:
    return next((item for item in ignores if item.covers(parsed, record)), None)


def non_finite_values(record: Dict[str, Any]) -> set:
    """Which of inf, -inf, nan the tensor holds, from its statistics (NaN hides whether infs are there too)."""
    if has_nan(record):
        return {"nan"}
    values = set()
    if stat_value(record.get("Max")) == math.inf:
        values.add("inf")
    if stat_value(record.get("Min")) == -math.inf:
        values.add("-inf")
    return values
