"""One warning line per debugger when compiled code runs in a dump window: dynamo traces past the hooks, so
what runs inside compiled graphs is not dumped (what runs eagerly, graph breaks included, is).

Said at ``start()`` when a model given to it is compiled, and otherwise at ``stop()`` when compiled code ran in
the window: the dump's hooks and torch function mode, traced by dynamo, set ``seen`` (an attribute store, which
dynamo replays after the graph without breaking it) and do nothing else while ``compiling()``; and the
``torch.compile`` wrapper's ``__call__`` is patched while a window is open (as the tensor operators are), so
that a wrapper run eagerly is seen, also one whose graphs were compiled before the window, which no hook of ours
is in. (A global module hook would see it too, but torch warns at each wrapper call while one is registered.)
"""
from __future__ import annotations

import sys
from typing import Any

import torch

from .internals import DYNAMO_TRACES_MODES, optimized_module_class


class CompiledNote:
    """``seen``: compiled code ran in the window (set from traced code); ``say(where)``: the line, once."""

    def __init__(self) -> None:
        self.seen = False
        self.said = False
        self._patched: Any = None  # (class, its own __call__ or None) while patched

    def say(self, where: str = "") -> None:
        self.seen = False
        if self.said:
            return
        self.said = True
        subject = f"{where} runs under torch.compile" if where else "compiled code (torch.compile) ran in the window"
        apis = "" if DYNAMO_TRACES_MODES else f" (on torch {torch.__version__}, no API call of the window)"
        print(f"msprobe: warning: {subject}: the APIs and modules inside its compiled graphs are not dumped{apis}; "
              f"dump an eager run (without torch.compile) to see them", file=sys.stderr)

    def at_stop(self) -> None:
        if self._patched is not None:
            cls, original = self._patched
            if original is None:  # it had no __call__ of its own: the inherited one shows through again
                del cls.__call__
            else:
                cls.__call__ = original
            self._patched = None
        if self.seen:
            self.say()

    def watch(self) -> None:
        """A window opens: see the compiled modules called in it (until ``at_stop``)."""
        cls = optimized_module_class()
        if cls is None or self._patched is not None or self.said:
            return
        original = cls.__dict__.get("__call__")  # None on torch 2.2: nn.Module's __call__ runs the wrapper
        inner = original if original is not None else cls.__call__
        note = self

        def call(module, *args, **kwargs):
            note.seen = True
            return inner(module, *args, **kwargs)
        cls.__call__ = call
        self._patched = (cls, original)
