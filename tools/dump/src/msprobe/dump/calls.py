"""One recorded API or module call, as the engine tracks it from forward to backward."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import native
from .entry import PendingTensor


class PythonCall:
    """One recorded API or module call; keeps what its backward entry needs. ``Call`` is this class where
    the helpers are not built; where they are, the same in C (``_calltype.c``: a dumped step makes one per
    module call and per API call with autograd, and this ``__init__`` was ~1.5 us of each)."""

    __slots__ = ("forward", "backward", "want_forward", "want_backward", "inputs", "tensors", "parent",
                 "grad_in", "grad_out", "expect_in", "expect_out", "got_in", "got_out", "generation", "n_outputs",
                 "n_args", "emitted")

    def __init__(self, forward: str, backward: str, want_forward: bool, want_backward: bool,
                 parent: Optional["PythonCall"], generation: int) -> None:
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


Call = getattr(native.helpers(), "Call", None) or PythonCall
