"""Cost of the online overflow check on a step without overflow, against a statistics dump (CPU, 1 thread).

    python bench/overflow_overhead.py [--steps 15]

Prints the median step time of each mode divided by the median step time without any debugger,
all measured in this one process, interleaved, on the built-in tiny transformer. The issue's target:
"overflow_check L1" <= "statistics L1" (it computes the same statistics and writes nothing).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from msprobe.pytorch import PrecisionDebugger
from msprobe.pytorch.tiny_model import TinyTransformer, make_batch, train_step

MODES = [("statistics L1", "statistics", "L1"), ("overflow_check L1", "overflow_check", "L1"),
         ("statistics mix", "statistics", "mix"), ("overflow_check mix", "overflow_check", "mix")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=15, help="measured steps per mode (more: less noise)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = TinyTransformer()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    tokens, targets = make_batch()
    work = Path(tempfile.mkdtemp(prefix="overflow-bench-"))
    debuggers = {}
    for label, task, level in MODES:
        config = work / f"{task}-{level}.json"
        config.write_text(json.dumps({"task": task, "dump_path": str(work / f"{task}-{level}"), "level": level,
                                      "rank": [], "step": [], task: {"overflow_nums": -1} if task == "overflow_check"
                                      else {"summary_mode": "statistics"}}))
        debuggers[label] = PrecisionDebugger(config_path=str(config))
    times = {label: [] for label in ["no debugger"] + [m[0] for m in MODES]}
    for _ in range(args.steps):
        for label in times:
            debugger = debuggers.get(label)
            started = time.perf_counter()
            if debugger is not None:
                debugger.start(model=model)
            train_step(model, optimizer, tokens, targets)
            if debugger is not None:
                debugger.stop()
                debugger.step()
            times[label].append(time.perf_counter() - started)
    base = statistics.median(times["no debugger"])
    for label, values in times.items():
        print(f"{label:20s} {statistics.median(values) / base:6.2f}x")


if __name__ == "__main__":
    main()
