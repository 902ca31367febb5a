"""The dump never breaks the training it watches: the first error of ours (a full disk, a statistics error, a
bug) stops dumping for the rest of the run and is reported on one line (and its traceback under
``MSPROBE_DEBUG=1``); the training goes on unchanged."""
from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Optional


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


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
