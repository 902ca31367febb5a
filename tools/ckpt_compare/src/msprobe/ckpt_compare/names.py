"""Parameter names: legacy / TransformerEngine / MindSpeed spellings → megatron-core names, and TP rules.

Every checkpoint is brought to megatron-core names with *global* layer and expert numbers, so a
legacy checkpoint and an mcore checkpoint of the same model meet parameter by parameter.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

# Ordered (pattern, replacement) rewrites; applied once each, in order.
_REWRITES = [
    (r"^language_model\.embedding\.", "embedding."),
    (r"^language_model\.encoder\.", "decoder."),
    (r"^language_model\.output_layer\.", "output_layer."),
    (r"^word_embeddings_for_head\.", "output_layer."),
    (r"^language_model\.", ""),
    (r"^module\.", ""),
    (r"\.input_norm\.", ".input_layernorm."),
    (r"\.self_attention\.query_key_value\.", ".self_attention.linear_qkv."),
    (r"\.self_attention\.dense\.", ".self_attention.linear_proj."),
    (r"\.post_attention_(norm|layernorm)\.", ".pre_mlp_layernorm."),
    (r"\.mlp\.dense_h_to_4h\.", ".mlp.linear_fc1."),
    (r"\.mlp\.dense_4h_to_h\.", ".mlp.linear_fc2."),
    (r"\.mlp\.local_experts\.", ".mlp.experts.local_experts."),
    (r"^decoder\.final_norm\.", "decoder.final_layernorm."),
    # TransformerEngine fuses the norm into the following linear layer.
    (r"\.self_attention\.linear_qkv\.layer_norm_(weight|bias)$", r".input_layernorm.\1"),
    (r"\.mlp\.linear_fc1\.layer_norm_(weight|bias)$", r".pre_mlp_layernorm.\1"),
]
_COMPILED = [(re.compile(p), r) for p, r in _REWRITES]

COLUMN = 0
ROW = 1
_COLUMN_PARALLEL = re.compile(r"(word_embeddings\.weight|^output_layer\.weight|linear_qkv\.(weight|bias)"
                              r"|linear_fc1\.(weight|bias)|linear_q(_up)?_proj\.weight|linear_kv_up_proj\.weight)$")
_ROW_PARALLEL = re.compile(r"(linear_proj\.weight|linear_fc2\.weight)$")
_LAYER = re.compile(r"^decoder\.layers\.(\d+)\.")
_EXPERT = re.compile(r"\.experts\.local_experts\.(\d+)\.")


def skipped(name: str) -> bool:
    """Entries that are not model weights (TE/fp8 extra state, rotary caches)."""
    return name.endswith("._extra_state") or "_extra_state" in name or name.endswith("inv_freq")


def normalise(name: str) -> str:
    for pattern, replacement in _COMPILED:
        name = pattern.sub(replacement, name, count=1)
    return name


def tp_split_dim(name: str) -> Optional[int]:
    """Axis a tensor-parallel rank holds a slice of (0 column-parallel, 1 row-parallel), None = replicated."""
    if _COLUMN_PARALLEL.search(name):
        return COLUMN
    if _ROW_PARALLEL.search(name):
        return ROW
    return None


def is_gated_fc1(name: str) -> bool:
    return name.endswith("linear_fc1.weight") or name.endswith("linear_fc1.bias")


def is_expert(name: str) -> bool:
    return _EXPERT.search(name) is not None


def local_layer(name: str) -> Optional[int]:
    found = _LAYER.match(name)
    return int(found.group(1)) if found else None


def with_layer(name: str, layer: int) -> str:
    return _LAYER.sub(f"decoder.layers.{layer}.", name, count=1)


def local_expert(name: str) -> Optional[int]:
    found = _EXPERT.search(name)
    return int(found.group(1)) if found else None


def with_expert(name: str, expert: int) -> str:
    return _EXPERT.sub(f".experts.local_experts.{expert}.", name, count=1)


def sort_key(name: str) -> Tuple:
    """Natural order: layer 10 after layer 9."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))
