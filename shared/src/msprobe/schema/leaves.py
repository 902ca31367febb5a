"""One dump entry as its leaves: every tensor record and plain value, named as msprobe's compare names its rows.

``Functional.linear.0.forward`` gives ``input.0``, ``input.weight`` (a keyword), ``input.1.0`` (first element
of a list argument), ``output.0``, ``parameters.weight``; ``Module.fc.Linear.parameters_grad`` gives ``weight``
(a one-element list of a gradient is the gradient). Values that are no tensor (``{"type": "int", "value": 1}``)
and None (``{}``) are leaves too: msprobe gives them a row. The one walk compare's rows, the statistics index
and dump.json's record check all take, so a tensor record is found, named and checked the same way by each.
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .names import try_parse_entry

INPUT, OUTPUT, PARAMETERS = "input", "output", "parameters"
ROLES = (("input_args", INPUT), ("input_kwargs", INPUT), ("input", INPUT), ("output", OUTPUT),
         ("parameters", PARAMETERS))
_ROLE_KEYS = frozenset(role for role, _ in ROLES)
TENSOR_TYPES = ("torch.Tensor", "mindspore.Tensor", "numpy.ndarray", "mindspore._c_expression.Tensor",
                "torch.nn.parameter.Parameter", "mindspore.Parameter", "mindspore.common.parameter.Parameter")
MAX_DEPTH = 32
"""Nesting of argument lists past which compare shows no row (records deeper are still found and checked)."""


class Leaf(NamedTuple):
    """One leaf of an entry."""

    label: Optional[str]
    """The row's name after the entry's (``input.0``); None for a record compare shows no row for (under a key
    that is no argument role, or nested past :data:`MAX_DEPTH`)."""
    kind: Optional[str]
    """``input``, ``output`` or ``parameters`` (a parameter gradient counts as an output); None with the label."""
    trail: Tuple
    """Keys and list positions from the entry down to the leaf (``("input_args", 0)``)."""
    value: Dict[str, Any]
    """The tensor record, the plain value's record, or ``{}`` for None."""
    tensor: bool
    """``value`` is a tensor record (:func:`is_tensor_record`, asked once, by the walk)."""


def is_params_grad(entry_name: str) -> bool:
    """``{Module|Cell}.{path}.{Class}.parameters_grad[.{call}]``: its keys are parameter names, not roles."""
    if "parameters_grad" not in entry_name:  # the cheap test first: the walk asks it of every entry
        return False
    parsed = try_parse_entry(entry_name)
    return parsed is not None and parsed.kind == "parameters_grad"


def is_tensor_record(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str) and (
        value["type"] in TENSOR_TYPES or value["type"].endswith("Tensor") or "dtype" in value and "shape" in value)


def _is_plain(value: Dict[str, Any]) -> bool:
    """A plain value's record (``type`` and ``value``)."""
    return "type" in value and "value" in value


def _is_leaf(value: Any) -> bool:
    return is_tensor_record(value) or (isinstance(value, dict) and _is_plain(value))


def entry_leaves(entry_name: str, entry: Dict[str, Any]) -> List[Leaf]:
    """The leaves of one entry: its argument roles in msprobe's row order (inputs, outputs, parameters), then
    anything else the entry holds (label None). Raises RecursionError past Python's nesting limit."""
    out: List[Leaf] = []
    if is_tensor_record(entry):  # no entry is a bare record; found all the same, so that it is checked
        out.append(Leaf(None, None, (), entry, True))
        return out
    if is_params_grad(entry_name):
        for param, value in entry.items():
            _walk(value, str(param), OUTPUT, (param,), out, 0, single=True)
        return out
    for role, kind in ROLES:
        value = entry.get(role)
        if value is None:
            continue
        if role == "input_kwargs" or role == "parameters":
            if isinstance(value, dict) and not _is_leaf(value):
                for key, item in value.items():
                    _walk(item, f"{kind}.{key}", kind, (role, key), out, 1)
            else:
                _walk(value, None, None, (role,), out, 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                _walk(item, f"{kind}.{index}", kind, (role, index), out, 1)
        else:
            _walk(value, f"{kind}.0", kind, (role,), out, 1)
    if len(entry) > len(_ROLE_KEYS & entry.keys()):
        for key, value in entry.items():
            if key not in _ROLE_KEYS:
                _walk(value, None, None, (key,), out, 1)
    return out


def _walk(value: Any, label: Optional[str], kind: Optional[str], trail: Tuple, out: List[Leaf], depth: int,
          single: bool = False) -> None:
    if depth > MAX_DEPTH and label is not None:
        label = kind = None  # shown no more, still found
    if value is None:
        if label is not None:
            out.append(Leaf(label, kind, trail, {}, False))
    elif isinstance(value, dict):
        tensor = is_tensor_record(value)
        if tensor or not value or _is_plain(value):
            if label is not None or tensor:  # unshown: only records, to be checked
                out.append(Leaf(label, kind, trail, value, tensor))
        else:
            for key, item in value.items():
                _walk(item, None if label is None else f"{label}.{key}", kind, trail + (key,), out, depth + 1)
    elif isinstance(value, list):
        if single and len(value) == 1:
            _walk(value[0], label, kind, trail + (0,), out, depth + 1)
            return
        for index, item in enumerate(value):
            _walk(item, None if label is None else f"{label}.{index}", kind, trail + (index,), out, depth + 1)


def plain_value(record: Dict[str, Any]) -> Tuple[str, Optional[Any]]:
    """(dtype column text, value) of a leaf that is no tensor: msprobe writes ``<class 'int'>``."""
    if not record:
        return "N/A", None
    type_name = record.get("type")
    return f"<class '{type_name}'>", record.get("value")
