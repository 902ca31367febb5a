"""Tensor files of a ``tensor`` dump (``<rank dir>/dump_tensor_data/<data_name>``): one reader decides for every
tool which files are acceptable and how they are read.

A file is accepted when ``data_name`` is a plain file name, the file is a regular, non-empty file, not cut short
(a ``.pt`` ends with its zip end record and its pickle names only a tensor's parts, a ``.npy`` starts with its
magic), and it lies inside the rank
directory once symbolic links are resolved: a dump from someone else's machine must not make a tool read
``/etc/shadow``. Reading: ``.npy`` through numpy without pickles, ``.pt`` through ``torch.load(...,
weights_only=True)`` (only tensors, no code). The checks import no framework; numpy and torch are imported
only when a file is read, torch only for ``.pt`` files.
"""
from __future__ import annotations

import os
import pickletools
import re
import zipfile
from pathlib import Path
from typing import Any, Optional

from .errors import MsprobeError, PathLike
from .jsonio import path_kind

_ZIP_END = b"PK\x05\x06"
_NPY_MAGIC = b"\x93NUMPY"
_TAIL = 1 << 16
"""Bytes read from a ``.pt`` file's end to find its zip end record (the record and its comment fit)."""
SUFFIXES = (".pt", ".npy")
_MAX_PICKLE = 1 << 20
"""Bytes of a ``.pt`` file's pickle looked at: a tensor's is a few hundred."""
_TENSOR_GLOBALS = re.compile(r"^(torch\._utils _rebuild_(tensor_v[23]|parameter)|collections OrderedDict|"
                             r"torch [A-Za-z0-9]*Storage|torch\.storage UntypedStorage|torch (u?int\d*|float\d*|bfloat16|half|double|bool|long|"
                             r"short|complex\d+|cfloat|cdouble|chalf|float8_\w+))$")
"""The pickle globals of ``torch.save(tensor)``: what ``torch.load(weights_only=True)`` reads as a tensor."""


class TensorFileError(MsprobeError):
    """A tensor file that is missing, outside its dump, or cannot be read: one line naming the file."""

    def __init__(self, path: PathLike, problem: str) -> None:
        self.path, self.problem = str(path), problem
        super().__init__(" ".join(f"{path}: {problem}".splitlines()))

    def __reduce__(self):  # crosses process pools (compare -j) as itself
        return type(self), (self.path, self.problem)


def tensor_file_problem(tensor_dir: PathLike, name: str) -> Optional[str]:
    """What is wrong with the tensor file ``name`` of ``tensor_dir``, or None: not a file name, missing, not a
    regular file, outside the rank directory (through a symbolic link), empty, unreadable, or cut short.
    Reads at most 64 KiB of it."""
    if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
        return "not a file name"
    path = Path(tensor_dir) / name
    try:
        kind = path_kind(path)
    except MsprobeError:
        return "cannot be looked at"
    if kind != "file":
        return kind if kind == "missing" else f"a {kind}, not a file"
    if not _inside(path, Path(tensor_dir).parent):
        return f"resolves outside the dump (to {os.path.realpath(path)})"
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            if size == 0:
                return "empty"
            if name.endswith(".npy"):
                return None if handle.read(len(_NPY_MAGIC)) == _NPY_MAGIC else "not a .npy file"
            handle.seek(max(size - _TAIL, 0))
            if _ZIP_END not in handle.read():
                return "cut short (no zip end record)"
            return _pickle_problem(handle)
    except OSError as exc:
        return f"unreadable ({exc.strerror})"


def _pickle_problem(handle) -> Optional[str]:
    """What in a ``.pt`` file's pickle is not a tensor's (a global such as ``posix system``), without running
    it: every tool then accepts the files compare's ``torch.load(weights_only=True)`` reads, and no other."""
    try:
        with zipfile.ZipFile(handle) as archive:
            pickles = [info for info in archive.infolist() if info.filename.endswith("/data.pkl")]
            if len(pickles) != 1 or pickles[0].file_size > _MAX_PICKLE:
                return "cannot be read as a tensor (not one torch.save archive of a tensor)"
            data = archive.read(pickles[0])
        for index, (opcode, arg, _) in enumerate(pickletools.genops(data)):
            if opcode.name == "STACK_GLOBAL" or (opcode.name in ("GLOBAL", "INST") and
                                                 not _TENSOR_GLOBALS.match(str(arg))):
                named = f" {str(arg).replace(' ', '.')}" if arg else ""
                return f"cannot be read as a tensor (its pickle calls{named or ' a global'}, not a tensor's parts)"
            first = index == 1 or (index == 0 and opcode.name != "PROTO")
            if first and not (opcode.name == "GLOBAL" and str(arg).startswith("torch._utils _rebuild_")):
                return "cannot be read as a tensor (it holds something other than one tensor)"
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        return f"cannot be read as a tensor ({type(exc).__name__})"
    return None


def _inside(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def locate(tensor_dir: PathLike, name: str) -> Path:
    """The checked path of tensor file ``name``; TensorFileError saying what is wrong otherwise."""
    problem = tensor_file_problem(tensor_dir, name)
    if problem:
        raise TensorFileError(Path(tensor_dir) / str(name), problem)
    return Path(tensor_dir) / name


def load_tensor(tensor_dir: PathLike, name: str) -> Any:
    """Tensor file ``name`` as a numpy array (bfloat16 as float32: numpy has none), checked by ``locate``;
    TensorFileError for anything that is not one readable tensor (a pickle holding code, a truncated file)."""
    path = locate(tensor_dir, name)
    try:
        if name.endswith(".npy"):
            import numpy as np

            return np.load(path, allow_pickle=False)
        if name.endswith(".pt"):
            return _load_pt(path)
    except TensorFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - an untrusted file may make the loader raise anything
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TensorFileError(path, f"cannot be read as a tensor ({type(exc).__name__}: {first[:200]})") from None
    raise TensorFileError(path, f"unsupported tensor file type (expected one of {', '.join(SUFFIXES)})")


def _load_pt(path: Path) -> Any:
    try:
        import torch
    except ImportError:
        raise TensorFileError(path, "reading .pt files needs torch, which is not installed") from None
    value = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(value, torch.Tensor):
        raise TensorFileError(path, f"holds a {type(value).__name__}, not a tensor")
    value = value.detach()
    if value.dtype == torch.bfloat16:
        value = value.float()
    elif value.dtype == torch.bool:
        value = value.to(torch.float64)
    return value.numpy()
