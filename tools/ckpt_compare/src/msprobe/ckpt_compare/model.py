"""A checkpoint as logical (unsharded) parameters, each a list of on-disk pieces: nothing loaded yet."""
from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from msprobe.schema.errors import MsprobeError

from .tensorref import ITEMSIZE, TensorRef
from .unpickle import Stub


@dataclass(frozen=True)
class Piece:
    """A C-contiguous block of a logical parameter: ``ref`` placed at logical index ``start``."""
    ref: TensorRef
    start: Tuple[int, ...]


@dataclass
class Param:
    """One logical parameter of one checkpoint, with the replicas that must equal it."""
    name: str
    shape: Tuple[int, ...]
    dtype: str
    pieces: List[Piece]
    replicas: List[Tuple[str, TensorRef]] = field(default_factory=list)
    """(where, ref) copies of a replicated parameter held by other ranks; checked byte for byte."""
    note: str = ""
    """What the reader had to guess about this parameter's layout (copied into its report entry)."""

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * ITEMSIZE[self.dtype]


@dataclass
class Checkpoint:
    """What one side of the comparison holds."""
    path: Path
    """The iteration directory actually read."""
    kind: str
    """'megatron' (mp_rank_* files) or 'torch_dist' (distributed checkpoint)."""
    layout: str
    """Human summary of the parallel layout, e.g. 'TP2 PP2 EP1 VPP1'."""
    params: Dict[str, Param]
    args: Any = None
    notes: List[str] = field(default_factory=list)


def rows_of(ref: TensorRef, first: int, count: int) -> TensorRef:
    """The sub-block ref[first:first+count] along axis 0 (contiguous refs only)."""
    row = ref.numel // ref.shape[0] if ref.shape and ref.shape[0] else 0
    return replace(ref, offset=ref.offset + first * row * ITEMSIZE[ref.dtype],
                   shape=(count,) + ref.shape[1:], stride=ref.stride)


def index0(ref: TensorRef, i: int) -> TensorRef:
    """ref[i] (drops axis 0)."""
    sub = rows_of(ref, i, 1)
    return replace(sub, shape=sub.shape[1:], stride=sub.stride[1:])


def require_contiguous(ref: TensorRef, name: str) -> TensorRef:
    if not ref.contiguous:
        raise MsprobeError(f"{ref.path}: tensor '{name}' is a strided view (shape {list(ref.shape)}, "
                           f"stride {list(ref.stride)}); only contiguous tensors are supported")
    return ref


def whole(name: str, ref: TensorRef, replicas: Optional[List[Tuple[str, TensorRef]]] = None) -> Param:
    require_contiguous(ref, name)
    return Param(name, ref.shape, ref.dtype, [Piece(ref, (0,) * len(ref.shape))], replicas or [])


def check_tiling(param: Param) -> Param:
    """Pieces must cover the logical shape exactly (catches a shard of the wrong size)."""
    covered = sum(p.ref.numel for p in param.pieces)
    where = param.pieces[0].ref.path if param.pieces else "?"
    if any(p.ref.dtype != param.dtype for p in param.pieces):
        raise MsprobeError(f"{where}: shards of '{param.name}' have different dtypes "
                           f"{sorted({p.ref.dtype for p in param.pieces})}")
    if covered != param.numel:
        raise MsprobeError(f"{where}: shards of '{param.name}' cover {covered} elements, "
                           f"expected {param.numel} for shape {list(param.shape)}")
    return param


def checkpoint_args(value: Any) -> Tuple[Optional[argparse.Namespace], str]:
    """A checkpoint's ``args`` as a Namespace (dicts and pickled records are read the same way), or
    (None, why it cannot be used)."""
    if isinstance(value, argparse.Namespace):
        return value, ""
    fields = vars(value) if isinstance(value, Stub) else value
    if isinstance(fields, Mapping) and fields and all(isinstance(key, str) for key in fields):
        return argparse.Namespace(**fields), ""
    if value is None:
        return None, "no 'args'"
    return None, f"'args' is a {type(value).__name__}, not an argparse.Namespace"
