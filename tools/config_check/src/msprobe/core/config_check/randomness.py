"""Random-number calls and their call sites: ``{api: [{count, stack, seeds?}]}`` per rank.

Patching is process-wide by nature (it replaces module attributes), so one recorder per process
is kept in ``_ACTIVE``; ``apply_patches`` called twice reuses it, ``remove_patches`` undoes it.
Only the outermost call is counted (``nn.init.kaiming_uniform_`` -> ``Tensor.uniform_`` once),
dropout-like calls only when they draw numbers (training and p > 0).
"""
from __future__ import annotations

import functools
import linecache
import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .stats import check_framework

_HERE = os.path.dirname(os.path.abspath(__file__))
_SEEDERS = ("seed", "manual_seed", "manual_seed_all", "set_seed", "default_rng")


class Recorder:
    """Counts calls per (api, call stack); remembers seed values given to seeding calls."""

    def __init__(self) -> None:
        self.stats: Dict[str, List[Dict[str, Any]]] = {}
        self._index: Dict[Tuple[str, Tuple[str, ...]], Dict[str, Any]] = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        self.version = 0
        self._undo: List[Tuple[Any, str, Any]] = []

    def record(self, api: str, seed: Any = None, has_seed: bool = False) -> None:
        stack = _stack(sys._getframe(2))
        with self._lock:
            entry = self._index.get((api, stack))
            if entry is None:
                entry = {"count": 0, "stack": list(stack)}
                self._index[(api, stack)] = entry
                self.stats.setdefault(api, []).append(entry)
            entry["count"] += 1
            if has_seed:
                entry.setdefault("seeds", []).append(_plain(seed))
            self.version += 1

    def wrap(self, owner: Any, name: str, api: str, when: Optional[Callable[..., bool]] = None) -> None:
        original = getattr(owner, name, None)
        if original is None or getattr(original, "_msprobe_random", False):
            return
        recorder = self
        seeding = name in _SEEDERS

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            local = recorder._local
            if getattr(local, "busy", False) or (when is not None and not when(*args, **kwargs)):
                return original(*args, **kwargs)
            local.busy = True
            try:
                label = api + (" (generator)" if kwargs.get("generator") is not None else "")
                seed = kwargs.get("seed", args[-1] if args else None)
                recorder.record(label, seed, has_seed=seeding and (bool(args) or "seed" in kwargs))
                return original(*args, **kwargs)
            finally:
                local.busy = False

        wrapper._msprobe_random = True  # type: ignore[attr-defined]
        try:
            setattr(owner, name, wrapper)
        except (AttributeError, TypeError):  # immutable C type: nothing to patch
            return
        self._undo.append((owner, name, original))

    def restore(self) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)
        self._undo.clear()

    def snapshot(self) -> Dict[str, List[Dict[str, Any]]]:
        with self._lock:
            return {api: [dict(e, stack=list(e["stack"])) for e in entries] for api, entries in self.stats.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return str(value)


def _stack(frame: Any) -> Tuple[str, ...]:
    """msprobe's frame format, outermost first, without this module's frames."""
    frames = []
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_HERE):
            path = os.path.abspath(code.co_filename)
            line = linecache.getline(code.co_filename, frame.f_lineno).strip()
            frames.append(f"File {path}, line {frame.f_lineno}, in {code.co_name}, {line}")
        frame = frame.f_back
    return tuple(reversed(frames))


def _training(position: int, default: bool = True) -> Callable[..., bool]:
    """dropout(input, p, training, ...): random only when training and p > 0."""
    def when(*args: Any, **kwargs: Any) -> bool:
        training = kwargs.get("training", args[position] if len(args) > position else default)
        p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
        return bool(training) and not (isinstance(p, (int, float)) and p == 0)
    return when


def _patch_common(rec: Recorder) -> None:
    import random
    import numpy as np
    for name in ("random", "randint", "randrange", "uniform", "choice", "choices", "shuffle", "sample",
                 "gauss", "normalvariate", "seed"):
        rec.wrap(random, name, f"random.{name}")
    for name in ("rand", "randn", "randint", "random", "random_sample", "choice", "shuffle", "permutation",
                 "normal", "uniform", "seed", "default_rng"):
        rec.wrap(np.random, name, f"np.random.{name}")


