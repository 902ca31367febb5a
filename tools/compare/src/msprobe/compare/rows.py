"""One dump entry as the rows of a compare table, named as msprobe names them.

``Functional.linear.0.forward`` gives ``...forward.input.0``, ``...input.weight`` (a keyword),
``...input.1.0`` (first element of a list argument), ``...output.0``, ``...parameters.weight``;
``Module.fc.Linear.parameters_grad`` gives ``...parameters_grad.weight``. Values that are no tensor
(ints, floats, strings, None) get a row too, as in msprobe: the value stands for every statistic.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from msprobe.schema import is_tensor_record

INPUT, OUTPUT, PARAMETERS = "input", "output", "parameters"
_ROLES = (("input_args", INPUT), ("input_kwargs", INPUT), ("input", INPUT), ("output", OUTPUT),
          ("parameters", PARAMETERS))
MAX_DEPTH = 32
"""Nesting of argument lists a dump may hold before the rest of it is left out (bounds recursion)."""


class Row:
    """One tensor (or plain value) of an entry: ``name``, ``kind`` (``input``, ``output`` or ``parameters``;
    parameter gradients count as outputs), ``record`` (the tensor record, ``{"type": ..., "value": ...}``,
    or ``{}`` for None) and ``is_tensor``."""

    __slots__ = ("name", "kind", "record", "is_tensor")

    def __init__(self, name: str, kind: str, record: Dict[str, Any]) -> None:
        self.name, self.kind, self.record = name, kind, record
        self.is_tensor = is_tensor_record(record)


def entry_rows(entry_name: str, entry: Dict[str, Any], params_grad: bool = False) -> List[Row]:
    """The rows of one entry, in msprobe's order (inputs, outputs, parameters)."""
    rows: List[Row] = []
    if params_grad:
        for param, value in entry.items():
            _walk(value, f"{entry_name}.{param}", OUTPUT, rows, 0, single=True)
        return rows
    for role, kind in _ROLES:
        value = entry.get(role)
        if value is None:
            continue
        base = f"{entry_name}.{kind}"
        if role == "input_kwargs" or role == "parameters":
            if isinstance(value, dict) and not _is_leaf(value):
                for key, item in value.items():
                    _walk(item, f"{base}.{key}", kind, rows, 1)
            continue
        if isinstance(value, list):
            for index, item in enumerate(value):
                _walk(item, f"{base}.{index}", kind, rows, 1)
        else:
            _walk(value, f"{base}.0", kind, rows, 1)
    return rows


def _is_leaf(value: Any) -> bool:
    return is_tensor_record(value) or (isinstance(value, dict) and "type" in value and "value" in value)


def _walk(value: Any, name: str, kind: str, rows: List[Row], depth: int, single: bool = False) -> None:
    if depth > MAX_DEPTH:
        return
    if value is None:
        rows.append(Row(name, kind, {}))
    elif isinstance(value, dict):
        if _is_leaf(value) or not value:
            rows.append(Row(name, kind, value))
        else:
            for key, item in value.items():
                _walk(item, f"{name}.{key}", kind, rows, depth + 1)
    elif isinstance(value, list):
        if single and len(value) == 1:
            _walk(value[0], name, kind, rows, depth + 1)
            return
        for index, item in enumerate(value):
            _walk(item, f"{name}.{index}", kind, rows, depth + 1)


def plain_value(record: Dict[str, Any]) -> Tuple[str, Optional[Any]]:
    """(dtype column text, value) of a row that is no tensor: msprobe writes ``<class 'int'>``."""
    if not record:
        return "N/A", None
    type_name = record.get("type")
    return f"<class '{type_name}'>", record.get("value")
