"""``msprobe demo`` part ``overflow``: a tiny fp16 model overflows; the online check catches it, the
offline analysis names the node."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .order import analyze_dump
from .report import write_reports


def build_model() -> Any:
    """Two linear layers in fp16 with ``exp`` between them: activations around 20 overflow fp16 (max 65504)."""
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(8, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            hidden = self.fc1(x)
            return self.fc2(torch.exp(hidden))

    class OverflowNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.block(x)

    torch.manual_seed(0)
    model = OverflowNet().half()
    with torch.no_grad():
        model.block.fc1.weight.fill_(0.5)   # x = 5 everywhere -> hidden = 20 -> exp(20) = 4.9e8 > 65504
        model.block.fc1.bias.zero_()
    return model


def run_training(config_path: Path, steps: int = 2) -> None:
    """Train the model with the debugger on, the way a user script does (doc 29 §3)."""
    import torch

    from msprobe.pytorch import PrecisionDebugger

    debugger = PrecisionDebugger(config_path=str(config_path))
    model = build_model()
    x = torch.full((4, 8), 5.0, dtype=torch.float16)
    for _ in range(steps):
        debugger.start(model=model)
        loss = model(x).float().sum()
        loss.backward()
        debugger.stop()
        debugger.step()
    wait = getattr(debugger.engine, "wait", None)  # the step's JSON files are written on the engine's thread
    if wait is not None:
        wait()


def run(ctx: Any) -> str:
    """Online overflow_check on the tiny model, then the offline analysis of what it wrote."""
    ctx.only("pytorch")
    import torch  # noqa: F401  (without torch the demo skips the part here, before it writes anything)
    base = Path(ctx.out_dir) / "overflow"
    base.mkdir(parents=True, exist_ok=True)
    dump_path = base / "dump"
    config = {"task": "overflow_check", "dump_path": str(dump_path), "rank": [], "step": [], "level": "mix",
              "overflow_check": {"overflow_nums": 1}}
    config_path = base / "config.json"
    config_path.write_text(json.dumps(config, indent=1))
    run_training(config_path)
    results = analyze_dump(dump_path)
    reports = write_reports(results, base / "analysis")
    origin = next((r.origin for r in results if r.origin is not None), None)
    if origin is None:
        ctx.say("online overflow_check kept nothing: no overflow found (unexpected for this model)")
        return str(dump_path)
    chain = " <- ".join(origin.construct_info) or "-"
    ctx.say(f"online overflow_check wrote {dump_path}")
    where = origin.rank.label if origin.rank.rank is not None else "the single (non-distributed) rank"
    ctx.say(f"overflow found on {where}: {origin.op_name} (module chain: {chain})")
    for path in reports:
        ctx.say(f"analysis: {path}")
    return str(dump_path)


run.order = 30
