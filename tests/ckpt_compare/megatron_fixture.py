"""Write real Megatron checkpoints of a tiny megatron-core GPTModel on CPU (run as a script, under a timeout).

python megatron_fixture.py OUT

OUT/core_tp1        single-process save of GPTModel.state_dict() in Megatron's layout (mp_rank_00)
OUT/dist            megatron.core.dist_checkpointing.save (torch_dist) of the same model
OUT/real_tp2pp2     4 gloo processes, TP2 x PP2: each builds its GPTModel stage, loads OUT/dist with
                    megatron's own resharding (dist_checkpointing.load), saves its rank's state_dict
OUT/real_dist_tp2pp2  the same 4 processes save torch_dist (chunks split by TP and PP)
OUT/real_pp2_vpp2   2 gloo processes, PP2 x VPP2 (model0 / model1 chunks), loaded from OUT/dist likewise
OUT/moe_tp1         a MoE GPTModel (4 experts, SequentialMLP), single process; OUT/moe_dist its torch_dist
OUT/full.pt         {name: tensor} of both models (TP1, mcore names) and the partition_dim of every parameter
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

HIDDEN, HEADS, GROUPS, FFN, VOCAB, LAYERS = 64, 8, 4, 96, 256, 4


def _cpu_patches() -> None:
    # dist_checkpointing calls CUDA helpers even for CPU tensors; on a CPU-only torch they must be no-ops.
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.current_device = lambda: "cpu"


def _init(rank: int, world: int, tp: int, pp: int, init_file: str, vpp=None) -> None:
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    from megatron.core import parallel_state
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                                             virtual_pipeline_model_parallel_size=vpp)
    _cpu_patches()


def build(moe: bool = False, vp_stage=None):
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig
    torch.manual_seed(1234)
    extra = dict(num_moe_experts=4, moe_router_topk=2) if moe else {}
    config = TransformerConfig(num_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
                               num_query_groups=GROUPS, ffn_hidden_size=FFN, gated_linear_unit=True,
                               activation_func=F.silu, add_bias_linear=True, normalization="RMSNorm",
                               use_cpu_initialization=True, params_dtype=torch.float32,
                               pipeline_dtype=torch.float32,
                               tensor_model_parallel_size=parallel_state.get_tensor_model_parallel_world_size(),
                               pipeline_model_parallel_size=parallel_state.get_pipeline_model_parallel_world_size(),
                               virtual_pipeline_model_parallel_size=parallel_state.get_virtual_pipeline_model_parallel_world_size(),
                               **extra)
    spec = get_gpt_layer_local_spec(num_experts=4 if moe else None, normalization="RMSNorm")
    return GPTModel(config, spec, vocab_size=VOCAB, max_sequence_length=32, position_embedding_type="rope",
                    share_embeddings_and_output_weights=False,
                    pre_process=parallel_state.is_pipeline_first_stage(ignore_virtual=False, vp_stage=vp_stage),
                    post_process=parallel_state.is_pipeline_last_stage(ignore_virtual=False, vp_stage=vp_stage),
                    vp_stage=vp_stage)


def megatron_args(tp: int = 1, pp: int = 1, moe: bool = False) -> argparse.Namespace:
    from megatron.core.transformer.enums import AttnBackend
    return argparse.Namespace(num_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
                              num_query_groups=GROUPS, group_query_attention=True, ffn_hidden_size=FFN,
                              swiglu=True, untie_embeddings_and_output_weights=True, padded_vocab_size=VOCAB,
                              tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                              expert_model_parallel_size=1, num_experts=4 if moe else None,
                              params_dtype=torch.float32, attention_backend=AttnBackend.auto)


def save_rank(folder: Path, model, args) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"args": args, "checkpoint_version": 3.0, "iteration": 5, "model": model.state_dict(),
                "rng_state": [{"torch_rng_state": torch.get_rng_state()}]}, folder / "model_optim_rng.pt")


def tracker(root: Path) -> None:
    (root / "latest_checkpointed_iteration.txt").write_text("5")


def single(out: Path) -> None:
    from megatron.core import dist_checkpointing
    from msprobe.ckpt_compare.writer import split_dims_of
    _init(0, 1, 1, 1, str(out / "pg_single"))
    model = build()
    save_rank(out / "core_tp1" / "iter_0000005" / "mp_rank_00", model, megatron_args())
    tracker(out / "core_tp1")
    (out / "dist" / "iter_0000005").mkdir(parents=True)
    dist_checkpointing.save({"model": model.sharded_state_dict(), "args": megatron_args(), "iteration": 5},
                            str(out / "dist" / "iter_0000005"))
    tracker(out / "dist")
    moe = build(moe=True)
    save_rank(out / "moe_tp1" / "iter_0000005" / "mp_rank_00", moe, megatron_args(moe=True))
    tracker(out / "moe_tp1")
    (out / "moe_dist" / "iter_0000005").mkdir(parents=True)
    dist_checkpointing.save({"model": moe.sharded_state_dict(), "args": megatron_args(moe=True)},
                            str(out / "moe_dist" / "iter_0000005"))
    tracker(out / "moe_dist")
    full = {k: v for k, v in model.state_dict().items() if isinstance(v, torch.Tensor)}
    full_moe = {k: v for k, v in moe.state_dict().items() if isinstance(v, torch.Tensor)}
    torch.save({"dense": full, "dense_dims": split_dims_of(model), "moe": full_moe, "moe_dims": split_dims_of(moe)},
               out / "full.pt")


def real_rank(rank: int, world: int, tp: int, pp: int, out: str) -> None:
    from megatron.core import dist_checkpointing, parallel_state
    _init(rank, world, tp, pp, f"{out}/pg_real")
    model = build()
    loaded = dist_checkpointing.load({"model": model.sharded_state_dict()}, f"{out}/dist/iter_0000005",
                                     validate_access_integrity=False)
    model.load_state_dict(loaded["model"], strict=False)
    t, p = parallel_state.get_tensor_model_parallel_rank(), parallel_state.get_pipeline_model_parallel_rank()
    save_rank(Path(out) / "real_tp2pp2" / "iter_0000005" / f"mp_rank_{t:02d}_{p:03d}", model, megatron_args(tp, pp))
    torch.distributed.barrier()
    dist_dir = Path(out) / "real_dist_tp2pp2" / "iter_0000005"
    if rank == 0:
        dist_dir.mkdir(parents=True)
    torch.distributed.barrier()
    dist_checkpointing.save({"model": model.sharded_state_dict(), "args": megatron_args(tp, pp)}, str(dist_dir))
    torch.distributed.barrier()


def real_vpp_rank(rank: int, world: int, out: str) -> None:
    """PP2 x VPP2 on 2 processes: each holds two model chunks, saved as model0 / model1."""
    from megatron.core import dist_checkpointing
    _init(rank, world, 1, 2, f"{out}/pg_vpp", vpp=2)
    chunks = [build(vp_stage=v) for v in range(2)]
    sharded = {f"model{v}": chunk.sharded_state_dict() for v, chunk in enumerate(chunks)}
    loaded = dist_checkpointing.load(sharded, f"{out}/dist/iter_0000005", validate_access_integrity=False)
    for v, chunk in enumerate(chunks):
        chunk.load_state_dict(loaded[f"model{v}"], strict=False)
    args = megatron_args(1, 2)
    args.virtual_pipeline_model_parallel_size = 2
    folder = Path(out) / "real_pp2_vpp2" / "iter_0000005" / f"mp_rank_00_{rank:03d}"
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"args": args, "checkpoint_version": 3.0, "iteration": 5,
                **{f"model{v}": chunk.state_dict() for v, chunk in enumerate(chunks)}}, folder / "model_optim_rng.pt")
    torch.distributed.barrier()


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    if len(sys.argv) > 2 and sys.argv[2] == "--real":
        torch.multiprocessing.spawn(real_rank, args=(4, 2, 2, str(out)), nprocs=4, join=True)
        tracker(out / "real_tp2pp2")
        tracker(out / "real_dist_tp2pp2")
        torch.multiprocessing.spawn(real_vpp_rank, args=(2, str(out)), nprocs=2, join=True)
        tracker(out / "real_pp2_vpp2")
    else:
        single(out)
    os.sync()


if __name__ == "__main__":
    main()
