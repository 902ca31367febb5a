"""The dump never breaks the training it watches: the first error of ours (a full disk, a statistics error, a
bug) stops dumping for the rest of the run and is reported on one line (and its traceback under
``MSPROBE_DEBUG=1``); the training goes on unchanged."""
from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Any, Optional


class Faults:
    """The first failure of one engine, reported once, whichever thread (hook, autograd, writer) meets it."""

    def __init__(self) -> None:
        self.failed = False
        self._lock = threading.Lock()

    def report(self, exc: BaseException, where: str, step: Optional[int]) -> bool:
        """Record ``exc`` met while ``where`` (in ``step``; None: on the writer thread, whose ``where``
        names the file); True for the first failure (reported now), else False."""
        with self._lock:
            if self.failed:
                return False
            self.failed = True
        at = "" if step is None else f" at step {step}"
        print(f"msprobe: error: dump stopped{at} while {where}: {describe(exc)}; the training continues "
              "without it (files written before stay readable)", file=sys.stderr, flush=True)
        if os.environ.get("MSPROBE_DEBUG") == "1":  # where in the dump it failed, for a bug report
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            sys.stderr.flush()
        return True


class Guarded:
    """``with engine.guard(doing, name):`` around the dump's own work in a hook (the one way the dump keeps
    its errors from the training): the engine is busy meanwhile, so hooks met inside pass their calls
    through; an ``Exception`` goes to ``engine.fail`` (said as ``"{doing} {name}"``, built only then) and
    the code after the block runs on. Nested guards leave the engine busy until the outermost ends."""

    __slots__ = ("engine", "doing", "name", "was_busy")

    def __init__(self, engine: Any, doing: str, name: str) -> None:
        self.engine, self.doing, self.name = engine, doing, name
        self.was_busy = False

    def __enter__(self) -> None:
        engine = self.engine
        self.was_busy = engine.busy
        engine.busy = True

    def __exit__(self, kind: Any, exc: Optional[BaseException], trace: Any) -> bool:
        self.engine.busy = self.was_busy
        if not isinstance(exc, Exception):  # none, or KeyboardInterrupt and the like: the user's to see
            return False
        self.engine.fail(exc, f"{self.doing} {self.name}" if self.name else self.doing)
        return True


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
