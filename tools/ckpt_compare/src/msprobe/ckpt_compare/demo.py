"""``msprobe demo`` part: one tiny GPT's checkpoint saved in two parallel layouts, then compared."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional

from .cli import write_json
from .compare import run as compare_run
from .compare import summary
from .options import CompareOptions

if TYPE_CHECKING:
    import torch

HIDDEN, HEADS, GROUPS, FFN, VOCAB, LAYERS = 32, 4, 2, 48, 128, 4


def tiny_gpt(seed: int = 0) -> Dict[str, torch.Tensor]:
    """A megatron-core GPT state dict (GQA attention, SwiGLU MLP, RMSNorm), full size (TP1)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    head = HIDDEN // HEADS
    qkv_rows = (HEADS + 2 * GROUPS) * head
    state = {"embedding.word_embeddings.weight": torch.randn(VOCAB, HIDDEN, generator=gen) * 0.02}
    for i in range(LAYERS):
        p = f"decoder.layers.{i}."
        state[p + "input_layernorm.weight"] = torch.ones(HIDDEN)
        state[p + "self_attention.linear_qkv.weight"] = torch.randn(qkv_rows, HIDDEN, generator=gen) * 0.02
        state[p + "self_attention.linear_proj.weight"] = torch.randn(HIDDEN, HEADS * head, generator=gen) * 0.02
        state[p + "pre_mlp_layernorm.weight"] = torch.ones(HIDDEN)
        state[p + "mlp.linear_fc1.weight"] = torch.randn(2 * FFN, HIDDEN, generator=gen) * 0.02
        state[p + "mlp.linear_fc2.weight"] = torch.randn(HIDDEN, FFN, generator=gen) * 0.02
    state["decoder.final_layernorm.weight"] = torch.ones(HIDDEN)
    state["output_layer.weight"] = torch.randn(VOCAB, HIDDEN, generator=gen) * 0.02
    return state


def args() -> argparse.Namespace:
    return argparse.Namespace(num_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
                              num_query_groups=GROUPS, group_query_attention=True, ffn_hidden_size=FFN,
                              swiglu=True, untie_embeddings_and_output_weights=True, padded_vocab_size=VOCAB)


def run(ctx) -> Optional[Path]:
    # Only writing the demo's checkpoints needs torch (the comparison reads .pt files itself): without it the
    # ImportError skips the part, as msprobe demo skips every part whose module is not installed.
    import torch

    from .writer import write_megatron
    out = Path(ctx.out_dir) / "ckpt_compare"
    out.mkdir(parents=True, exist_ok=True)
    base = tiny_gpt()
    # A "later" checkpoint: one layer moved a little, saved with another parallel layout and legacy names.
    later = dict(base)
    fc1 = base["decoder.layers.2.mlp.linear_fc1.weight"]
    later["decoder.layers.2.mlp.linear_fc1.weight"] = fc1 + 1e-3 * torch.randn(fc1.shape, generator=torch.Generator().manual_seed(1))
    write_megatron(out / "ckpt_tp1", base, args(), iteration=10)
    write_megatron(out / "ckpt_tp2pp2", later, args(), tp=2, pp=2, iteration=20, style="legacy", gated=True)
    ctx.say(f"wrote {out / 'ckpt_tp1'} (TP1, mcore names) and {out / 'ckpt_tp2pp2'} (TP2 x PP2, legacy names)")
    report = compare_run(out / "ckpt_tp1", out / "ckpt_tp2pp2", CompareOptions(progress=False))
    result = out / "ckpt_similarity.json"
    if result.exists():
        result.unlink()
    write_json(report.entries, result)
    for line in summary(report):
        ctx.say(line)
    ctx.say(f"per-parameter l2 / cos in {result}")
    return result


run.order = 50
