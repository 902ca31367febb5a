"""Settings of one checkpoint comparison."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompareOptions:
    workers: int = 0
    """Threads comparing spans in parallel (reads and numpy reductions release the GIL); 0 = one per core."""
    span_bytes: int = 4 << 20
    """Bytes per side read and reduced as one unit of work; memory is 2-4 of these per worker."""
    readahead_bytes: int = 64 << 20
    """How far ahead of the workers the kernel is asked to read (into the page cache, not this process)."""
    replica_check_elems: int = 1 << 24
    """Replicated parameters up to this many elements are checked byte for byte across ranks."""
    progress: bool = True
    """Show a progress bar on a terminal (stderr); never when it is not one."""
