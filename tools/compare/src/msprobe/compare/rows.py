"""The rows of a compare table: one per leaf of an entry (``msprobe.schema.leaves``), named as msprobe names them.

``Functional.linear.0.forward`` gives ``...forward.input.0``, ``...input.weight`` (a keyword),
``...input.1.0`` (first element of a list argument), ``...output.0``, ``...parameters.weight``;
``Module.fc.Linear.parameters_grad`` gives ``...parameters_grad.weight``. Values that are no tensor (ints,
floats, strings, None) get a row too, as in msprobe: the value stands for every statistic.
"""
from __future__ import annotations

from typing import Any, Dict, List

from msprobe.schema.leaves import INPUT, OUTPUT, PARAMETERS, entry_leaves, plain_value

__all__ = ["INPUT", "OUTPUT", "PARAMETERS", "Row", "entry_rows", "plain_value"]


class Row:
    """One tensor (or plain value) of an entry: ``name``, ``kind`` (``input``, ``output`` or ``parameters``;
    parameter gradients count as outputs), ``record`` (the tensor record, ``{"type": ..., "value": ...}``,
    or ``{}`` for None) and ``is_tensor``."""

    __slots__ = ("name", "kind", "record", "is_tensor")

    def __init__(self, name: str, kind: str, record: Dict[str, Any], is_tensor: bool) -> None:
        self.name, self.kind, self.record, self.is_tensor = name, kind, record, is_tensor


def entry_rows(entry_name: str, entry: Dict[str, Any]) -> List[Row]:
    """The rows of one entry of dump.json's ``data``, in msprobe's order (inputs, outputs, parameters)."""
    return [Row(f"{entry_name}.{leaf.label}", leaf.kind, leaf.value, leaf.tensor)
            for leaf in entry_leaves(entry_name, entry) if leaf.label is not None]
