"""One recorded API or module call, as the engine tracks it from forward to backward."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .entry import PendingTensor


class Call:
    """One recorded API or module call; keeps what its backward entry needs."""

    __slots__ = ("forward", "backward", "want_forward", "want_backward", "inputs", "tensors", "parent",
                 "grad_in", "grad_out", "expect_in", "expect_out", "got_in", "got_out", "generation", "n_outputs",
                 "n_args", "emitted")

    def __init__(self, forward: str, backward: str, want_forward: bool, want_backward: bool,
                 parent: Optional["Call"], generation: int) -> None:
        self.forward, self.backward = forward, backward
        self.want_forward, self.want_backward = want_forward, want_backward
        self.inputs: Optional[Dict[str, Any]] = None
        self.tensors: List[PendingTensor] = []
        self.parent = parent
        self.grad_in: List[Any] = []
        self.grad_out: List[Any] = []
        self.expect_in = self.expect_out = self.got_in = self.got_out = 0
        self.n_outputs = self.n_args = 0
        self.generation = generation
        self.emitted = False
