"""The allow-list unpickler of checkpoint pickles: tensors become :class:`TensorRef`, nothing runs.

It follows the ``weights_only=True`` idea, plus what Megatron pickles (``argparse.Namespace``, its
enums and config records, numpy RNG state) as inert stubs. Tensor kinds torch can save but this tool
does not compare (sparse, nested, quantized, subclasses) are named in the error, so a user is never
told that a plain checkpoint "may try to run code".
"""
from __future__ import annotations

import argparse
import collections
import pickle
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from msprobe.schema.errors import MsprobeError

from .tensorref import ITEMSIZE, STORAGES, TORCH_DTYPES, TensorRef

# Modules whose classes may appear as plain data (enums, config records); they become inert stubs.
_STUB_PREFIXES = ("megatron.", "mindspeed.", "torch.distributed.checkpoint.", "transformer_engine.",
                  "numpy", "enum", "_io", "io", "pathlib")
# torch rebuild functions of tensors that have no plain (file, offset, shape) layout.
_UNSUPPORTED = {
    "_rebuild_sparse_tensor": "a sparse tensor", "_rebuild_nested_tensor": "a nested tensor",
    "_rebuild_meta_tensor_no_storage": "a meta tensor (no data)",
    "_rebuild_wrapper_subclass": "a tensor subclass (e.g. DTensor)",
    "_rebuild_device_tensor_from_numpy": "a tensor saved from numpy on a device",
    "_rebuild_device_tensor_from_cpu_tensor": "a tensor saved from a CPU tensor on a device",
}
_TORCH_NAMES = {"strided": "strided", "contiguous_format": "contiguous_format", "preserve_format": "preserve_format",
                "per_tensor_affine": "per_tensor_affine", "per_channel_affine": "per_channel_affine"}
_MAX_DIMS = 64


class Stub:
    """Inert stand-in for an allow-listed data class: keeps its arguments and state, runs nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots) as pickled for __slots__ classes
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self.state = state


class _StorageType:
    def __init__(self, dtype: Optional[str]) -> None:
        self.dtype = dtype
        """Element type of a typed storage; None for ``UntypedStorage`` (the tensor names its dtype)."""


def _stub_class(module: str, name: str) -> type:
    return type(name, (Stub,), {"__module__": module})


def _plain_dict(*_args: Any) -> dict:
    return {}


def _rebuild_parameter(data, *_rest):
    return data


def _rebuild_from_type(func, _new_type, args, _state):
    return func(*args)


class Unpickler(pickle.Unpickler):
    """Unpickles ``data.pkl`` (``members``: storage key → (byte offset, size)) or a plain pickle."""

    def __init__(self, stream, path: Path, members: Dict[str, Tuple[int, int]], prefix: str) -> None:
        super().__init__(stream)
        self.path, self.members, self.prefix = path, members, prefix

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils":
            found = self._torch_utils(name)
            if found is not None:
                return found
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return _rebuild_from_type
        if module == "torch" and name in STORAGES:
            return _StorageType(STORAGES[name])
        if (module, name) == ("torch.storage", "UntypedStorage"):
            return _StorageType(None)
        if module == "torch" and name in TORCH_DTYPES:
            return f"torch.{name}"
        if module == "torch" and name in _TORCH_NAMES:
            return _TORCH_NAMES[name]
        if module == "torch" and name == "Size":
            return tuple
        if (module, name) in (("torch", "device"), ("torch.serialization", "_get_layout")):
            return str
        plain = {("collections", "OrderedDict"): collections.OrderedDict, ("argparse", "Namespace"): argparse.Namespace,
                 ("collections", "defaultdict"): _plain_dict}  # a defaultdict's factory is never called
        if (module, name) in plain:
            return plain[(module, name)]
        if module == "builtins" and name in ("set", "frozenset", "slice", "complex"):
            return {"set": set, "frozenset": frozenset, "slice": slice, "complex": complex}[name]
        if (module, name) == ("_codecs", "encode") or module.startswith(_STUB_PREFIXES):
            return _stub_class(module, name)
        raise MsprobeError(f"{self.path}: refuses to unpickle '{module}.{name}' "
                           f"(not on the allow-list of checkpoint contents; the file may try to run code)")

    def _torch_utils(self, name: str) -> Any:
        if name in ("_rebuild_tensor_v2", "_rebuild_qtensor"):
            return self._rebuild_tensor
        if name == "_rebuild_tensor_v3":
            return self._rebuild_tensor_v3
        if name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if name in _UNSUPPORTED:
            what = _UNSUPPORTED[name]

            def refuse(*_args: Any) -> None:
                raise MsprobeError(f"{self.path}: holds {what}, which is not compared (only dense tensors are)")
            return refuse
        return None

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"):
            raise MsprobeError(f"{self.path}: unexpected persistent id {pid!r:.60} in the pickle")
        storage_type, key = pid[1], str(pid[2])
        dtype = storage_type.dtype if isinstance(storage_type, _StorageType) else "u1"
        member = f"{self.prefix}data/{key}"
        if member not in self.members:
            raise MsprobeError(f"{self.path}: storage '{member}' named by the pickle is missing (truncated file?)")
        offset, size = self.members[member]
        return (member, offset, size, dtype)

    def _rebuild_tensor(self, storage, storage_offset, size, stride, *_rest) -> TensorRef:
        return self._tensor(storage, storage[3], storage_offset, size, stride)

    def _rebuild_tensor_v3(self, storage, storage_offset, size, stride, _grad, _hooks, dtype, *_rest) -> TensorRef:
        code = TORCH_DTYPES.get(str(dtype).replace("torch.", "", 1))
        if code is None:
            raise MsprobeError(f"{self.path}: tensor in {storage[0]} has dtype {dtype}, which this tool cannot read")
        return self._tensor(storage, code, storage_offset, size, stride)

    def _tensor(self, storage, dtype: Optional[str], offset: Any, size: Any, stride: Any) -> TensorRef:
        member, base, nbytes, _stored = storage
        if dtype is None:
            raise MsprobeError(f"{self.path}: tensor in {member} names no dtype")
        shape, steps = _ints(size), _ints(stride)
        if shape is None or steps is None or len(shape) != len(steps) or len(shape) > _MAX_DIMS \
                or not isinstance(offset, int) or offset < 0:
            raise MsprobeError(f"{self.path}: tensor in {member} has an invalid shape {size!r:.80} / stride {stride!r:.80}")
        last = offset + sum((n - 1) * s for n, s in zip(shape, steps)) if all(shape) else -1
        if (last + 1) * ITEMSIZE[dtype] > nbytes:
            raise MsprobeError(f"{self.path}: tensor of shape {list(shape)} reaches past the end of {member} "
                               f"({nbytes} bytes)")
        return TensorRef(self.path, base + offset * ITEMSIZE[dtype], dtype, shape, steps)


def _ints(values: Any) -> Optional[Tuple[int, ...]]:
    if not isinstance(values, (tuple, list)) or not all(isinstance(v, int) and v >= 0 for v in values):
        return None
    return tuple(values)
