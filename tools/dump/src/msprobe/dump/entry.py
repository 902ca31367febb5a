"""Entry assembly: Python values → dump.json records, with statistics left for the pipeline to fill."""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import native
from .adapter import Adapter

STAT_KEYS = ("Max", "Min", "Mean", "Norm")


class PendingTensor:
    """A tensor record waiting for its statistics (``handle``; None once they are in the record) and, for
    task tensor, its file."""

    __slots__ = ("record", "handle", "snapshot", "role", "position")

    def __init__(self, record: Dict[str, Any], handle: Any, snapshot: Any, role: str, position: Tuple) -> None:
        self.record = record
        self.handle = handle
        self.snapshot = snapshot
        self.role = role
        self.position = position


class Encoder:
    """Turns arguments, outputs and gradients into records; collects the tensors met on the way."""

    def __init__(self, adapter: Adapter, precision: str, md5: bool, snapshots: bool) -> None:
        self.adapter = adapter
        self.precision = precision
        self.md5 = md5
        self.snapshots = snapshots
        # tensor files add their names to the records: only without them may entries share a record
        self.use_record_maker(adapter.record_maker(precision, md5, shared=not snapshots))

    def use_record_maker(self, whole: Optional[Callable[[Any], Optional[Dict[str, Any]]]]) -> None:
        """Make tensor records with ``whole`` (the adapter's ``record_maker``; None: the Python path)."""
        self._whole = whole
        # the tensors whose record _whole makes in one call (no snapshot to take with it)
        self._whole_type = self.adapter.tensor_type if whole is not None and not self.snapshots else None
        self.__dict__.pop("args", None)
        self.__dict__.pop("outputs", None)
        helpers = native.helpers()
        if self._whole_type is not None and helpers is not None:
            # the same records, walked in C: args(args, kwargs, out) and outputs(output, out); what the
            # walk does not know (slices, framework objects, tensors the record maker declines) comes back
            # to _after_walk() with its role, position and depth
            self.args = functools.partial(helpers.encode_args, whole, self._whole_type, self._after_walk)
            self.outputs = functools.partial(helpers.encode_outputs, whole, self._whole_type, self._after_walk)

    def walk_parts(self) -> Optional[Tuple[Callable, type, Callable]]:
        """(record maker, tensor type, fallback) that the C walk takes, or None where values are walked in
        Python (no helpers, no record maker, tensor files to take)."""
        if "args" not in self.__dict__:
            return None
        return self._whole, self._whole_type, self._after_walk

    def encode(self, value: Any, role: str, position: Tuple, out: List[PendingTensor], depth: int = 0) -> Any:
        adapter = self.adapter
        if self._whole_type is not None and isinstance(value, self._whole_type):
            record = self._whole(value)  # a gradient, a parameter: the whole record in one call
            return record if record is not None else self._tensor_by_parts(value, role, position, out)
        if adapter.is_tensor(value):
            return self.tensor(value, role, position, out)
        if value is None:
            return None
        if isinstance(value, bool):
            return {"type": "bool", "value": value}
        if isinstance(value, int):
            return {"type": "int", "value": value}
        if isinstance(value, float):
            return {"type": "float", "value": value}
        if isinstance(value, str):
            return {"type": "str", "value": value}
        if isinstance(value, (list, tuple)) and depth < 8:
            return [self.encode(v, role, position + (i,), out, depth + 1) for i, v in enumerate(value)]
        if isinstance(value, dict) and depth < 8:
            return {str(k): self.encode(v, role, position + (k,), out, depth + 1) for k, v in value.items()}
        if isinstance(value, slice):
            return {"type": "slice", "value": [_plain(value.start), _plain(value.stop), _plain(value.step)]}
        if value is Ellipsis:
            return {"type": "ellipsis", "value": "..."}
        described = adapter.describe_value(value)
        if described is not None:
            return described
        return {"type": type(value).__name__, "value": None}

    def _after_walk(self, value: Any, role: str, position: Tuple, out: List[PendingTensor], depth: int) -> Any:
        """What the C walk leaves to Python: a tensor the record maker declined (not asked again), or a
        value the walk does not know."""
        if isinstance(value, self._whole_type):
            return self._tensor_by_parts(value, role, position, out)
        return self.encode(value, role, position, out, depth)

    def tensor(self, tensor: Any, role: str, position: Tuple, out: List[PendingTensor]) -> Dict[str, Any]:
        record = self._whole(tensor) if self._whole is not None else None
        if record is None:
            return self._tensor_by_parts(tensor, role, position, out)
        if self.snapshots:
            out.append(PendingTensor(record, None, self.adapter.snapshot(tensor), role, position))
        return record

    def _tensor_by_parts(self, tensor: Any, role: str, position: Tuple, out: List[PendingTensor]) -> Dict[str, Any]:
        """The record from the adapter's meta, statistics handle and snapshot (the record maker's fallback)."""
        adapter = self.adapter
        type_name, dtype, shape, requires_grad = adapter.tensor_meta(tensor)
        handle = adapter.tensor_stats(tensor, self.precision, self.md5)
        ready = adapter.ready_stats(handle)
        if ready is None:
            record = {"type": type_name, "dtype": dtype, "shape": shape, "Max": None, "Min": None, "Mean": None,
                      "Norm": None, "requires_grad": requires_grad}
        else:  # host statistics: the record is final now, nothing waits for a batch
            record = {"type": type_name, "dtype": dtype, "shape": shape, "Max": ready["Max"], "Min": ready["Min"],
                      "Mean": ready["Mean"], "Norm": ready["Norm"], "requires_grad": requires_grad}
            if "md5" in ready:
                record["md5"] = ready["md5"]
            handle = None
        snapshot = adapter.snapshot(tensor) if self.snapshots else None
        if handle is not None or snapshot is not None:
            out.append(PendingTensor(record, handle, snapshot, role, position))
        return record

    def args(self, args: Tuple, kwargs: Optional[Dict[str, Any]], out: List[PendingTensor]) -> Dict[str, Any]:
        encoded_args = [self.encode(a, "input", (i,), out) for i, a in enumerate(args)]
        encoded_kwargs = {k: self.encode(v, k, (), out) for k, v in (kwargs or {}).items()}
        return {"input_args": encoded_args, "input_kwargs": encoded_kwargs}

    def outputs(self, output: Any, out: List[PendingTensor]) -> List[Any]:
        if isinstance(output, (list, tuple)):
            return [self.encode(o, "output", (i,), out) for i, o in enumerate(output)]
        return [self.encode(output, "output", (0,), out)]


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (int, float, str)) else str(value)


def place(slots: List[Any], path: Tuple[int, ...], record: Any) -> None:
    """Put a gradient record at its argument position (``(i,)`` or ``(i, j)`` inside a list argument)."""
    index = path[0]
    while len(slots) <= index:
        slots.append(None)
    if len(path) == 1:
        slots[index] = record
        return
    inner = slots[index] if isinstance(slots[index], list) else []
    slots[index] = inner
    place(inner, path[1:], record)
