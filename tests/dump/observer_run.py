"""Trains a tiny model 3 AdamW steps without the dump and then under it in several modes, in one process, and
writes what each run ended with: the losses, and a SHA-256 of every gradient of every step and of every
parameter after the last one (test_observer_models.py compares them byte for byte).

    python observer_run.py SPEC.json OUT.json        (under torchrun: OUT.json gets the rank's number)

SPEC: {"model": one of MODELS, "modes": [{"level", "task", "summary_mode", "async_dump", "all_apis", "nested"}...],
"autocast": bool, "checkpointing": bool, "ddp": bool}. Every run starts from the same weights, with the same
batches and the same seeds (dropout draws the same masks), so any difference is the dump's.
Models come from small configs with random weights (no download).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import torch

STEPS = 3
SEQ, BATCH, VOCAB = 8, 2, 64
SIZES = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)


def _llama():
    from transformers import AutoModelForCausalLM, LlamaConfig
    return AutoModelForCausalLM.from_config(LlamaConfig(vocab_size=VOCAB, num_key_value_heads=2,
                                                        max_position_embeddings=32, **SIZES))


def _mixtral():
    from transformers import AutoModelForCausalLM, MixtralConfig
    return AutoModelForCausalLM.from_config(MixtralConfig(vocab_size=VOCAB, num_key_value_heads=2, num_local_experts=4,
                                                          num_experts_per_tok=2, max_position_embeddings=32, **SIZES))


def _qwen2_moe():
    from transformers import AutoModelForCausalLM, Qwen2MoeConfig
    return AutoModelForCausalLM.from_config(Qwen2MoeConfig(vocab_size=VOCAB, num_key_value_heads=2, num_experts=4,
                                                           num_experts_per_tok=2, moe_intermediate_size=32,
                                                           shared_expert_intermediate_size=32,
                                                           max_position_embeddings=32, **SIZES))


def _gpt2():
    from transformers import AutoModelForCausalLM, GPT2Config
    return AutoModelForCausalLM.from_config(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                                                       n_positions=32))


def _bert():
    from transformers import AutoModelForMaskedLM, BertConfig
    return AutoModelForMaskedLM.from_config(BertConfig(vocab_size=VOCAB, max_position_embeddings=32, **SIZES))


def _t5():
    from transformers import AutoModelForSeq2SeqLM, T5Config
    return AutoModelForSeq2SeqLM.from_config(T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                                      num_heads=4, decoder_start_token_id=0))


def _hf_loss(model, ids):
    return model(input_ids=ids, labels=ids).loss


class _Megatron(torch.nn.Module):
    """megatron-core's GPTModel (local spec, no Transformer Engine) on the CPU, one gloo process."""

    def __init__(self) -> None:
        super().__init__()
        import torch.nn.functional as F
        from megatron.core.models.gpt import GPTModel
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.transformer_config import TransformerConfig
        config = TransformerConfig(num_layers=2, hidden_size=32, num_attention_heads=4, num_query_groups=2,
                                   ffn_hidden_size=64, gated_linear_unit=True, activation_func=F.silu,
                                   normalization="RMSNorm", use_cpu_initialization=True,
                                   params_dtype=torch.float32, pipeline_dtype=torch.float32)
        self.gpt = GPTModel(config, get_gpt_layer_local_spec(normalization="RMSNorm"), vocab_size=VOCAB,
                            max_sequence_length=32, position_embedding_type="rope")

    def forward(self, ids):
        position_ids = torch.arange(ids.shape[1]).unsqueeze(0).expand_as(ids)
        mask = torch.ones(1, 1, ids.shape[1], ids.shape[1], dtype=torch.bool).triu(1)
        return self.gpt(ids, position_ids, mask, labels=ids).mean()


def _megatron():
    import torch.distributed as dist
    from megatron.core import parallel_state
    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method=f"file://{tempfile.mktemp()}", rank=0, world_size=1)
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(1, 1)
    # megatron asks CUDA for the device of its rotary tables (as tests/ckpt_compare/megatron_fixture.py patches)
    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.synchronize = lambda *a, **k: None
    from megatron.core.tensor_parallel import random as megatron_random
    # its attention's dropout draws from a CUDA generator forked by name: here the CPU's (seeded) is used
    megatron_random.get_cuda_rng_tracker().fork = lambda *args, **kwargs: contextlib.nullcontext()
    return _Megatron()


