"""The PyTorch adapter: tensors, statistics and files for the engine; hooks live in ``hooks.py``."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from msprobe.dump.adapter import Adapter

from . import layouts, stats
from .api_list import ApiTable, load_api_list
from .content_cache import ContentCache
from .ptfile import PtWriter


_DTYPE_NAMES: Dict[Any, str] = {}
_STRIDED = torch.strided
_DISTRIBUTED = torch.distributed.is_available()
"""Whether this torch was built with torch.distributed: fixed for the process, so asked once"""


def _final(handle: stats.Handle) -> Optional[Dict[str, Any]]:
    """The record's statistics (with ``md5``) when they are all host values already, else None."""
    crc = handle.crc
    if crc is None or handle.ready is None:
        return handle.ready
    return dict(handle.ready, md5=crc) if isinstance(crc, str) else None  # else: an accelerator's copy


class TorchAdapter(Adapter):
    framework = "pytorch"
    tensor_suffix = ".pt"
    module_prefix = "Module"
    summary_modes = ("statistics", "md5", "xor")
    stats_batch = 64
    """Entries whose device statistics wait for one transfer (host statistics are final at once)"""

    def __init__(self, api_list_path: Optional[str] = None, record_nested: bool = False,
                 risk_level: str = "FOCUS", all_apis: bool = False) -> None:
        self.table = ApiTable(load_api_list(api_list_path, all_apis), risk_level)  # (api_list.py)
        self.record_nested = record_nested
        self._hooks = None
        self._stat_cache = ContentCache(4096)  # weak references: sized by bookkeeping, not by tensors
        self._crc_cache = ContentCache(4096, permuted=False)  # md5: CRC-32 follows the element order
        self._xor_cache = ContentCache(4096, permuted=False)  # xor: so do the 64-bit words
        # holds host copies: a few, for the output-is-next-input case; a view's file has the view's shape
        self._snap_cache = ContentCache(16, by_contents=False)
        self._pt_writer = PtWriter()  # used by the background writer thread only

    # ----- tensors -----------------------------------------------------------------------------
    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor)

    def tensor_meta(self, tensor: torch.Tensor) -> Tuple[str, str, List[int], bool]:
        dtype = tensor.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is None:
            name = _DTYPE_NAMES[dtype] = str(dtype)
        if tensor.layout is not _STRIDED or tensor.is_nested:  # (layouts.py)
            return layouts.meta(tensor, name)
        return "torch.Tensor", name, list(tensor.shape), tensor.requires_grad

    def tensor_stats(self, tensor: torch.Tensor, precision: str, md5: bool) -> Any:
        # one API's output is usually the next one's input, and views have their base's elements:
        # statistics are computed once per contents (content_cache.py). Final host statistics are cached
        # as their dict, others as their handle.
        if tensor.layout is not _STRIDED or tensor.is_nested:
            return self._unusual_stats(tensor, precision, md5)
        cache = self._crc_cache if md5 else self._stat_cache
        value, key, owner = cache.lookup(tensor)
        if value is None:
            handle = stats.reduce(tensor, precision, md5)
            value = _final(handle) or handle
            cache.store(key, owner, value)
        return value

    def _unusual_stats(self, tensor: torch.Tensor, precision: str, md5: bool) -> Any:
        """A sparse or nested tensor's statistics (layouts.py): never cached, its layout has no key."""
        if not tensor.is_nested:
            return layouts.sparse_stats(tensor, precision, md5)
        value = self.tensor_stats(layouts.nested_values(tensor), precision, md5)
        note = layouts.nested_note(tensor)
        if not note:
            return value
        return dict(value if type(value) is dict else stats.to_host([value])[0], **note)

    def tensor_xor(self, tensor: torch.Tensor) -> Any:
        if not layouts.is_plain(tensor):
            return self.tensor_xor(layouts.nested_values(tensor)) if tensor.is_nested else {"md5": None}
        value, key, owner = self._xor_cache.lookup(tensor)
        if value is None:
            handle = stats.xor(tensor)
            value = handle.ready or handle
            self._xor_cache.store(key, owner, value)
        return value

    def alias(self, view: torch.Tensor, original: torch.Tensor) -> None:
        """``view`` is an identity view of ``original`` (backward gating): same statistics and snapshot.
        Views of contiguous tensors find their base's statistics anyway."""
        if not (layouts.is_plain(view) and layouts.is_plain(original)):
            return  # (no cache keys for them)
        caches = (self._snap_cache,) if original.is_contiguous() else (self._stat_cache, self._crc_cache,
                                                                       self._xor_cache, self._snap_cache)
        for cache in caches:
            if not len(cache):
                continue
            value = cache.lookup(original)[0]
            if value is not None:
                _, key, owner = cache.lookup(view)
                cache.store(key, owner, value)

    def forget(self) -> None:
        """End of a dumped window: release the tensors the caches hold (freed on the engine's writer
        thread when a window installed one)."""
        caches = [cache for cache in (self._stat_cache, self._crc_cache, self._xor_cache, self._snap_cache)
                  if cache.entries]
        if self._hooks is None:
            for cache in caches:
                cache.clear()
        elif caches:
            self._hooks.engine.drop([cache.take() for cache in caches])

    def ready_stats(self, handle: Any) -> Optional[Dict[str, Any]]:
        return handle if type(handle) is dict else None

    def stats_to_host(self, handles: Sequence[Any]) -> List[Dict[str, Any]]:
        return stats.to_host(handles)

    def snapshot(self, tensor: torch.Tensor) -> Any:
        # the same unchanged tensor gets the same snapshot: the writer links instead of re-saving
        if tensor.is_nested:
            tensor = layouts.nested_values(tensor)  # msprobe's file of a jagged tensor: its values
        snap, key, owner = self._snap_cache.lookup(tensor)
        if snap is None:
            snap = self._take_snapshot(tensor)
            self._snap_cache.store(key, owner, snap)
        return snap

    def _take_snapshot(self, tensor: torch.Tensor) -> Any:
        # hooks run with autograd off: a copy made then is already outside the graph (detach() would make
        # one more tensor object per file)
        t = tensor.detach() if tensor.requires_grad and torch.is_grad_enabled() else tensor
        if t.device.type == "cpu":
            return t.clone()
        copy = t.to("cpu", non_blocking=True)
        event = torch.cuda.Event() if t.device.type == "cuda" else None
        if event is not None:
            event.record()
        return (copy, event)

    def unsaved_note(self, tensor: torch.Tensor) -> Optional[str]:
        if tensor.is_meta:
            return "meta tensor: no data, no file written"
        if tensor.layout != torch.strided and not tensor.is_nested:
            return (f"{layouts.layout_name(tensor)} tensor on {tensor.device}: statistics of its dense form, "
                    "no file written")
        return None

    def snapshot_nbytes(self, snapshot: Any) -> int:
        copy = snapshot[0] if isinstance(snapshot, tuple) else snapshot
        return copy.numel() * copy.element_size()

    def snapshot_on_host(self, snapshot: Any) -> bool:
        return not isinstance(snapshot, tuple)  # (a device tensor's copy comes with its event)

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
        if _DISTRIBUTED and dist.is_initialized():
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

    def uninstall_all(self, keep: bool = False) -> None:
        if self._hooks is not None:
            self._hooks.uninstall_all(keep)
        self.forget()
