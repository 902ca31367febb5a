"""The dump's numeric kernels (``_kernels.c``, built with the package by ``setup.py``).

``stats(address, numel, kind) -> (max, min, sum, squares)``: a dense host block of floats in one pass
(256-bit vectors where the CPU has AVX2 and FMA; the same bits either way). ``int_stats(address, kind,
shape, strides) -> (max, min, sum, squares)`` or ``(any, all)``: integers and bools of any strides.
Framework-free: blocks are given by address, element count or shape, and kind.

Where the package was installed without them (no compiler at build time), :func:`loaded` returns None
and says once, on stderr, what is slower: callers reduce with numpy instead.

``crc32(buffer)``: the CRC-32 of ``md5`` records and of tensor files' zip entries: zlib-ng's (SIMD
folding; installed with the ``pytorch`` extra) where it is installed, else zlib's. Both compute the same
checksum; the speed of each is in tools/dump/README.md.
"""
from __future__ import annotations

import sys
from types import ModuleType
from typing import Optional

F32, BF16, F16, F64 = 0, 1, 2, 3
"""Element kinds of ``stats(address, numel, kind)``."""
I64, I32, I16, I8, U8, BOOL = 0, 1, 2, 3, 4, 5
"""Element kinds of ``int_stats(address, kind, shape, strides)``."""
MAX_DIMS = 16
"""The most dimensions ``int_stats`` walks."""

try:
    from . import _kernels as _module  # type: ignore[attr-defined]
except ImportError:
    _module = None
try:
    from zlib_ng.zlib_ng import crc32
except ImportError:
    from zlib import crc32
_warned = False


def loaded() -> Optional[ModuleType]:
    """The compiled kernels, or None (warned about once) where the package was built without them."""
    global _warned
    if _module is None and not _warned:
        _warned = True
        print("msprobe: warning: msprobe.dump._kernels is not built (msprobe-dump was installed without a C "
              "compiler): statistics of CPU tensors are computed with numpy, several times slower per tensor "
              "and with other rounding; install a wheel of msprobe-dump to get them", file=sys.stderr)
    return _module
