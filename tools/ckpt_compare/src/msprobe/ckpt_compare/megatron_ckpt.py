"""Megatron-LM / MindSpeed ``mp_rank_XX[_YYY][_ZZZ]/model_optim_rng.pt`` checkpoints → logical parameters.

The parallel layout comes from the checkpoint's own ``args`` and folder names: TP rank, PP rank and
EP rank of every file, VPP chunks (``model0``, ``model1``...), layer offsets counted from the layers each
stage actually holds (so uneven pipeline splits need no formula), local → global expert numbers.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from msprobe.schema.errors import MsprobeError

from . import names
from .locate import RANK_DIR
from .model import Checkpoint, Param, Piece, check_tiling, checkpoint_args, require_contiguous, rows_of, whole
from .ptfile import load_pt
from .tensorref import TensorRef

FILES = ("model_optim_rng.pt", "model_rng.pt")
_MAX_DEPTH = 64
MAX_VISITS = 1 << 21
"""Objects walked in one model dict: 2 Mi, far above a real model's few thousand parameters and sub-dicts."""
Rank = Tuple[int, int, int]  # (tp, pp, ep)
GUESSED_FC1 = "SwiGLU unknown (checkpoint args do not say): TP shards concatenated as stored"


def read(path: Path) -> Checkpoint:
    folders = sorted(p for p in path.iterdir() if p.is_dir() and RANK_DIR.match(p.name))
    files = {p.name: _model_file(p) for p in folders}
    first = load_pt(files[folders[0].name])
    args, why = checkpoint_args(first.get("args") if isinstance(first, dict) else None)
    tp, pp, ep = _sizes(args)
    experts = _has_experts(first, files[folders[0].name])
    ranks = {_rank(name, args, pp, ep, files[name], experts): files[name] for name in files}
    tp = max(tp, 1 + max(r[0] for r in ranks))
    pp = max(pp, 1 + max(r[1] for r in ranks))
    ep = max(ep, 1 + max(r[2] for r in ranks))
    for rank in ((t, p, e) for t in range(tp) for p in range(pp) for e in range(ep)):
        if rank not in ranks:
            raise MsprobeError(f"{path}: missing shard {_folder(rank, pp, ep)}/model_optim_rng.pt "
                               f"(layout TP{tp} PP{pp} EP{ep})")
    states = {rank: (first if file == files[folders[0].name] else load_pt(file)) for rank, file in ranks.items()}
    chunks = _chunks(states, ranks)
    offsets = _layer_offsets(chunks, pp)
    grouped: Dict[str, Dict[Tuple[int, int], TensorRef]] = defaultdict(dict)
    n_local = _local_experts(chunks, args, ep)
    for (t, p, e, v), flat in chunks.items():
        for local_name, ref in flat.items():
            name = local_name
            layer = names.local_layer(name)
            if layer is not None:
                name = names.with_layer(name, offsets[(v, p)] + layer)
            expert = names.local_expert(name)
            if expert is not None:
                name = names.with_expert(name, e * n_local + expert)
            grouped[name][(t, e)] = ref
    params = {n: _merge(n, shards, args, tp) for n, shards in grouped.items()}
    vpp = 1 + max(v for (_t, _p, _e, v) in chunks)
    layout = f"TP{tp} PP{pp} EP{ep} VPP{vpp}"
    notes = []
    if any(p.note for p in params.values()):
        why = why or "'args' sets neither swiglu nor gated_linear_unit"
        notes.append(f"{files[folders[0].name]}: {why}, so SwiGLU is unknown: linear_fc1 shards are "
                     f"concatenated as they are (wrong across TP sizes if the model is gated)")
    return Checkpoint(path, "megatron", layout, params, args, notes)


def _model_file(folder: Path) -> Path:
    for name in FILES:
        if (folder / name).is_file():
            return folder / name
    raise MsprobeError(f"{folder / FILES[0]}: missing shard file")


def _sizes(args: Any) -> Tuple[int, int, int]:
    get = (lambda key: int(getattr(args, key, 1) or 1)) if args is not None else (lambda key: 1)
    return get("tensor_model_parallel_size"), get("pipeline_model_parallel_size"), get("expert_model_parallel_size")


def _has_experts(state: Any, where: Path) -> bool:
    flat: Dict[str, TensorRef] = {}
    if isinstance(state, dict):
        for key in state:
            if str(key).startswith("model"):
                _flatten(state[key], "", flat, where)
    return any(names.is_expert(names.normalise(n)) for n in flat)


def _rank(folder: str, args: Any, pp: int, ep: int, file: Path, experts: bool) -> Rank:
    parts = [int(x) for x in RANK_DIR.match(folder).groups() if x is not None]
    if len(parts) == 1:
        return parts[0], 0, 0
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    # mp_rank_XX_YYY: YYY is the pipeline rank, or the expert rank when there is no pipeline parallelism.
    if args is None:
        if not experts:  # no expert in the model: there is no expert parallelism either
            return parts[0], parts[1], 0
        raise MsprobeError(f"{file}: folder {folder} is ambiguous (PP or EP rank) and the checkpoint has no 'args'")
    if pp > 1 and ep > 1:
        raise MsprobeError(f"{file}: folder {folder} lacks the expert rank although args say PP{pp} EP{ep}")
    return (parts[0], 0, parts[1]) if ep > 1 else (parts[0], parts[1], 0)


def _folder(rank: Rank, pp: int, ep: int) -> str:
    name = f"mp_rank_{rank[0]:02d}"
    if pp > 1:
        name += f"_{rank[1]:03d}"
    if ep > 1:
        name += f"_{rank[2]:03d}"
    return name


