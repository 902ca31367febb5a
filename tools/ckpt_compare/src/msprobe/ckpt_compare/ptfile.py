"""Read the structure of a ``torch.save`` file without torch and without reading tensor data.

A ``.pt`` file is a zip archive whose ``data.pkl`` names every tensor's storage (``data/<key>``,
stored uncompressed). ``data.pkl`` is streamed through the allow-list unpickler (``unpickle.py``)
under a size cap, after its declared size and compression ratio are checked, so a small file that
inflates to gigabytes is refused before anything is inflated. Each tensor becomes a
:class:`TensorRef` (file, byte offset, dtype, shape, strides).
"""
from __future__ import annotations

import io
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from msprobe.schema.errors import MsprobeError

from .unpickle import Unpickler


@dataclass(frozen=True)
class Limits:
    """Bounds on what one checkpoint file may make this tool read into memory."""
    pickle_bytes: int = 256 << 20
    """Largest ``data.pkl`` / ``.metadata`` read (Megatron's hold names, args and RNG state: a few MB)."""
    ratio: int = 100
    """Largest inflated / compressed size of a compressed member (torch.save stores them uncompressed)."""
    ratio_floor: int = 1 << 20
    """Members inflating to less than this are not held to ``ratio`` (tiny members compress well)."""


LIMITS = Limits()


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


class _Capped:
    """A stream the unpickler reads from, stopping with one line past ``limit`` bytes."""

    def __init__(self, stream, limit: int, where: str) -> None:
        self.stream, self.left, self.limit, self.where = stream, limit, limit, where

    def _take(self, got: int) -> None:
        self.left -= got
        if self.left < 0:
            raise MsprobeError(f"{self.where} is larger than {self.limit:,} bytes; refused "
                               f"(a checkpoint's pickle holds names and settings, not data)")

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(self.left + 1 if n is None or n < 0 else min(n, self.left + 1))
        self._take(len(data))
        return data

    def readinto(self, buffer) -> int:
        view = memoryview(buffer)
        got = self.stream.readinto(view[: self.left + 1])
        self._take(got)
        return got

    def readline(self, *_size: Any) -> bytes:
        data = self.stream.readline(self.left + 1)
        self._take(len(data))
        return data


def load_pt(path: Path, start: int = 0, length: Optional[int] = None) -> Any:
    """The object tree of a torch.save file (or of the blob at [start, start+length)), tensors as TensorRef."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            window = _Slice(handle, start, size - start if length is None else length)
            with zipfile.ZipFile(window) as archive:
                pkl = [info for info in archive.infolist() if info.filename.endswith("data.pkl")]
                if not pkl:
                    raise MsprobeError(f"{path}: not a torch.save archive (no data.pkl)")
                prefix = pkl[0].filename[: -len("data.pkl")]
                members = {info.filename: (start + _data_offset(window, info, path), info.file_size)
                           for info in archive.infolist() if info.filename.startswith(prefix + "data/")}
                _check_size(pkl[0], path)
                with archive.open(pkl[0]) as stream:
                    return _unpickle(_Capped(stream, LIMITS.pickle_bytes, f"{path}: {pkl[0].filename}"),
                                     path, members, prefix)
    except zipfile.BadZipFile as exc:
        raise MsprobeError(f"{path}: not a readable torch checkpoint ({exc}; truncated or legacy format?)") from None
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _check_size(info: zipfile.ZipInfo, path: Path) -> None:
    inflated, packed = info.file_size, max(info.compress_size, 1)
    if inflated > LIMITS.pickle_bytes:
        raise MsprobeError(f"{path}: {info.filename} declares {inflated:,} bytes (stored in {packed:,}); refused "
                           f"above {LIMITS.pickle_bytes:,} (a checkpoint's pickle holds names and settings)")
    if info.compress_type != zipfile.ZIP_STORED and inflated > LIMITS.ratio_floor and inflated > LIMITS.ratio * packed:
        raise MsprobeError(f"{path}: {info.filename} inflates {inflated // packed}:1 ({packed:,} -> {inflated:,} bytes); "
                           f"refused above {LIMITS.ratio}:1 (a compression bomb?)")


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


def _unpickle(stream, path: Path, members: Dict[str, Tuple[int, int]], prefix: str) -> Any:
    try:
        return Unpickler(stream, path, members, prefix).load()
    except MsprobeError:
        raise
    except zipfile.BadZipFile:
        raise
    except Exception as exc:  # malformed pickle: report it as bad input, never a traceback
        raise MsprobeError(f"{path}: corrupt pickle ({type(exc).__name__}: {str(exc)[:200]})") from None


def load_pickle(path: Path) -> Any:
    """A plain pickle file (no tensors), e.g. a distributed checkpoint's ``.metadata``, through the allow-list."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            return _unpickle(_Capped(handle, LIMITS.pickle_bytes, str(path)), path, {}, "")
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot read ({exc.strerror or exc})") from None
