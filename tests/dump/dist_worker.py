"""Run by torchrun in test_distributed.py: a tiny data-parallel step with gloo on CPU."""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

from msprobe.pytorch import PrecisionDebugger


def main() -> None:
    dump_path, ranks = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    kwargs = {"task": "statistics", "level": "mix", "dump_path": dump_path}
    if ranks:
        import json, os
        path = os.path.join(dump_path + "-config.json")
        if rank == 0:
            with open(path, "w") as handle:
                json.dump({"rank": [int(r) for r in ranks.split(",")], **kwargs}, handle)
        dist.barrier()
        debugger = PrecisionDebugger(config_path=path)
    else:
        debugger = PrecisionDebugger(**kwargs)
    for step in range(2):
        debugger.start(model=model)
        x = torch.full((3, 4), float(rank + 1))
        model(x).sum().backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        total = torch.tensor([float(rank)])
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        debugger.stop()
        debugger.step()
    debugger.flush()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
