"""seed_all for MindSpore (doc 29 §2.2): seeds, deterministic mode, dropout removal."""
from __future__ import annotations

import os
import random
from typing import Any, Callable, List, Tuple

import mindspore as ms
import numpy as np

from msprobe.schema import MsprobeError

_MAX_SEED = 2 ** 32 - 1


def seed_all(seed: int = 1234, mode: bool = False, rm_dropout: bool = True) -> None:
    """Fix random, numpy, MindSpore and string/bytes hashing seeds; ``mode=True`` turns on deterministic
    kernels and deterministic reduction collectives (AllReduce, ReduceScatter, Reduce); ``rm_dropout``
    makes ops.Dropout/Dropout2D/Dropout3D, mint.nn.Dropout and mint.nn.functional.dropout (and the
    MSAdapter / MindTorch Dropout, when imported) identity for instances created after this call."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MAX_SEED:
        raise MsprobeError(f"seed_all(): argument 'seed': expected an integer in [0, {_MAX_SEED}], got {seed!r}")
    for arg, value in (("mode", mode), ("rm_dropout", rm_dropout)):
        if not isinstance(value, bool):
            raise MsprobeError(f"seed_all(): argument '{arg}': expected True or False, got {value!r}")
    os.environ["PYTHONHASHSEED"] = str(seed)  # str/bytes/datetime hashing of processes started from here
    random.seed(seed)
    np.random.seed(seed)
    ms.set_seed(seed)
    if mode:
        _deterministic()
    if rm_dropout:
        remove_dropout()


def _deterministic() -> None:
    os.environ["HCCL_DETERMINISTIC"] = "true"  # reduction collectives on Ascend
    os.environ["TE_PARALLEL_COMPILER"] = "1"
    setter = getattr(ms, "set_deterministic", None) or getattr(getattr(ms, "runtime", None), "set_deterministic", None)
    if setter is not None:
        setter(True)
    else:  # MindSpore 2.0 .. 2.4
        ms.set_context(deterministic="ON")


def _dropout_targets() -> List[Tuple[Any, str, Callable[[Any], Any]]]:
    """(owner, attribute, patch factory) of every dropout this MindSpore (and torch adapter) has."""
    from mindspore import ops
    targets: List[Tuple[Any, str, Callable[[Any], Any]]] = []
    for name in ("Dropout", "Dropout2D", "Dropout3D"):
        if hasattr(ops, name):
            targets.append((getattr(ops, name), "__init__", lambda init: _init_with(init, "keep_prob", 1.0)))
    try:
        from mindspore import mint
        if hasattr(mint, "nn") and hasattr(mint.nn, "Dropout"):
            targets.append((mint.nn.Dropout, "__init__", lambda init: _init_with(init, "p", 0.0)))
        if hasattr(mint, "nn") and hasattr(mint.nn, "functional") and hasattr(mint.nn.functional, "dropout"):
            targets.append((mint.nn.functional, "dropout", lambda fn: _call_with(fn, "p", 0.0)))
    except ImportError:  # MindSpore 2.0 has no mint
        pass
    from ._compat import detect_torch_adapter
    torch = detect_torch_adapter()
    if torch is not None:
        targets.append((torch.torch.nn.Dropout, "__init__", lambda init: _init_with(init, "p", 0.0)))
        targets.append((torch.functional, "dropout", lambda fn: _call_with(fn, "p", 0.0)))
    return targets


def remove_dropout() -> None:
    for owner, attr, factory in _dropout_targets():
        current = getattr(owner, attr)
        if getattr(current, "__msprobe_no_dropout__", False):
            continue
        patched = factory(current)
        patched.__msprobe_no_dropout__ = True
        setattr(owner, attr, patched)


def _init_with(init: Callable[..., Any], key: str, value: float) -> Callable[..., Any]:
    import inspect
    params = [p for p in inspect.signature(init).parameters if p != "self"]
    position = params.index(key) if key in params else None

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        args = list(args)
        if position is not None and len(args) > position:
            args[position] = value
        else:
            kwargs[key] = value
        init(self, *args, **kwargs)
    return __init__


def _call_with(fn: Callable[..., Any], key: str, value: float) -> Callable[..., Any]:
    import functools
    import inspect
    params = list(inspect.signature(fn).parameters)
    position = params.index(key) if key in params else None

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        args = list(args)
        if position is not None and len(args) > position:
            args[position] = value
        else:
            kwargs[key] = value
        return fn(*args, **kwargs)
    return call
