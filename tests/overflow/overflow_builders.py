"""Build small dumps in the documented format from real torch tensors (for the offline analysis tests)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from msprobe.schema import RankWriter


def record(tensor: torch.Tensor) -> dict:
    """A dump.json tensor record with the statistics the engine writes (non-finite kept as floats)."""
    values = tensor.detach().float()
    return {"type": "torch.Tensor", "dtype": str(tensor.dtype), "shape": list(tensor.shape),
            "Max": values.max().item(), "Min": values.min().item(), "Mean": values.mean().item(),
            "Norm": values.norm().item(), "requires_grad": tensor.requires_grad}


def api(inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> dict:
    return {"input_args": [record(t) for t in inputs], "input_kwargs": {},
            "output": [record(t) for t in outputs]}


def write_rank(rank_dir: Path, entries: List[Tuple[str, dict]], construct: Optional[Dict[str, str]] = None,
               stacks: Optional[Dict[str, List[str]]] = None, finalize: bool = True) -> Path:
    writer = RankWriter(rank_dir, {"task": "statistics", "level": "mix", "framework": "pytorch",
                                   "dump_data_dir": None})
    for name, value in entries:
        writer.entry(name, value)
    for node, parent in (construct or {}).items():
        writer.construct(node, parent)
    for name, frames in (stacks or {}).items():
        writer.stack(name, frames)
    if finalize:
        writer.finalize(remove_journal=True)
    else:
        writer.flush()
    return rank_dir
