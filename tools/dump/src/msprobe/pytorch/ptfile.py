"""Fast ``.pt`` tensor files, byte-identical in layout to ``torch.save`` (``torch.load`` reads them as is).

``torch.save`` spends much of its time per file in pickling and zip bookkeeping, all holding the GIL, which the
training thread then waits for. A dumped step writes hundreds of tensors of a few (dtype, shape) kinds:
the first tensor of a kind is saved with ``torch.save`` and its archive kept as a template; later
tensors of that kind get the template's bytes with their own storage bytes spliced in and the CRC-32
of the storage entry patched (the CRC and file writes release the GIL). A template whose layout is not
the expected one (several storages, compression) is never used: such kinds keep ``torch.save``.
"""
from __future__ import annotations

import io
import struct
import zipfile
from typing import Any, Dict, List, Optional, Tuple

import torch

from msprobe.dump.kernels import crc32
from msprobe.schema.jsonio import write_bytes_atomic

_MAX_KINDS = 512


class _Layout:
    __slots__ = ("head", "tail", "head_crc", "tail_crc")

    def __init__(self, head: bytes, tail: bytes, head_crc: List[int], tail_crc: List[int]) -> None:
        self.head, self.tail, self.head_crc, self.tail_crc = head, tail, head_crc, tail_crc


def storage_bytes(tensor: torch.Tensor) -> Any:
    """The tensor's whole storage as a uint8 numpy array (what ``torch.save`` writes as ``data/0``)."""
    raw = torch.empty(0, dtype=torch.uint8).set_(tensor.untyped_storage())
    return raw.numpy()


class PtWriter:
    """Writes snapshots (detached CPU tensors) as ``.pt`` files; one instance per writer thread."""

    def __init__(self) -> None:
        self._layouts: Dict[Tuple, Optional[_Layout]] = {}

    def save(self, tensor: torch.Tensor, path: str) -> None:
        if tensor.device.type != "cpu" or tensor.requires_grad or type(tensor) is not torch.Tensor:
            _torch_save(tensor, path)
            return
        raw = storage_bytes(tensor)
        key = (tensor.dtype, tuple(tensor.shape), tensor.stride(), tensor.storage_offset(), raw.nbytes)
        if key in self._layouts:
            layout = self._layouts[key]
            if layout is None:
                _torch_save(tensor, path)
                return
            crc = struct.pack("<I", crc32(raw))
            head, tail = _patched(layout.head, layout.head_crc, crc), _patched(layout.tail, layout.tail_crc, crc)
            # one write call: a single copy beats three syscalls
            write_bytes_atomic(path, b"".join((head, raw.data, tail)), durable=False)
            return
        data = _torch_save(tensor, path)
        if len(self._layouts) >= _MAX_KINDS:
            self._layouts.clear()
        self._layouts[key] = _layout(data, raw)


def _patched(part: bytes, positions: List[int], crc: bytes) -> Any:
    if not positions:
        return part
    out = bytearray(part)
    for position in positions:
        out[position:position + 4] = crc
    return out


def _torch_save(tensor: torch.Tensor, path: str) -> bytes:
    # serialise in memory, then one write: torch.save straight to a file issues many small writes
    buffer = io.BytesIO()
    torch.save(tensor, buffer)
    data = buffer.getvalue()
    write_bytes_atomic(path, data, durable=False)
    return data


def _layout(data: bytes, raw: Any) -> Optional[_Layout]:
    """Where the storage bytes and every copy of their CRC-32 lie in ``torch.save``'s archive; None when
    the archive is not one uncompressed storage entry holding exactly ``raw``."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        storages = [i for i in archive.infolist() if "/data/" in i.filename and not i.filename.endswith("/")]
        if len(storages) != 1 or not storages[0].filename.endswith("/data/0"):
            return None
        info = storages[0]
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != raw.nbytes:
            return None
        start = info.header_offset
        if data[start:start + 4] != b"PK\x03\x04":
            return None
        name_len, extra_len = struct.unpack_from("<HH", data, start + 26)
        begin = start + 30 + name_len + extra_len
        end = begin + raw.nbytes
        if data[begin:end] != raw.tobytes():
            return None
        crc = struct.pack("<I", info.CRC)
        head, tail = data[:begin], data[end:]
        head_crc = _find_all(head, crc, start, begin)
        # the data descriptor right after the data, and the central directory
        tail_crc = _find_all(tail, crc, 0, min(len(tail), 24))
        name = info.filename.encode("utf-8")
        record = tail.find(b"PK\x01\x02", archive.start_dir - end)
        while record >= 0 and tail[record + 46:record + 46 + len(name)] != name:
            record = tail.find(b"PK\x01\x02", record + 4)
        if record < 0 or tail[record + 16:record + 20] != crc:
            return None
        tail_crc.append(record + 16)
        return _Layout(head, tail, head_crc, sorted(set(tail_crc)))
    except (zipfile.BadZipFile, struct.error, ValueError, OSError):
        return None


def _find_all(data: bytes, needle: bytes, start: int, stop: int) -> List[int]:
    found = []
    position = data.find(needle, start, stop)
    while position >= 0:
        found.append(position)
        position = data.find(needle, position + 1, stop)
    return found
