"""Read the structure of a ``torch.save`` file without torch and without reading tensor data.

A ``.pt`` file is a zip archive whose ``data.pkl`` names every tensor's storage (``data/<key>``,
stored uncompressed). We unpickle ``data.pkl`` with an allow-list (the ``weights_only=True`` idea,
plus what Megatron pickles: ``argparse.Namespace``, its enums, numpy RNG state) and turn each tensor
into a :class:`TensorRef` (file, byte offset, dtype, shape, strides). Nothing else is executed: a
global outside the allow-list is refused, so a pickle that tries to run code fails with one line.
"""
from __future__ import annotations

import math
import argparse
import collections
import io
import pickle
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from msprobe.schema.errors import MsprobeError

# torch storage class / dtype name → numpy-style dtype string ("bf16" has no numpy dtype).
_DTYPES = {
    "float32": "f4", "float": "f4", "float64": "f8", "double": "f8", "float16": "f2", "half": "f2",
    "bfloat16": "bf16", "int64": "i8", "long": "i8", "int32": "i4", "int": "i4", "int16": "i2",
    "short": "i2", "int8": "i1", "uint8": "u1", "bool": "b1",
}
_STORAGES = {
    "FloatStorage": "f4", "DoubleStorage": "f8", "HalfStorage": "f2", "BFloat16Storage": "bf16",
    "LongStorage": "i8", "IntStorage": "i4", "ShortStorage": "i2", "CharStorage": "i1",
    "ByteStorage": "u1", "BoolStorage": "b1",
}
ITEMSIZE = {"f4": 4, "f8": 8, "f2": 2, "bf16": 2, "i8": 8, "i4": 4, "i2": 2, "i1": 1, "u1": 1, "b1": 1}
# Modules whose classes may appear as plain data (enums, config records); they become inert stubs.
_STUB_PREFIXES = ("megatron.", "mindspeed.", "torch.distributed.checkpoint.", "transformer_engine.",
                  "numpy", "enum", "_io", "io", "pathlib")


@dataclass(frozen=True)
class TensorRef:
    """Where one tensor's elements lie on disk (nothing is read until a block is requested)."""
    path: Path
    offset: int
    """Byte offset of element 0 of the tensor inside ``path``."""
    dtype: str
    shape: Tuple[int, ...]
    stride: Tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def contiguous(self) -> bool:
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.stride)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


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
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


def _rebuild_tensor(storage, storage_offset, size, stride, *_rest):
    path, base, dtype = storage
    return TensorRef(path, base + storage_offset * ITEMSIZE[dtype], dtype, tuple(size), tuple(stride))


def _rebuild_parameter(data, *_rest):
    return data


def _rebuild_from_type(func, _new_type, args, _state):
    return func(*args)


def _plain_dict(*_args: Any) -> dict:
    return {}


def _stub_class(module: str, name: str) -> type:
    return type(name, (Stub,), {"__module__": module})


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, path: Path, members: Dict[str, int], prefix: str) -> None:
        super().__init__(io.BytesIO(data))
        self.path, self.members, self.prefix = path, members, prefix

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return _rebuild_from_type
        if module == "torch" and name in _STORAGES:
            return _StorageType(_STORAGES[name])
        if module == "torch" and name in _DTYPES:
            return f"torch.{name}"
        if module == "torch" and name == "Size":
            return tuple
        if module == "torch" and name in ("strided", "contiguous_format", "device"):
            return name if name != "device" else str
        if (module, name) == ("torch.serialization", "_get_layout"):
            return str
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("collections", "defaultdict"):
            return _plain_dict  # its default factory is never called
        if (module, name) == ("argparse", "Namespace"):
            return argparse.Namespace
        if module == "builtins" and name in ("set", "frozenset", "slice", "complex"):
            return {"set": set, "frozenset": frozenset, "slice": slice, "complex": complex}[name]
        if (module, name) == ("_codecs", "encode") or module.startswith(_STUB_PREFIXES):
            return _stub_class(module, name)
        raise MsprobeError(f"{self.path}: refuses to unpickle '{module}.{name}' "
                           f"(not on the allow-list of checkpoint contents; the file may try to run code)")

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise MsprobeError(f"{self.path}: unexpected persistent id {pid!r:.60} in the pickle")
        storage_type, key = pid[1], str(pid[2])
        dtype = storage_type.dtype if isinstance(storage_type, _StorageType) else "u1"
        member = f"{self.prefix}data/{key}"
        if member not in self.members:
            raise MsprobeError(f"{self.path}: storage '{member}' named by the pickle is missing (truncated file?)")
        return (self.path, self.members[member], dtype)


class _Slice(io.RawIOBase):
    """A read-only window [start, start+length) of a file, for torch.save blobs inside .distcp files."""

    def __init__(self, handle, start: int, length: int) -> None:
        self.handle, self.start, self.length, self.pos = handle, start, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = {0: pos, 1: self.pos + pos, 2: self.length + pos}[whence]
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, buffer) -> int:
        n = max(0, min(len(buffer), self.length - self.pos))
        self.handle.seek(self.start + self.pos)
        got = self.handle.readinto(memoryview(buffer)[:n])
        self.pos += got
        return got


def load_pt(path: Path, start: int = 0, length: Optional[int] = None) -> Any:
    """The object tree of a torch.save file (or of the blob at [start, start+length)), tensors as TensorRef."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            window = _Slice(handle, start, size - start if length is None else length)
            with zipfile.ZipFile(window) as archive:
                pkl = [n for n in archive.namelist() if n.endswith("data.pkl")]
                if not pkl:
                    raise MsprobeError(f"{path}: not a torch.save archive (no data.pkl)")
                prefix = pkl[0][: -len("data.pkl")]
                members = {info.filename: start + _data_offset(window, info, path) for info in archive.infolist()
                           if info.filename.startswith(prefix + "data/")}
                data = archive.read(pkl[0])
    except zipfile.BadZipFile as exc:
        raise MsprobeError(f"{path}: not a readable torch checkpoint ({exc}; truncated or legacy format?)") from None
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return _Unpickler(data, path, members, prefix).load()
    except MsprobeError:
        raise
    except Exception as exc:  # malformed pickle: report it as bad input, never a traceback
        raise MsprobeError(f"{path}: corrupt pickle in data.pkl ({type(exc).__name__}: {exc})") from None


def _data_offset(window: _Slice, info: zipfile.ZipInfo, path: Path) -> int:
    if info.compress_type != zipfile.ZIP_STORED:
        raise MsprobeError(f"{path}: member {info.filename} is compressed; expected torch.save's stored entries")
    window.seek(info.header_offset)
    header = window.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise MsprobeError(f"{path}: broken zip entry {info.filename} (truncated file?)")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    offset = info.header_offset + 30 + name_len + extra_len
    if offset + info.file_size > window.length:
        raise MsprobeError(f"{path}: entry {info.filename} runs past the end of the file (truncated)")
    return offset


def unpickle_bytes(data: bytes, path: Path) -> Any:
    """A plain pickle (no tensors), e.g. a distributed checkpoint's ``.metadata``, through the allow-list."""
    try:
        return _Unpickler(data, Path(path), {}, "").load()
    except MsprobeError:
        raise
    except Exception as exc:
        raise MsprobeError(f"{path}: corrupt pickle ({type(exc).__name__}: {exc})") from None
