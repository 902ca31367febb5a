"""The PyTorch adapter: tensors, statistics and files for the engine; hooks live in ``hooks.py``."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from msprobe.dump.adapter import Adapter

from . import stats
from .api_list import ApiTable, load_api_list
from .ptfile import PtWriter


_DTYPE_NAMES: Dict[Any, str] = {}


class TorchAdapter(Adapter):
    framework = "pytorch"
    tensor_suffix = ".pt"
    module_prefix = "Module"

    def __init__(self, api_list_path: Optional[str] = None, record_nested: bool = False) -> None:
        self.table = ApiTable(load_api_list(api_list_path))
        self.record_nested = record_nested
        self.stats_batch = 1 if not torch.cuda.is_available() else 64
        self._hooks = None
        self._stat_cache: Dict[int, Tuple[Any, int, Any]] = {}
        self._snap_cache: Dict[int, Tuple[Any, int, Any]] = {}
        self._pt_writer = PtWriter()  # used by the background writer thread only

    # ----- tensors -----------------------------------------------------------------------------
    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor)

    def tensor_meta(self, tensor: torch.Tensor) -> Tuple[str, str, List[int], bool]:
        dtype = tensor.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is None:
            name = _DTYPE_NAMES[dtype] = str(dtype)
        return "torch.Tensor", name, list(tensor.shape), tensor.requires_grad

    def tensor_stats(self, tensor: torch.Tensor, precision: str, md5: bool) -> Any:
        # One API's output is usually the next one's input: reuse its statistics while the tensor
        # object is alive and unchanged (same version counter). The cache holds the tensor, so its id
        # cannot be reused by another tensor while cached.
        key = id(tensor)
        hit = self._stat_cache.get(key)
        version = tensor._version
        if hit is not None and hit[0] is tensor and hit[1] == version:
            return hit[2]
        handle = stats.reduce(tensor, precision, md5)
        if len(self._stat_cache) >= 16:  # reuse is almost always immediate; do not hold activations long
            self._stat_cache.clear()
        self._stat_cache[key] = (tensor, version, handle)
        return handle

    def alias(self, view: torch.Tensor, original: torch.Tensor) -> None:
        """``view`` is an identity view of ``original`` (backward gating): same statistics and snapshot."""
        for cache in (self._stat_cache, self._snap_cache):
            hit = cache.get(id(original))
            if hit is not None and hit[0] is original:
                cache[id(view)] = (view, view._version, hit[2])

    def forget(self) -> None:
        """End of a dumped window: release the tensors the caches hold."""
        self._stat_cache.clear()
        self._snap_cache.clear()

    def stats_to_host(self, handles: Sequence[Any]) -> List[Dict[str, Any]]:
        return stats.to_host(handles)

    def snapshot(self, tensor: torch.Tensor) -> Any:
        # the same unchanged tensor object gets the same snapshot: the writer links instead of re-saving
        key = id(tensor)
        hit = self._snap_cache.get(key)
        version = tensor._version
        if hit is not None and hit[0] is tensor and hit[1] == version:
            return hit[2]
        snap = self._take_snapshot(tensor)
        if len(self._snap_cache) >= 16:
            self._snap_cache.clear()
        self._snap_cache[key] = (tensor, version, snap)
        return snap

    def _take_snapshot(self, tensor: torch.Tensor) -> Any:
        t = tensor.detach()
        if t.device.type == "cpu":
            return t.clone()
        copy = t.to("cpu", non_blocking=True)
        event = torch.cuda.Event() if t.device.type == "cuda" else None
        if event is not None:
            event.record()
        return (copy, event)

    def save_tensor(self, snapshot: Any, path: str) -> None:
        if isinstance(snapshot, tuple):
            snapshot, event = snapshot
            if event is not None:
                event.synchronize()
        self._pt_writer.save(snapshot, path)

    def describe_value(self, value: Any) -> Optional[Dict[str, Any]]:
        if isinstance(value, torch.dtype):
            return {"type": "torch.dtype", "value": str(value)}
        if isinstance(value, torch.device):
            return {"type": "torch.device", "value": str(value)}
        if isinstance(value, torch.Size):
            return {"type": "torch.Size", "value": list(value)}
        if isinstance(value, torch.memory_format):
            return {"type": "torch.memory_format", "value": str(value)}
        return None

    def rank(self) -> Optional[int]:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
        return None

    # ----- hooks -------------------------------------------------------------------------------
    def install(self, engine: Any, models: Sequence[Any]) -> None:
        from .hooks import Hooks

        if self._hooks is None:
            self._hooks = Hooks(engine, self.table, self.record_nested)
        self._hooks.install(models)

    def uninstall_forward(self) -> None:
        if self._hooks is not None:
            self._hooks.uninstall_forward()
        self.forget()

    def uninstall_all(self) -> None:
        if self._hooks is not None:
            self._hooks.uninstall_all()
        self.forget()
