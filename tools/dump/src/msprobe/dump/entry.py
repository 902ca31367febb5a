"""Entry assembly: Python values → dump.json records, with statistics left for the pipeline to fill."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from msprobe.schema.config import SummaryMode
from msprobe.schema.dump import STAT_KEYS

from .adapter import Adapter


NULL_STATS = dict.fromkeys(STAT_KEYS)


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


PendingEntry = Tuple[str, Dict[str, Any], List[PendingTensor], Optional[List[str]]]
"""(entry name, entry, its tensors waiting for statistics, stack frames), as the engine assembles them."""


def pending_handles(entries: List[PendingEntry]) -> List[Any]:
    """The statistics handles still waiting in ``entries``, in order: one ``stats_to_host`` batch."""
    return [t.handle for _, _, tensors, _ in entries for t in tensors if t.handle is not None]


def fill_statistics(entries: List[PendingEntry], values: List[Dict[str, Any]]) -> None:
    """Put ``values`` (the host statistics of :func:`pending_handles`, in its order) into the records."""
    position = 0
    for _, _, tensors, _ in entries:
        for tensor in tensors:
            if tensor.handle is not None:
                tensor.record.update(values[position])
                tensor.handle = None
                position += 1


class Encoder:
    """Turns arguments, outputs and gradients into records; collects the tensors met on the way."""

    def __init__(self, adapter: Adapter, precision: str, summary_mode: SummaryMode, snapshots: bool) -> None:
        self.adapter = adapter
        self.precision = precision
        self.md5 = summary_mode == "md5"
        self.xor = summary_mode == "xor"
        self.snapshots = snapshots

    def encode(self, value: Any, role: str, position: Tuple, out: List[PendingTensor], depth: int = 0) -> Any:
        adapter = self.adapter
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

    def tensor(self, tensor: Any, role: str, position: Tuple, out: List[PendingTensor]) -> Dict[str, Any]:
        """The record from the adapter's meta, statistics handle and snapshot."""
        adapter = self.adapter
        type_name, dtype, shape, requires_grad = adapter.tensor_meta(tensor)
        record = {"type": type_name, "dtype": dtype, "shape": shape}
        if self.xor:  # msprobe 26.x: the checksum alone, before requires_grad
            handle = adapter.tensor_xor(tensor)
            ready = adapter.ready_stats(handle)
            record["md5"] = ready["md5"] if ready is not None else None
        else:
            handle = adapter.tensor_stats(tensor, self.precision, self.md5)
            ready = adapter.ready_stats(handle)
            record.update(NULL_STATS if ready is None else ready)
        if ready is not None:  # host values: the record is final now, nothing waits for a batch
            handle = None
        record["requires_grad"] = requires_grad
        if self.md5 and "md5" in record:  # after requires_grad, as the format orders them
            record["md5"] = record.pop("md5")
        snapshot = self._snapshot(tensor, record) if self.snapshots else None
        if handle is not None or snapshot is not None:
            out.append(PendingTensor(record, handle, snapshot, role, position))
        return record

    def _snapshot(self, tensor: Any, record: Dict[str, Any]) -> Any:
        """The tensor's copy for its file; None, said in the record, where it has no data to save."""
        note = self.adapter.unsaved_note(tensor)
        if note is None:
            return self.adapter.snapshot(tensor)
        record["data_name"] = None
        record["note"] = note
        return None

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
