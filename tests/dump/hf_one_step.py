"""One AdamW training step of a tiny HF Llama (step 0) and of a tiny Mixtral (step 1), built from configs with
random weights, under ``PrecisionDebugger``: whichever msprobe imports (the suite's, or upstream's in its
venv), so both tools dump the same run, at level ``$DUMP_LEVEL``, under ``$MSPROBE_OUT``."""
import json
import os

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, MixtralConfig

from msprobe.pytorch import PrecisionDebugger, seed_all

SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=32)  # GQA: 2 key/value heads for 4 query heads


def model_of(config):
    config._attn_implementation = "eager"  # the attention as Python code, the same for both tools
    return AutoModelForCausalLM.from_config(config)


def main() -> None:
    out, level = os.environ["MSPROBE_OUT"], os.environ["DUMP_LEVEL"]
    torch.set_num_threads(1)
    seed_all(1234)
    models = [model_of(LlamaConfig(**SIZES)),
              model_of(MixtralConfig(num_local_experts=4, num_experts_per_tok=2, **SIZES))]
    config = os.path.join(out, "config.json")
    with open(config, "w") as f:
        json.dump({"task": "statistics", "dump_path": out, "level": level, "step": [0, 1]}, f)
    debugger = PrecisionDebugger(config_path=config)
    ids = torch.randint(0, SIZES["vocab_size"], (2, 8), generator=torch.Generator().manual_seed(0))
    for model in models:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        debugger.start(model=model)
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        debugger.stop()
        debugger.step()


if __name__ == "__main__":
    main()
