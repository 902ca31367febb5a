"""The MindSpore adapter of the dump engine: native MindSpore (``Cell``, ``framework: mindspore``) and
torch code running on MindSpore through MSAdapter / MindTorch (``Module``, ``framework: mindtorch``).

Tensors are MindSpore tensors in both flavours (``type: mindspore.Tensor``, dtype ``Float32``...);
files are ``.npy``. The flavour is decided at ``start``: MindTorch when the model is a module of
``msadapter.pytorch`` / ``mindtorch.torch`` or, with no model, when one of them is imported.
"""
from __future__ import annotations

import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from mindspore.common import dtype as mstype

from msprobe.dump.adapter import Adapter
from msprobe.schema import DebuggerConfig
from msprobe.schema.jsonio import write_bytes_atomic

from . import internals, stats
from ._compat import TorchOnMindSpore, detect_torch_adapter
from .internals import tensor_types
from .api_list import categories, load_api_list
from .api_wrap import CallRecorder, EncodeMode, JitWrapper, NamespaceWrapper, PrimitiveWrapper
from .cells import CellHooks, ParamGradHooks, named_cells
from .weight_grads import WeightGradTap
from .grads import CallRegistry, GradTap


class MindSporeAdapter(Adapter):
    tensor_suffix = ".npy"

    def __init__(self, config: DebuggerConfig) -> None:
        self.config = config
        self.torch: Optional[TorchOnMindSpore] = detect_torch_adapter()
        self.framework = "mindtorch" if self.torch else "mindspore"
        self.module_prefix = "Module" if self.torch else "Cell"
        self._tensor_types = tensor_types()
        self.on_host = internals.device_target() == "CPU"
        """CPU target: statistics from host memory with numpy; else on the device, read back per batch."""
        self.stats_batch = 1 if self.on_host else 64
        self.mode = EncodeMode()
        self._api_lists: Dict[str, Dict[str, List[str]]] = {}
        self._namespaces: Optional[NamespaceWrapper] = None
        self._primitives: Optional[PrimitiveWrapper] = None
        self._jit: Optional[JitWrapper] = None
        self._registry: Optional[CallRegistry] = None
        self._recorder: Optional[CallRecorder] = None
        self._tap: Optional[GradTap] = None
        self._built_for: Optional[Tuple[int, str]] = None
        self._cells: Optional[CellHooks] = None
        self._param_grads: Optional[ParamGradHooks] = None

    # ----- tensors ---------------------------------------------------------------------------------
    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, self._tensor_types)

    def tensor_meta(self, tensor: Any) -> Tuple[str, str, List[int], bool]:
        return "mindspore.Tensor", stats.dtype_name(tensor), [int(d) for d in tensor.shape], \
            bool(getattr(tensor, "requires_grad", False))

    def tensor_stats(self, tensor: Any, precision: str, md5: bool) -> Any:
        # host statistics are read when the entry is complete (one pipeline wait per entry), except for
        # tensors a later op may still change in place: module inputs, in-place API inputs, async_dump
        lazy = not (self.mode.eager or self.config.async_dump)
        return stats.tensor_stats(tensor, precision, md5, on_host=self.on_host, lazy=lazy)

    def stats_to_host(self, handles: Sequence[Any]) -> List[Dict[str, Any]]:
        return stats.stats_to_host(handles)

    def snapshot(self, tensor: Any) -> Any:
        return stats.to_numpy(tensor)  # task tensor copies every tensor to the host anyway

    def snapshot_nbytes(self, snapshot: Any) -> int:
        return int(snapshot.nbytes)

    def snapshot_on_host(self, snapshot: Any) -> bool:
        return True  # (to_numpy has copied it)

    def save_tensor(self, snapshot: Any, path: str) -> None:
        buffer = io.BytesIO()
        np.save(buffer, snapshot)
        write_bytes_atomic(path, buffer.getbuffer(), durable=False)

    def describe_value(self, value: Any) -> Optional[Dict[str, Any]]:
        if _DTYPE_TYPE is not None and isinstance(value, _DTYPE_TYPE):
            return {"type": "mindspore.dtype", "value": str(value)}
        if isinstance(value, np.ndarray):
            return {"type": "numpy.ndarray", "dtype": str(value.dtype), "shape": list(value.shape),
                    **(stats.numpy_stats(value, "high") if value.size else dict.fromkeys(stats.STAT_KEYS))}
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return {"type": type(value.item()).__name__, "value": value.item()}
        return None

    def rank(self) -> Optional[int]:
        return internals.rank()

    # ----- hooks -------------------------------------------------------------------------------------
    def flavour_for(self, models: Sequence[Any]) -> None:
        """Decide native MindSpore or MindTorch from the model (before anything is written)."""
        torch = detect_torch_adapter(list(models) or None)
        self.torch = torch
        self.framework = "mindtorch" if torch else "mindspore"
        self.module_prefix = "Module" if torch else "Cell"

    def api_list(self) -> Dict[str, List[str]]:
        if self.framework not in self._api_lists:
            self._api_lists[self.framework] = load_api_list(self.config.api_list, self.framework)
        return self._api_lists[self.framework]

    def install(self, engine: Any, models: Sequence[Any]) -> None:
        models = list(models)
        self.flavour_for(models)
        key = (id(engine), self.framework)
        if self._built_for != key:  # wrappers are built once per engine and flavour, then only swapped in
            rewrap = self.torch.rewrap if self.torch else (lambda value, like: value)
            self._tap = GradTap(self._tensor_types, rewrap)
            self._registry = CallRegistry(engine)  # outlives start/stop: MindSpore 2.0 reuses old hooks
            self._recorder = CallRecorder(engine, self._tap, self._registry, self.mode, self.config.record_nested)
            self._namespaces = NamespaceWrapper(self._recorder)
            self._prepare_namespaces(self._namespaces)
            self._jit = JitWrapper(self._recorder)
            self._built_for = key
        cells = named_cells(models) if models else []
        if engine.api_level:
            self._namespaces.apply()
            self._jit.wrap()
            if cells:
                self._primitives = PrimitiveWrapper(self._recorder)
                self._primitives.wrap_model([cell for _, cell in cells] + models)
        if engine.module_level and cells:
            self._cells = CellHooks(engine, self._tap, self._registry, self.mode, self.module_prefix)
            self._cells.install(cells)
        if engine.module_level and cells and engine.filter.backward:  # (parameters_grad is backward data)
            if self._param_grads is None:
                hooks = ParamGradHooks if ParamGradHooks.available() else WeightGradTap
                self._param_grads = hooks(engine, self.module_prefix)
            self._param_grads.install(cells)

    def _prepare_namespaces(self, wrapper: NamespaceWrapper) -> None:
        package = self.torch.name if self.torch else None
        for category, names in self.api_list().items():
            prefix, find = categories(self.framework)[category]
            for namespace in find(package):
                wrapper.prepare(namespace, names, prefix)
        if package:
            wrapper.prepare_rebind(package.split(".")[0])

    def uninstall_forward(self) -> None:
        for part in (self._namespaces, self._primitives, self._jit):
            if part is not None:
                part.unwrap()
        if self._cells is not None:
            self._cells.remove()
        self._primitives = self._cells = None

    def uninstall_all(self, keep: bool = False) -> None:
        self.uninstall_forward()
        if self._param_grads is not None:
            self._param_grads.remove()


_DTYPE_TYPE = getattr(mstype, "Type", None)

