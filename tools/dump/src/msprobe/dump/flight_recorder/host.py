"""What the recorder needs from a framework beyond the dump adapter: the one transfer per step, the RNG
states kept for replay, and an adapter for the full dump after a trigger."""
from __future__ import annotations

from typing import Any, ContextManager, Dict, List, Optional, Sequence, Tuple

from msprobe.schema import DebuggerConfig

from ..adapter import Adapter


class Transfer:
    """One step's statistics on their way to the host (started by ``RecorderHost.transfer``)."""

    def done(self) -> bool:
        """Whether ``values`` can be read without waiting for a device."""
        raise NotImplementedError

    def values(self) -> Tuple[List[Dict[str, Any]], List[Optional[float]]]:
        """(statistics dict per handle, float per extra scalar), waiting for the copy if it is not done."""
        raise NotImplementedError


class RecorderHost:
    """The framework part of a flight recorder (PyTorch: ``msprobe.pytorch.flight_recorder.TorchRecorderHost``)."""

    def transfer(self, handles: Sequence[Any], scalars: Sequence[Any]) -> Transfer:
        """Start bringing a step's statistics handles and its extra scalars (the loss and gradient norm: host
        numbers or 0-d framework tensors) to the host: at most one non-blocking copy, never a wait here."""
        raise NotImplementedError

    def rng_state(self) -> Any:
        """The random number generators' states now (CPU and device), to replay the step that begins."""
        raise NotImplementedError

    def replay(self, state: Any) -> ContextManager[None]:
        """A context with the generators set to ``state``, and set back to what they were on leaving it."""
        raise NotImplementedError

    def capture_adapter(self, config: DebuggerConfig) -> Adapter:
        """A fresh adapter for the full dump after a trigger (configured as ``config`` says)."""
        raise NotImplementedError
