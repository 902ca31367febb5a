"""C helpers for the dump's hottest per-call work (``_native.c``), built on first use.

``stats(address, numel, kind) -> (max, min, sum, squares)``: a dense block of floats in one pass (in
256-bit vectors where the CPU has AVX2 and FMA, ``has_avx2``; the same bits either way: squares are
summed with fused multiply-adds, which the other loop takes from the C library, ~8x slower where an x86
CPU has no FMA, but vectorised where the ISA has them, as on Arm). On a
small model most of a dumped step's statistics time is call overhead: numpy needs five calls per tensor
(view, max, min and two dots, ~10 us on a 64-element tensor), this one (~1 us).
``stack_key(frame, skip, classify, limit) -> (key, codes)``: the caller's stack as (id(code), lasti)
pairs, ~1 us where walking the frames in Python costs ~8 us (``msprobe.dump.stack``).
``crc32(address, nbytes)``: zlib's CRC-32, folded with carry-less multiplies where the CPU has them.
``torch_record(...)`` (``_record.c``): a CPU tensor's whole dump.json record (float, integer or bool),
statistics cache included, ~3x faster than the Python path it stands in for (``TorchAdapter.record_maker``).
``stack_anchor(frame, skip, classify)``: where that stack starts (the first frame not skipped).
``encode_args`` / ``encode_outputs`` (``_walk.c``): ``Encoder.args`` / ``Encoder.outputs`` in C.
``json_bytes(value)`` / ``json_line(value)`` / ``journal_entry(fd, lines, name, value)`` (``_json.c``):
``json.dumps(value, ensure_ascii=False)``'s bytes for plain values, floats included (repr's digits by
exact 128-bit arithmetic), ~4x faster than the json module: an entry is encoded once, for its journal
line and for dump.json.
``record_plain_call(context, key, func, args, kwargs)`` (``_call.c``): an API call made without autograd
(an optimizer's), run and recorded in one call (``DumpEngine.plain_context``);
``record_gradient(hooks, engine, call, side, path, grad)`` (``_backward.c``): a recorded call's gradient
hook (``gates.py``); ``module_pre`` / ``module_post`` (``_module.c``): a module's forward hooks with its
gates (``Hooks._module_hooks``); ``record_grad_call`` (``_grad_call.c``, reached through
``mode_dispatch``, ``_mode.c``): an API call made with autograd, gated and recorded; ``same_members``
(``_module.c``): whether a model's children and parameters are still those a window hooked. The extension is
compiled on first use with ``$CC`` or the C compiler Python was built with, into a cache directory
(``$MSPROBE_CACHE_DIR``, else ``$XDG_CACHE_HOME/msprobe``, else ``~/.cache/msprobe``), once per source,
Python and platform (compiling one removes those of this Python not loaded for 30 days); with no
compiler, no Python headers or ``MSPROBE_NATIVE=0``, :func:`helpers` returns None and the callers use
their Python paths. Framework-free: blocks are given by address, element count
and kind.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import List, Optional

F32, BF16, F16, F64 = 0, 1, 2, 3
"""Element kinds of ``stats(address, numel, kind)``."""
I64, I32, I16, I8, U8, BOOL = 0, 1, 2, 3, 4, 5
"""Element kinds of ``int_stats(address, kind, shape, strides)``."""

_SOURCE = Path(__file__).with_name("_native.c")
_FLAGS = ["-O3", "-shared", "-fPIC", "-fno-strict-aliasing"]
_loaded: Optional[ModuleType] = None
_tried = False
_UNUSED_FOR = 30 * 86400
"""Seconds after which a build not loaded since (an older version's, another source's) is removed"""
_DAY = 86400
_PARTIAL = "_native-partial-"


def cache_dir() -> Path:
    explicit = os.environ.get("MSPROBE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "msprobe"


def helpers() -> Optional[ModuleType]:
    """The compiled module (the functions above), built on the first call; None where it cannot be."""
    global _loaded, _tried
    if not _tried:
        _tried = True
        if os.environ.get("MSPROBE_NATIVE", "1") != "0":
            try:
                _loaded = _load()
            except Exception:  # no compiler, no headers, a read-only cache: the Python paths do the work
                _loaded = None
    return _loaded


def included(main: bytes) -> List[Path]:
    """The files ``_native.c`` (its text: ``main``) includes: part of the build's identity, as its own text is."""
    return [_SOURCE.with_name(name.decode()) for name in re.findall(rb'^#include "(_\w+\.c)"', main, re.MULTILINE)]


def _load() -> Optional[ModuleType]:
    main = _SOURCE.read_bytes()
    source = b"".join([main] + [path.read_bytes() for path in included(main)])
    suffix = _ext_suffix()
    identity = b"\0".join([source, sys.version.encode(), platform.machine().encode(), " ".join(_FLAGS).encode()])
    target = cache_dir() / f"_native-{hashlib.sha256(identity).hexdigest()[:16]}{suffix}"
    if not target.exists() and not _compile(target):
        return None
    _mark_used(target)
    spec = importlib.util.spec_from_file_location("_native", target)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _compile(target: Path) -> bool:
    include = sysconfig.get_paths().get("include")
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if not include or not (Path(include) / "Python.h").exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    # ranks compiling at once each write their own file; the rename makes the first complete one visible
    handle, partial = tempfile.mkstemp(prefix=_PARTIAL, suffix=target.suffix, dir=target.parent)
    os.close(handle)
    try:
        done = subprocess.run(compiler + _FLAGS + ["-I", include, str(_SOURCE), "-o", partial, "-lm"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
        if done.returncode != 0:
            return False
        os.replace(partial, target)
        _prune(target)
        return True
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _mark_used(target: Path) -> None:
    """A build's modification time says when it was last loaded (refreshed at most once a day)."""
    try:
        if time.time() - target.stat().st_mtime > _DAY:
            os.utime(target)
    except OSError:  # a read-only cache: never pruned by us either
        pass


def _prune(target: Path) -> None:
    """Builds for this Python and platform that nobody loaded for ``_UNUSED_FOR`` (an upgrade leaves its
    predecessor's behind) and partial files of compilers killed more than a day ago: only names this
    module makes (``$MSPROBE_CACHE_DIR`` may be a directory shared with others)."""
    now = time.time()
    for pattern, age in (("_native-" + "?" * 16 + _ext_suffix(), _UNUSED_FOR), (_PARTIAL + "*", _DAY)):
        for path in target.parent.glob(pattern):
            try:
                if path != target and now - path.stat().st_mtime > age:
                    path.unlink()
            except OSError:  # removed by another process meanwhile, or not ours to remove
                pass
