"""Write a full (TP1) megatron-core state dict as a Megatron-LM checkpoint of any TP/PP/VPP/EP layout.

Used by the demo, the tests and the benchmark. Re-sharding follows Megatron's partition rules:
``split_dims`` gives each parameter's ``partition_dim`` (tests pass the attributes megatron-core
sets on its parameters; the default is this package's rule table), gated fc1 ranks hold
``[gate_t; up_t]``, layers are renumbered per stage, experts per expert rank.
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import torch

from . import names

_LEGACY = [("self_attention.linear_qkv.", "self_attention.query_key_value."),
           ("self_attention.linear_proj.", "self_attention.dense."), ("input_layernorm.", "input_norm."),
           ("pre_mlp_layernorm.", "post_attention_norm."), ("mlp.linear_fc1.", "mlp.dense_h_to_4h."),
           ("mlp.linear_fc2.", "mlp.dense_4h_to_h.")]
_TE = [(".input_layernorm.weight", ".self_attention.linear_qkv.layer_norm_weight"),
       (".pre_mlp_layernorm.weight", ".mlp.linear_fc1.layer_norm_weight")]


def write_megatron(root: Path, state: Dict[str, torch.Tensor], args: argparse.Namespace, *, tp: int = 1,
                   pp: int = 1, vpp: int = 1, ep: int = 1, iteration: Union[int, str] = 5,
                   stage_layers: Optional[Sequence[int]] = None, style: str = "core",
                   split_dims: Optional[Dict[str, Optional[int]]] = None, gated: bool = False) -> Path:
    """Write ``root/iter_XXXXXXX`` (or ``root/release``) and the tracker; returns ``root``."""
    root = Path(root)
    folder = root / ("release" if iteration == "release" else f"iter_{int(iteration):07d}")
    layers = 1 + max((names.local_layer(n) for n in state if names.local_layer(n) is not None), default=-1)
    counts = list(stage_layers) if stage_layers else [layers // (pp * vpp)] * (pp * vpp)
    if sum(counts) != layers or len(counts) != pp * vpp:
        raise ValueError(f"stage_layers {counts} do not split {layers} layers into {pp * vpp} stages")
    experts = 1 + max((names.local_expert(n) for n in state if names.local_expert(n) is not None), default=-1)
    saved_args = argparse.Namespace(**vars(args))
    saved_args.tensor_model_parallel_size, saved_args.pipeline_model_parallel_size = tp, pp
    saved_args.expert_model_parallel_size = ep
    saved_args.virtual_pipeline_model_parallel_size = vpp if vpp > 1 else None
    for t in range(tp):
        for p in range(pp):
            for e in range(ep):
                chunks = {}
                for v in range(vpp):
                    stage = v * pp + p
                    first = sum(counts[:stage])
                    local = _stage(state, first, counts[stage], stage == 0, stage == pp * vpp - 1,
                                   e, experts // max(ep, 1) if experts else 0)
                    shards = {n: _shard(n, x, t, tp, split_dims, gated) for n, x in local.items()}
                    chunks["model" if vpp == 1 else f"model{v}"] = _restyle(shards, style)
                name = f"mp_rank_{t:02d}" + (f"_{p:03d}" if pp > 1 else "") + (f"_{e:03d}" if ep > 1 else "")
                (folder / name).mkdir(parents=True, exist_ok=True)
                torch.save({"args": saved_args, "checkpoint_version": 3.0, "iteration": iteration, **chunks,
                            "rng_state": [_rng()]}, folder / name / "model_optim_rng.pt")
    (root / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return root


def _stage(state, first: int, count: int, has_embedding: bool, has_head: bool, ep_rank: int, per_rank: int):
    out = {}
    for name, tensor in state.items():
        layer = names.local_layer(name)
        if layer is not None:
            if not first <= layer < first + count:
                continue
            name = names.with_layer(name, layer - first)
        elif name.startswith("embedding."):
            if not has_embedding:
                continue
        elif not has_head:
            continue
        expert = names.local_expert(name)
        if expert is not None:
            if expert // per_rank != ep_rank:
                continue
            name = names.with_expert(name, expert % per_rank)
        out[name] = tensor
    return out


def _shard(name: str, tensor: torch.Tensor, t: int, tp: int, split_dims, gated: bool) -> torch.Tensor:
    dim = split_dims.get(_key(name)) if split_dims is not None else names.tp_split_dim(name)
    if dim is None or tp == 1:
        return tensor.clone()
    if gated and names.is_gated_fc1(name):
        gate, up = torch.chunk(tensor, 2, dim=0)
        return torch.cat([torch.chunk(gate, tp, dim=0)[t], torch.chunk(up, tp, dim=0)[t]], dim=0).clone()
    return torch.chunk(tensor, tp, dim=dim)[t].clone()


def _key(name: str) -> str:
    """Split rules are looked up without layer / expert numbers (they hold for every layer)."""
    name = names.with_layer(name, 0) if names.local_layer(name) is not None else name
    return names.with_expert(name, 0) if names.local_expert(name) is not None else name


def _restyle(shards: Dict[str, torch.Tensor], style: str):
    if style == "core":
        return shards
    if style == "te":
        out = {}
        for name, tensor in shards.items():
            for old, new in _TE:
                name = name.replace(old, new)
            out[name] = tensor
        return out
    if style != "legacy":
        raise ValueError(f"unknown style {style}")
    lm: Dict[str, Dict[str, torch.Tensor]] = {"embedding": {}, "encoder": {}, "output_layer": {}}
    for name, tensor in shards.items():
        if name.startswith("embedding."):
            lm["embedding"][name[len("embedding."):]] = tensor
        elif name.startswith("output_layer."):
            lm["output_layer"][name[len("output_layer."):]] = tensor
        else:
            name = name[len("decoder."):].replace("final_layernorm.", "final_norm.")
            for old, new in _LEGACY:
                name = name.replace(old, new)
            lm["encoder"][name] = tensor
    return {"language_model": {k: v for k, v in lm.items() if v}}


def _rng() -> dict:
    return {"random_rng_state": random.getstate(), "np_rng_state": np.random.get_state(),
            "torch_rng_state": torch.get_rng_state(), "cuda_rng_state": None, "rng_tracker_states": {}}


def split_dims_of(module: torch.nn.Module) -> Dict[str, Optional[int]]:
    """Megatron's own rule: the ``partition_dim`` attribute of each tensor-parallel parameter."""
    out: Dict[str, Optional[int]] = {}
    for name, param in module.named_parameters():
        dim = getattr(param, "partition_dim", None) if getattr(param, "tensor_model_parallel", False) else None
        out[_key(name)] = dim
    return out


def layer_counts(total: int, parts: int) -> List[int]:
    base = [total // parts] * parts
    for i in range(total % parts):
        base[-1 - i] += 1
    return base
