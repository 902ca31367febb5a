"""One step of the ring: its module entries (statistics pending until the step's transfer resolves), the
module tree, the loss and gradient norm, and the RNG states at ``start()``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..entry import PendingEntry as Entry, fill_statistics, pending_handles
from .host import Transfer


@dataclass
class RingStep:
    """What the recorder keeps of one training step."""

    step: int
    entries: List[Entry] = field(default_factory=list)
    """Module forward entries in the order they completed (a module after the modules it called)."""
    construct: Dict[str, Optional[str]] = field(default_factory=dict)
    """Module entry -> its parent module entry (construct.json)."""
    loss: Any = None
    """From ``step(loss=...)``, else the root module's 0-d loss output; a host number once resolved."""
    loss_given: bool = False
    """``step(loss=...)`` gave the loss: the root module's output does not replace it."""
    grad_norm: Any = None
    """From ``step(grad_norm=...)``; a host number once resolved."""
    rng: Any = None
    """The RNG states at the step's first ``start()`` (``RecorderHost.rng_state``)."""
    transfer: Optional[Transfer] = None
    """The step's statistics on their way to the host; None before ``step()`` and once resolved."""
    resolved: bool = False
    """Every statistic of the step is a host number (detectors may read it)."""

    def recorded(self) -> bool:
        """Whether the step holds anything (a step outside the ``step`` filter holds nothing)."""
        return bool(self.entries) or self.loss is not None or self.grad_norm is not None

    def handles(self) -> List[Any]:
        return pending_handles(self.entries)

    def resolve(self) -> None:
        """Put the transferred statistics into the records (waits for the copy if it is not done yet)."""
        if self.resolved:
            return
        stats, (loss, grad_norm) = self.transfer.values() if self.transfer is not None else ([], (None, None))
        fill_statistics(self.entries, stats)
        for _, _, tensors, _ in self.entries:
            tensors.clear()  # nothing more to wait for: the records are final
        self.loss, self.grad_norm = loss, grad_norm
        self.transfer = None
        self.resolved = True
