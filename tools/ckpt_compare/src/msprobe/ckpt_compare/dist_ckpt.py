"""Megatron ``torch_dist`` (torch.distributed.checkpoint) directories → logical parameters, without torch.

``.metadata`` (a pickle of dataclasses, read through the allow-list) gives every tensor's global shape
and its chunks; each chunk is a small ``torch.save`` blob at (offset, length) inside a ``__R_N.distcp``
file. mcore stacks layers on a leading axis (``decoder.layers.mlp.linear_fc1.weight`` is [L, ...]); we
unstack it into ``decoder.layers.N...``. Chunks are already in logical order (Megatron's swiglu factory
stores gate and up halves separately), so no TP rule is needed here.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

from msprobe.schema.errors import MsprobeError

from . import names
from .model import Checkpoint, Param, Piece, check_tiling, checkpoint_args, index0, require_contiguous
from .ptfile import load_pickle, load_pt
from .tensorref import TensorRef

_SKIP = re.compile(r"^(optimizer\.|rng_state|rerun_state)|/shard_|_extra_state")
_STACKED = re.compile(r"^decoder\.layers\.(?!\d)")
# SequentialMLP saves experts as mlp.experts.experts.<global>.X (singleton shards) or stacks them on a
# second leading axis as mlp.experts.experts.X.
_EXPERT_NUMBERED = re.compile(r"^mlp\.experts\.experts\.(\d+)\.(.*)$")
_EXPERT_STACKED = re.compile(r"^mlp\.experts\.experts\.(linear_fc\d\..*)$")


def read(path: Path) -> Checkpoint:
    meta_file = path / ".metadata"
    meta = load_pickle(meta_file)
    tensors = getattr(meta, "state_dict_metadata", None)
    storage = getattr(meta, "storage_data", None)
    if not isinstance(tensors, dict) or not isinstance(storage, dict):
        raise MsprobeError(f"{meta_file}: not a torch.distributed.checkpoint metadata file")
    where = {(getattr(info_key, "fqn", None), tuple(getattr(info_key, "offset", None) or ())): info for info_key, info in storage.items()}
    args = _common_args(path)
    params: Dict[str, Param] = {}
    for key, entry in tensors.items():
        if _SKIP.search(key) or not hasattr(entry, "chunks") or not hasattr(entry, "size"):
            continue
        size = tuple(entry.size)
        chunks = [(tuple(c.offsets), _chunk(path, key, tuple(c.offsets), tuple(c.sizes), where)) for c in entry.chunks]
        base, logical = _logical_name(key)
        if not _STACKED.match(key):
            _add(params, names.normalise(base), size, [Piece(ref, off) for off, ref in chunks], logical)
            continue
        for layer in range(size[0]):
            stage = _unstack(chunks, layer)
            numbered = _EXPERT_NUMBERED.match(base)
            if numbered:  # singleton expert shards: mlp.experts.<global>.linear_fc1.weight
                name = f"mlp.experts.local_experts.{numbered.group(1)}.{numbered.group(2)}"
                _add(params, names.normalise(f"decoder.layers.{layer}.{name}"), size[1:], _pieces(stage), logical)
            elif _EXPERT_STACKED.match(base):  # experts on a second leading axis
                for expert in range(size[1]):
                    name = f"decoder.layers.{layer}.mlp.experts.local_experts.{expert}.{_EXPERT_STACKED.match(base).group(1)}"
                    _add(params, names.normalise(name), size[2:], _pieces(_unstack(stage, expert)), logical)
            else:
                _add(params, names.normalise(f"decoder.layers.{layer}.{base}"), size[1:], _pieces(stage), logical)
    for param in params.values():
        check_tiling(param)
    tp = getattr(args, "tensor_model_parallel_size", "?") if args is not None else "?"
    pp = getattr(args, "pipeline_model_parallel_size", "?") if args is not None else "?"
    return Checkpoint(path, "torch_dist", f"torch_dist (saved with TP{tp} PP{pp})", params, args)


def _unstack(chunks, i: int):
    """Chunks covering index ``i`` of the leading axis, with that axis removed."""
    return [(off[1:], index0(ref, i - off[0])) for off, ref in chunks if off[0] <= i < off[0] + ref.shape[0]]


def _pieces(chunks) -> List[Piece]:
    return [Piece(ref, off) for off, ref in chunks]


def _logical_name(key: str) -> Tuple[str, int]:
    """Strip the stacking prefix; ``_w``/``_v`` (swiglu halves saved as two keys) map to one fc1 tensor."""
    base = key[len("decoder.layers."):] if _STACKED.match(key) else key
    if base.endswith(("linear_fc1.weight_w", "linear_fc1.weight_v")):
        return base[:-2], 0 if base.endswith("_w") else 1
    return base, -1


def _add(params: Dict[str, Param], name: str, shape: Tuple[int, ...], pieces: List[Piece], half: int) -> None:
    if not pieces:
        return
    if half < 0:
        params[name] = Param(name, tuple(shape), pieces[0].ref.dtype, pieces)
        return
    # gate (_w) rows first, up (_v) rows after them; both halves have the same shape.
    param = params.setdefault(name, Param(name, (0,) + tuple(shape[1:]), pieces[0].ref.dtype, []))
    offset = shape[0] if half == 1 else 0
    param.pieces.extend(Piece(p.ref, (p.start[0] + offset,) + p.start[1:]) for p in pieces)
    param.shape = (param.shape[0] + shape[0],) + tuple(shape[1:])


def _raw_bytes(file: Path, offset: int) -> bool:
    """A torch.save blob starts with a zip header (Megatron's torch_dist always writes those)."""
    with open(file, "rb") as handle:
        handle.seek(offset)
        head = handle.read(4)
    if len(head) < 4:
        raise MsprobeError(f"{file}: ends before offset {offset} named by .metadata (truncated?)")
    return head != b"PK\x03\x04"


def _chunk(path: Path, key: str, offsets: Tuple[int, ...], sizes: Tuple[int, ...], where) -> TensorRef:
    info = where.get((key, offsets))
    if info is None:
        raise MsprobeError(f"{path / '.metadata'}: no storage entry for chunk {list(offsets)} of '{key}'")
    file = path / info.relative_path
    if not file.is_file():
        raise MsprobeError(f"{file}: missing distributed checkpoint file (named by .metadata)")
    if _raw_bytes(file, int(info.offset)):
        raise MsprobeError(f"{file}: chunk {list(offsets)} of '{key}' is not a torch.save blob "
                           f"(safetensors-serialised distributed checkpoints are not supported)")
    ref = load_pt(file, int(info.offset), int(info.length))
    if not isinstance(ref, TensorRef) or tuple(ref.shape) != sizes:
        raise MsprobeError(f"{file}: chunk {list(offsets)} of '{key}' is not a tensor of shape {list(sizes)}")
    return require_contiguous(ref, key)


def _common_args(path: Path) -> Any:
    common = path / "common.pt"
    if not common.is_file():
        return None
    state = load_pt(common)
    return checkpoint_args(state.get("args") if isinstance(state, dict) else None)[0]
