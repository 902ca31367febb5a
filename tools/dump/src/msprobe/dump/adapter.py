"""The boundary between the framework-free engine and a framework adapter (PyTorch, MindSpore, MSAdapter).

An adapter subclasses :class:`Adapter` and implements the tensor-level methods below; it also owns
the framework hooks (API wrapping, module/Cell hooks, gradient hooks) and reports what they see to
the engine through the ``DumpEngine`` methods listed in ``msprobe/dump/__init__.py``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple


class Adapter:
    """What the engine needs from a framework. Methods are called on the thread that ran the hook,
    except ``save_tensor`` (background writer thread, or the hook's: ``snapshot_on_host``) and
    ``stats_to_host`` (flush points)."""

    framework = "unknown"
    """Written as ``framework`` in dump.json: pytorch | mindspore | mindtorch."""
    tensor_suffix = ".pt"
    """Suffix of tensor files: ``.pt`` (PyTorch) or ``.npy`` (MindSpore, MSAdapter)."""
    module_prefix = "Module"
    """``Module`` (PyTorch, MSAdapter) or ``Cell`` (MindSpore native)."""
    summary_modes: Tuple[str, ...] = ("statistics", "md5")
    """The ``summary_mode`` values this adapter computes (``xor``: ``tensor_xor``)."""
    stats_batch = 64
    """Entries with device statistics to hold before one ``stats_to_host`` call (one device→host copy per
    batch); entries whose statistics are host values (``ready_stats``) are written at once."""

    def is_tensor(self, value: Any) -> bool:
        raise NotImplementedError

    def tensor_meta(self, tensor: Any) -> Tuple[str, str, List[int], bool]:
        """(type name, dtype name as the format spells it, shape, requires_grad)."""
        raise NotImplementedError

    def tensor_stats(self, tensor: Any, precision: str, md5: bool) -> Any:
        """Start the reduction of one tensor on its own device; returns an opaque handle (no host sync)."""
        raise NotImplementedError

    def tensor_xor(self, tensor: Any) -> Any:
        """``summary_mode: xor``: start the XOR of the tensor's raw bytes read as little-endian 64-bit words
        (zero-padded) on its device; a handle like ``tensor_stats``'s whose values are ``{"md5": "0x%016x"}``
        (``None`` for an empty tensor, as msprobe writes)."""
        raise NotImplementedError

    def ready_stats(self, handle: Any) -> Optional[Dict[str, Any]]:
        """The final ``Max, Min, Mean, Norm`` (and ``md5``) of a handle whose values are already host numbers
        (the record is then complete at once, without a batch); None when ``stats_to_host`` is needed."""
        return None

    def stats_to_host(self, handles: Sequence[Any]) -> List[Dict[str, Any]]:
        """Bring a batch of handles to the host: one dict per handle with ``Max, Min, Mean, Norm``
        (None where undefined) and ``md5`` when asked for."""
        raise NotImplementedError

    def snapshot(self, tensor: Any) -> Any:
        """A copy of the tensor safe from later in-place changes, for ``save_tensor`` (task tensor)."""
        raise NotImplementedError

    def save_tensor(self, snapshot: Any, path: str) -> None:
        """Write one tensor file (from the background writer thread or the hook's), whole or not at all under
        ``path`` (``msprobe.schema.jsonio.write_bytes_atomic``): a killed process leaves no partial file."""
        raise NotImplementedError

    def unsaved_note(self, tensor: Any) -> Optional[str]:
        """Why the tensor task writes no file for ``tensor`` (a meta or sparse tensor: no dense data to
        save), or None; the record then gets ``"data_name": null`` and this note."""
        return None

    def snapshot_nbytes(self, snapshot: Any) -> int:
        """Host memory a snapshot holds (bounds the writer's backlog)."""
        return 0

    def snapshot_on_host(self, snapshot: Any) -> bool:
        """Whether ``save_tensor`` can write the snapshot without waiting for a device (no copy still in
        flight): then, when small and ``async_dump`` is off, the hook thread writes it at once."""
        return False

    def describe_value(self, value: Any) -> Optional[Dict[str, Any]]:
        """A non-tensor framework object (dtype, device, Size...) as ``{"type", "value"}``; None = unknown."""
        return None

    def rank(self) -> Optional[int]:
        """This process's rank when distributed, else None."""
        return None

    def install(self, engine: Any, models: Sequence[Any]) -> None:
        """Install the framework hooks for one dumped window (between start and stop)."""
        raise NotImplementedError

    def uninstall_forward(self) -> None:
        """Remove the hooks that see new calls (stop); gradient hooks already attached may still fire."""
        raise NotImplementedError

    def uninstall_all(self, keep: bool = False) -> None:
        """step(): remove every hook, gradient hooks too. ``keep``: the next step is recorded as well, and
        hooks may stay for its window if they record nothing outside one (the engine's ``recording``, and
        ``param_grad`` only between a window's start and step())."""
        self.uninstall_forward()
