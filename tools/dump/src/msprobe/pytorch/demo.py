"""``msprobe demo`` part ``dump``: train the built-in tiny transformer with a statistics mix dump."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from msprobe.schema import find_rank_dirs

from . import PrecisionDebugger, seed_all
from .tiny_model import TinyTransformer, make_batch, train_step

STEPS = 3


def run(ctx: Any) -> str:
    """Returns the dump path (``ctx.results["dump"]`` for later parts)."""
    ctx.only("pytorch")
    dump_path = Path(ctx.out_dir) / "dump"
    seed_all(1234)
    model = TinyTransformer()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    debugger = PrecisionDebugger(task="statistics", level="mix", dump_path=str(dump_path))
    for step in range(STEPS):
        tokens, targets = make_batch(seed=step)
        debugger.start(model=model)
        loss = train_step(model, optimizer, tokens, targets)
        debugger.stop()
        debugger.step()
        ctx.say(f"step {step}: loss {loss:.4f}")
    debugger.flush()
    ranks = find_rank_dirs(dump_path)
    entries = sum(len(r.load_dump().data) for r in ranks)
    ctx.say(f"statistics mix dump of {STEPS} steps: {entries} entries in {len(ranks)} rank directories "
            f"under {dump_path}")
    return str(dump_path)


run.order = 10
