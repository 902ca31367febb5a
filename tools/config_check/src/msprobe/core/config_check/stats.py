"""Tensor statistics, parameters, ranks and hooks, per framework (imported lazily by ``fmk``)."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator, Tuple

from msprobe.schema.errors import MsprobeError
from msprobe.schema.kinds import FRAMEWORKS

from .formats import STAT_KEYS


def check_framework(fmk: str) -> str:
    if fmk not in FRAMEWORKS:
        raise MsprobeError(f"config_check: fmk must be 'pytorch' or 'mindspore', got {fmk!r}")
    return fmk


def env_rank() -> int:
    for name in ("RANK", "RANK_ID"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


class TorchAdapter:
    """Statistics in float32 (float64 for float64 and integer tensors), one host sync per tensor."""

    def __init__(self) -> None:
        import torch
        self.torch = torch

    def is_module(self, obj: Any) -> bool:
        return isinstance(obj, self.torch.nn.Module)

    def is_tensor(self, obj: Any) -> bool:
        return isinstance(obj, self.torch.Tensor)

    def features(self, tensor: Any) -> Dict[str, Any]:
        torch = self.torch
        with torch.no_grad():
            x = tensor.detach()
            if x.numel() == 0 or x.device.type == "meta":
                return {"numel": int(x.numel())}
            if x.is_complex():
                x = x.abs()
            if not x.is_floating_point():
                x = x.double()
            elif x.dtype not in (torch.float32, torch.float64):
                x = x.float()
            values = torch.stack([x.max(), x.min(), x.mean(), torch.linalg.vector_norm(x)]).tolist()
        return dict(zip(STAT_KEYS, values))

    def named_parameters(self, model: Any) -> Iterator[Tuple[str, Any]]:
        return model.named_parameters()

    def rank(self) -> int:
        dist = self.torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
        return env_rank()

    def world_size(self) -> int:
        dist = self.torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_world_size()
        return int(os.environ.get("WORLD_SIZE", "1") or 1)

    def pre_forward_hook(self, model: Any, hook: Callable[[Any, Any], None]) -> Any:
        return model.register_forward_pre_hook(lambda module, args, kwargs: hook(args, kwargs), with_kwargs=True)


class MindSporeAdapter:
    """Statistics through numpy in float32 (float64 for float64 and integer tensors)."""

    def __init__(self) -> None:
        import mindspore
        import numpy
        self.ms = mindspore
        self.np = numpy

    def is_module(self, obj: Any) -> bool:
        return isinstance(obj, self.ms.nn.Cell)

    def is_tensor(self, obj: Any) -> bool:
        return isinstance(obj, self.ms.Tensor)

    def features(self, tensor: Any) -> Dict[str, Any]:
        ms, np = self.ms, self.np
        if tensor.size == 0:
            return {"numel": 0}
        if tensor.dtype in (ms.float16, ms.bfloat16):
            tensor = tensor.astype(ms.float32)
        x = tensor.asnumpy()
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float64)
        values = (float(x.max()), float(x.min()), float(x.mean()), float(np.linalg.norm(x.ravel())))
        return dict(zip(STAT_KEYS, values))

    def named_parameters(self, model: Any) -> Iterator[Tuple[str, Any]]:
        return model.parameters_and_names()

    def rank(self) -> int:
        try:
            from mindspore.communication import get_rank
            return int(get_rank())
        except Exception:  # communication not initialised: single process or before init
            return env_rank()

    def world_size(self) -> int:
        try:
            from mindspore.communication import get_group_size
            return int(get_group_size())
        except Exception:
            return int(os.environ.get("WORLD_SIZE", os.environ.get("RANK_SIZE", "1")) or 1)

    def pre_forward_hook(self, model: Any, hook: Callable[[Any, Any], None]) -> Any:
        return model.register_forward_pre_hook(lambda cell, args, kwargs: hook(args, kwargs), with_kwargs=True)


def adapter(fmk: str):
    check_framework(fmk)
    return TorchAdapter() if fmk == "pytorch" else MindSporeAdapter()


def describe(value: Any, adapter_: Any, depth: int = 0) -> Any:
    """Model inputs -> statistics of each tensor, nested like the inputs (msprobe's dataset.json)."""
    if depth > 32:
        return ""
    if adapter_.is_tensor(value):
        return adapter_.features(value)
    if isinstance(value, (list, tuple)):
        return {str(i): describe(item, adapter_, depth + 1) for i, item in enumerate(value)}
    if isinstance(value, dict):
        return {str(k): describe(item, adapter_, depth + 1) for k, item in value.items()}
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, str):
        return value[:200]
    return ""