MODELS: Dict[str, Tuple[Callable[[], torch.nn.Module], Callable]] = {
    "llama": (_llama, _hf_loss), "mixtral": (_mixtral, _hf_loss), "qwen2_moe": (_qwen2_moe, _hf_loss),
    "gpt2": (_gpt2, _hf_loss), "bert": (_bert, _hf_loss), "t5": (_t5, _hf_loss),
    "megatron_gpt": (_megatron, lambda model, ids: model(ids)),
}


def _sha(tensor: torch.Tensor) -> str:
    return hashlib.sha256(tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()).hexdigest()


def train(build: Callable, weights, loss_of: Callable, batches, spec: Dict[str, Any], mode, work: Path) -> Dict[str, Any]:
    """3 steps of a model made by ``build`` with ``weights``, under the dump in ``mode`` (None: without it)."""
    from msprobe.pytorch import PrecisionDebugger

    torch.manual_seed(1234)
    model = build()  # (a deep copy cannot copy Megatron's process groups)
    model.load_state_dict(weights)
    model.train()
    if spec.get("checkpointing"):
        model.gradient_checkpointing_enable()
    trained = model
    if spec.get("ddp"):
        trained = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    debugger = None
    if mode is not None:
        config = work / "config.json"
        task = mode["task"]
        block = {"summary_mode": mode["summary_mode"]} if mode.get("summary_mode") else {}
        config.write_text(json.dumps({"task": task, "level": mode["level"], "dump_path": str(work / "dump"),
                                      "async_dump": bool(mode.get("async_dump")), task: block,
                                      "record_all_apis": bool(mode.get("all_apis")),
                                      "record_nested": bool(mode.get("nested"))}))
        debugger = PrecisionDebugger(config_path=str(config))
    torch.manual_seed(1)  # dropout's masks, the same in every run
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if spec.get("autocast") else contextlib.nullcontext
    done: Dict[str, Any] = {"loss": [], "grads": []}
    for ids in batches:
        if debugger is not None:
            debugger.start(model=trained)
        with autocast():
            loss = loss_of(trained, ids)
        loss.backward()
        done["loss"].append(float(loss.detach()).hex())
        done["grads"].append({name: _sha(p.grad) for name, p in model.named_parameters() if p.grad is not None})
        optimizer.step()
        optimizer.zero_grad()
        if debugger is not None:
            debugger.stop()
            debugger.step()
    if debugger is not None:
        debugger.flush()
        data = [json.loads(path.read_text())["data"] for path in (work / "dump").rglob("dump.json")]
        done["entries"] = sum(len(entries) for entries in data)  # (so that a dump recording nothing shows)
        done["backward"] = sum(1 for entries in data for name in entries if ".backward" in name)
    done["params"] = {name: _sha(p) for name, p in model.named_parameters()}
    return done


def _label(mode) -> str:
    return "undumped" if mode is None else "-".join(str(mode.get(k)) for k in ("task", "level", "summary_mode",
                                                                                "async_dump", "all_apis", "nested"))


def main(spec_path: str, out_path: str) -> None:
    torch.set_num_threads(1)
    spec = json.loads(Path(spec_path).read_text())
    rank = 0
    if spec.get("ddp"):
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        out_path = f"{out_path}.rank{rank}"
    build, loss_of = MODELS[spec["model"]]
    torch.manual_seed(1234)
    weights = {name: value.clone() if isinstance(value, torch.Tensor) else value
               for name, value in build().state_dict().items()}  # (Megatron keeps extra state: None)
    generator = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    batches = [torch.randint(1, VOCAB, (BATCH, SEQ), generator=generator) for _ in range(STEPS)]
    runs = {}
    root = Path(tempfile.mkdtemp(prefix="observer-"))
    for i, mode in enumerate([None] + spec["modes"]):
        work = root / str(i)
        work.mkdir()
        runs[_label(mode)] = train(build, weights, loss_of, batches, spec, mode, work)
    Path(out_path).write_text(json.dumps(runs))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
