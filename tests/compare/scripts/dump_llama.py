"""Dump one training step of a tiny HuggingFace Llama (random weights from a config, no download); runs under
our msprobe or upstream's.

Environment: MSPROBE_OUT (dump path), DUMP_LEVEL (L0 | L1 | mix), DUMP_TASK (statistics | tensor),
PLANTS: comma-separated, one dumped step each (``step0``, ``step1``...), every step from the same fresh model
and batch: ``none`` (the reference), ``bf16`` (layer 1's MLP under bfloat16 autocast) or ``weight``
(``model.layers.1.mlp.down_proj.weight[0, 0]`` plus 0.05) or ``seed`` (other initial weights). Default ``none``.
"""
import os

import torch
from msprobe.pytorch import PrecisionDebugger, seed_all
from transformers import LlamaConfig, LlamaForCausalLM

PLANTED_PARAMETER = "model.layers.1.mlp.down_proj.weight"


def build(seed=1234):
    seed_all(seed)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    model = LlamaForCausalLM(config)
    torch.manual_seed(0)
    tokens = torch.randint(0, config.vocab_size, (2, 8))
    return model, tokens


def plant(model, how):
    if how == "weight":
        with torch.no_grad():
            model.get_parameter(PLANTED_PARAMETER)[0, 0] += 0.05
    elif how == "bf16":
        mlp = model.model.layers[1].mlp
        forward = mlp.forward

        def autocast_forward(x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return forward(x)
        mlp.forward = autocast_forward


def main():
    debugger = PrecisionDebugger(task=os.environ.get("DUMP_TASK", "statistics"),
                                 level=os.environ.get("DUMP_LEVEL", "mix"), dump_path=os.environ["MSPROBE_OUT"])
    for how in os.environ.get("PLANTS", "none").split(","):
        model, tokens = build(4321 if how == "seed" else 1234)
        plant(model, how)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        debugger.start(model=model)
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        debugger.stop()
        debugger.step()


if __name__ == "__main__":
    main()