def _patch_torch(rec: Recorder) -> None:
    import torch
    import torch.nn.functional as F
    for name in ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal",
                 "bernoulli", "multinomial", "poisson", "binomial", "manual_seed", "seed"):
        rec.wrap(torch, name, f"torch.{name}")
    for name in ("manual_seed", "seed"):
        rec.wrap(torch.random, name, f"torch.random.{name}")
    for name in ("manual_seed", "manual_seed_all", "seed", "seed_all"):
        rec.wrap(torch.cuda, name, f"torch.cuda.{name}")
    for name in ("uniform_", "normal_", "bernoulli_", "bernoulli", "random_", "exponential_", "geometric_",
                 "log_normal_", "cauchy_", "multinomial"):
        rec.wrap(torch.Tensor, name, f"torch.Tensor.{name}")
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d"):
        rec.wrap(F, name, f"torch.nn.functional.{name}", when=_training(2))
    for name in ("alpha_dropout", "feature_alpha_dropout"):  # these default to training=False
        rec.wrap(F, name, f"torch.nn.functional.{name}", when=_training(2, default=False))
    rec.wrap(F, "rrelu", "torch.nn.functional.rrelu",
             when=lambda *a, **k: bool(k.get("training", a[3] if len(a) > 3 else False)))
    rec.wrap(F, "gumbel_softmax", "torch.nn.functional.gumbel_softmax")
    _patch_generator(rec, torch)


def _patch_generator(rec: Recorder, torch: Any) -> None:
    """torch.Generator is an immutable C type: replace the name by a subclass that records seeding."""
    base = torch.Generator
    if getattr(base, "_msprobe_random", False):
        return

    class Generator(base):  # type: ignore[misc, valid-type]
        _msprobe_random = True

    Generator.__module__, Generator.__qualname__ = "torch", "Generator"
    for name in ("manual_seed", "seed"):
        original = getattr(base, name)
        setattr(Generator, name, original)
        rec.wrap(Generator, name, f"torch.Generator.{name}")
    torch.Generator = Generator
    rec._undo.append((torch, "Generator", base))


def _patch_mindspore(rec: Recorder) -> None:
    import mindspore
    rec.wrap(mindspore, "set_seed", "mindspore.set_seed")
    for name in ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "uniform",
                 "normal", "standard_normal", "bernoulli", "multinomial", "gamma", "poisson", "shuffle",
                 "random_categorical", "random_gamma", "random_poisson"):
        rec.wrap(mindspore.ops, name, f"mindspore.ops.{name}")
    rec.wrap(mindspore.ops, "dropout", "mindspore.ops.dropout", when=_training(2))
    for name in ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal",
                 "bernoulli", "multinomial"):
        rec.wrap(mindspore.mint, name, f"mindspore.mint.{name}")
    init = sys.modules.get("mindspore.common.initializer")
    if init is not None:
        rec.wrap(init, "initializer", "mindspore.common.initializer.initializer")
    rec.wrap(mindspore.nn.Dropout, "construct", "mindspore.nn.Dropout", when=lambda self, *a, **k: self.training)


_ACTIVE: Dict[str, Recorder] = {}


def apply_patches(fmk: str = "pytorch") -> Recorder:
    check_framework(fmk)
    if "recorder" not in _ACTIVE:
        _ACTIVE["recorder"] = Recorder()
    rec = _ACTIVE["recorder"]
    if fmk not in _ACTIVE:
        _patch_common(rec)
        (_patch_torch if fmk == "pytorch" else _patch_mindspore)(rec)
        _ACTIVE[fmk] = rec
    return rec


def active() -> Optional[Recorder]:
    return _ACTIVE.get("recorder")


def remove_patches() -> None:
    rec = _ACTIVE.pop("recorder", None)
    _ACTIVE.clear()
    if rec is not None:
        rec.restore()
