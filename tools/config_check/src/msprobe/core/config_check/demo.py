"""``msprobe demo`` part: pack one environment twice with one difference each, compare, show the summary."""
from __future__ import annotations

import os
from typing import Any, Dict

from . import formats
from .collect import static_entries
from .compare import compare_packs
from .masking import Masker
from .results import RESULT_FILE

_SCRIPT = """#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPT_ARGS="--num-layers 2 --hidden-size 64 --lr {lr} --bf16 --train-iters 10"
torchrun --nproc_per_node 2 pretrain_gpt.py $GPT_ARGS --seed 1234
"""


def run(ctx: Any) -> Dict[str, str]:
    """Two static packs: the second sets NCCL_ALGO and a different --lr; the comparison flags both."""
    folder = ctx.out_dir / "config_check"
    folder.mkdir(parents=True, exist_ok=True)
    packs = {}
    for side, lr, extra in (("bench", "1e-4", {}), ("cmp", "2e-4", {"NCCL_ALGO": "Tree"})):
        script = folder / f"train_{side}.sh"
        script.write_text(_SCRIPT.format(lr=lr))
        environ = {k: v for k, v in os.environ.items() if k != "NCCL_ALGO"}
        environ.update(extra)
        packs[side] = folder / f"{side}_pack.zip"
        formats.write_zip(packs[side], static_entries([script], Masker(), environ))
        ctx.say(f"packed {packs[side].name} (--lr {lr}{', NCCL_ALGO=Tree' if extra else ''})")
    result = folder / "config_check_result"
    compare_packs(packs["bench"], packs["cmp"], result, quiet=True)
    ctx.say(f"report: {result / RESULT_FILE} (env and hyperparameters are 'error', as expected)")
    return {"bench": str(packs["bench"]), "cmp": str(packs["cmp"]), "result": str(result)}


run.order = 40  # type: ignore[attr-defined]
