"""What ``msprobe compare`` compares and how strictly."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Tuple

# Relative tolerance per dtype: about 8 units in the last place of the format, so that two runs that
# only reorder a reduction agree, while a change of formula (tanh-approximate gelu: ~1e-4) does not.
DEFAULT_TOLERANCES: Dict[str, float] = {
    "float64": 1e-9,
    "float32": 1e-5,
    "float16": 4e-3,
    "bfloat16": 3e-2,
}
EXACT_TOLERANCE = 0.0
"""Integers, booleans and everything else: equal or not."""


@lru_cache(maxsize=1024)
def dtype_key(dtype: Optional[str]) -> str:
    """``torch.float32`` / ``Float32`` / ``float32`` → ``float32``; ``BFloat16`` → ``bfloat16``."""
    if not dtype:
        return ""
    name = dtype.rsplit(".", 1)[-1].lower()
    return {"half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16"}.get(name, name)


@dataclass(frozen=True)
class CompareConfig:
    """Options of one ``msprobe compare`` run."""

    output_dir: Path
    """Folder of the result files; created; existing files are never overwritten."""
    steps: Optional[Tuple[int, ...]] = None
    """Steps to compare (both sides); None: every step the two dumps share."""
    ranks: Optional[Tuple[int, ...]] = None
    """Ranks to compare; None: every rank the two dumps share."""
    tolerances: Dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    """Relative tolerance per dtype key (``float32``...): a statistic or element agrees when
    ``|target - golden| <= tol * max(|golden|, rms)``, ``rms`` = L2 norm / sqrt(numel) of the golden tensor."""
    mapping_file: Optional[Path] = None
    """API name mapping (ours or msprobe's layer_mapping / api_mapping YAML) added to the shipped defaults."""
    xlsx: bool = True
    """Write the styled ``.xlsx`` beside each CSV (skipped above ``xlsx_max_rows`` rows)."""
    xlsx_max_rows: int = 200_000
    """Rows above which a rank's table is written as CSV only (a workbook that size takes minutes)."""
    html: Optional[Path] = None
    """Where to write the self-contained HTML page; None: no page."""
    stack: bool = True
    """Fill ``NPU_Stack_Info`` (the first row of each entry) from stack.json."""
    workers: int = 1
    """Local Dask worker processes comparing ranks in parallel (1: in this process)."""
    scheduler: Optional[str] = None
    """A Dask scheduler's address: rank pairs run on its workers, each on one that reads both sides (None:
    ``$DASK_SCHEDULER_ADDRESS``, else local)."""
    table_max_rows: int = 200_000
    """Rows above which a rank's full table is written in columnar form (Parquet), not as CSV (the summary
    holds what a person reads at that scale)."""
    force_csv: bool = False
    """Write the CSV however many rows a rank has (``--csv``)."""
    quiet: bool = False
    """No progress bar over the ranks (it shows only on a terminal anyway)."""
    max_tensor_bytes: int = 2 << 30
    """Largest tensor file read in tensor mode; a bigger one is compared by its statistics."""
    statistics: bool = False
    """Compare tensor dumps by their statistics and read no tensor file (``--statistics``); otherwise a tensor
    file that is missing, outside the dump or unreadable is an error naming it."""

    def tolerance(self, dtype: Optional[str]) -> float:
        return self.tolerances.get(dtype_key(dtype), EXACT_TOLERANCE)
