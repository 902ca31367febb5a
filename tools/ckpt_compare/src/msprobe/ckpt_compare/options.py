"""Settings of one checkpoint comparison."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompareOptions:
    workers: int = 2
    """Threads comparing parameters in parallel (reads and float64 reductions release the GIL)."""
    block_elems: int = 1 << 16
    """Elements per side read and reduced at once; bounds memory to a few MB per worker."""
    replica_check_elems: int = 1 << 24
    """Replicated parameters up to this many elements are checked byte for byte across ranks."""
    progress: bool = True
    """Show a progress line on a terminal when the comparison takes more than a second."""