def _chunks(states: Dict[Rank, Any], files: Dict[Rank, Path]) -> Dict[Tuple[int, int, int, int], Dict[str, TensorRef]]:
    """(tp, pp, ep, vpp chunk) → {normalised local name: tensor}."""
    out = {}
    for rank, state in states.items():
        if not isinstance(state, dict):
            raise MsprobeError(f"{files[rank]}: expected a dict with 'model', got {type(state).__name__}")
        keys = sorted((k for k in state if isinstance(k, str) and k.startswith("model") and k[5:].isdigit() or k == "model"),
                      key=lambda k: int(k[5:] or 0))
        if not keys:
            raise MsprobeError(f"{files[rank]}: field 'model' missing (not a Megatron checkpoint)")
        for key in keys:
            flat: Dict[str, TensorRef] = {}
            _flatten(state[key], "", flat, files[rank])
            out[rank + (int(key[5:] or 0),)] = {names.normalise(k): v for k, v in flat.items() if not names.skipped(k)}
    return out


def _flatten(tree: Any, prefix: str, out: Dict[str, TensorRef], where: Path) -> None:
    """{dotted name: tensor} of a model's nested dicts. Bounded in depth and in objects visited: a pickle can
    share one child between many parents (40 levels of ``{"a": node, "b": node}`` is 2 KB on disk and 2**40
    paths), so a shared object counts each time it is walked."""
    budget = [MAX_VISITS]
    _walk(tree, prefix, out, where, 0, budget)


def _walk(tree: Any, prefix: str, out: Dict[str, TensorRef], where: Path, depth: int, budget: list) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise MsprobeError(f"{where}: the model's dicts hold more than {MAX_VISITS} objects (counting shared ones "
                           "each time they are reached); not a model checkpoint")
    if isinstance(tree, TensorRef):
        out[prefix] = tree
    elif isinstance(tree, dict):
        if depth > _MAX_DEPTH:  # a state dict nests a few levels; a hostile pickle could nest millions
            raise MsprobeError(f"{where}: the model's dicts nest deeper than {_MAX_DEPTH} levels at '{prefix[:80]}'")
        for key, value in tree.items():
            _walk(value, f"{prefix}.{key}" if prefix else str(key), out, where, depth + 1, budget)


def _layer_offsets(chunks, pp: int) -> Dict[Tuple[int, int], int]:
    """Global number of each stage's first layer: stages run chunk-major, pipeline-rank-minor."""
    counts: Dict[Tuple[int, int], int] = defaultdict(int)
    for (_t, p, _e, v), flat in chunks.items():
        layers = [names.local_layer(n) for n in flat]
        counts[(v, p)] = max(counts[(v, p)], 1 + max((x for x in layers if x is not None), default=-1))
    offsets, running = {}, 0
    for v, p in sorted(counts):
        offsets[(v, p)] = running
        running += counts[(v, p)]
    return offsets


def _local_experts(chunks, args: Any, ep: int) -> int:
    total = getattr(args, "num_experts", None) if args is not None else None
    if total:
        return int(total) // ep
    seen = {names.local_expert(n) for flat in chunks.values() for n in flat}
    return 1 + max((x for x in seen if x is not None), default=-1)


def _merge(name: str, shards: Dict[Tuple[int, int], TensorRef], args: Any, tp: int) -> Param:
    """One logical parameter from its (tp, ep) shards: concatenate TP slices, keep the rest as replicas."""
    expert = names.is_expert(name)
    etp = int(getattr(args, "expert_tensor_parallel_size", None) or tp) if expert else tp
    ep_ranks = sorted({e for _t, e in shards})
    primary = {t: ref for (t, e), ref in shards.items() if e == ep_ranks[0]}
    replicas = [(f"tp{t} ep{e}", ref) for (t, e), ref in sorted(shards.items()) if e != ep_ranks[0]]
    dim = names.tp_split_dim(name) if etp > 1 else None
    if dim is None or len(primary) == 1:
        refs = [primary[t] for t in sorted(primary)]
        return whole(name, refs[0], [(f"tp{t} ep{ep_ranks[0]}", primary[t]) for t in sorted(primary)[1:]] + replicas)
    refs = [require_contiguous(primary[t], name) for t in sorted(primary)]
    shape = list(refs[0].shape)
    if any(r.shape != refs[0].shape for r in refs) or len(shape) <= dim:
        raise MsprobeError(f"{refs[0].path}: TP shards of '{name}' have shapes {[list(r.shape) for r in refs]}")
    gated = _gated(args)
    pieces = []
    for t, ref in enumerate(refs):
        if dim == 0 and gated and names.is_gated_fc1(name):
            # Each rank holds [gate_t; up_t]: the logical tensor is [gate_0..gate_n; up_0..up_n].
            half = shape[0] // 2
            pieces.append(Piece(rows_of(ref, 0, half), (t * half,) + (0,) * (len(shape) - 1)))
            pieces.append(Piece(rows_of(ref, half, half), (len(refs) * half + t * half,) + (0,) * (len(shape) - 1)))
            continue
        start = [0] * len(shape)
        start[dim] = t * shape[dim]
        pieces.append(Piece(ref, tuple(start)))
    shape[dim] *= len(refs)
    guess = GUESSED_FC1 if dim == 0 and gated is None and names.is_gated_fc1(name) else ""
    return check_tiling(Param(name, tuple(shape), refs[0].dtype, pieces, replicas, guess))


def _gated(args: Any) -> Optional[bool]:
    """Whether linear_fc1 is [gate; up] (SwiGLU); None when the checkpoint does not say."""
    known = [getattr(args, key) for key in ("swiglu", "gated_linear_unit") if args is not None and hasattr(args, key)]
    return any(bool(value) for value in known) if known else None
