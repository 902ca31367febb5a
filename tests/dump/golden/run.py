"""A fixed dump of the tiny transformer in each mode, for the byte-identity test (test_golden.py).

``python run.py OUT MODE``: OUT/<mode>/step{0,1}/rank/... as the dump tool writes them. The files under
``data/`` were written by this script with the code before the dump-core redesign; the test runs it
again and compares every file (stack.json after the checkout's and the interpreter's paths are cut).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from msprobe.pytorch import PrecisionDebugger, seed_all
from msprobe.pytorch.tiny_model import TinyTransformer, make_batch, train_step

MODES = {
    "statistics-L0": dict(task="statistics", level="L0"),
    "statistics-L1": dict(task="statistics", level="L1"),
    "statistics-mix": dict(task="statistics", level="mix"),
    "md5-mix": dict(task="statistics", level="mix", summary_mode="md5"),
    "tensor-L1": dict(task="tensor", level="L1"),
}


def run(out: str, mode: str) -> None:
    options = dict(MODES[mode])
    block = {"summary_mode": options.pop("summary_mode")} if "summary_mode" in options else {}
    config = Path(out) / f"{mode}.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"task": options["task"], "level": options["level"],
                                  "dump_path": f"{out}/{mode}", "step": [0, 1], options["task"]: block}))
    seed_all(7)
    torch.set_num_threads(1)
    model = TinyTransformer(layers=1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens, targets = make_batch(batch=2, seq=8, seed=3)
    debugger = PrecisionDebugger(config_path=str(config))
    for _ in range(2):
        debugger.start(model=model)
        train_step(model, optimizer, tokens, targets)
        debugger.stop()
        debugger.step()
    debugger.flush()


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
