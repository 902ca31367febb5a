"""Run by torchrun (2 ranks, gloo): rank 1 overflows first, rank 0 receives inf through all_reduce."""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist

from msprobe.pytorch import PrecisionDebugger


def main(dump_path: str, task: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    debugger = PrecisionDebugger(task=task, dump_path=dump_path, level="L1")
    debugger.start()
    x = torch.ones(4) * (rank + 1)
    dist.all_reduce(x)                              # collective 0: finite everywhere
    if rank == 1:
        x = torch.exp(x * 100)                      # exp(300) overflows float32 -> inf on rank 1 only
    else:
        x = torch.mul(x, 2)
    dist.all_reduce(x)                              # collective 1: rank 0 receives inf
    y = torch.add(x, 1)
    debugger.stop()
    debugger.step()
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} done, y finite: {bool(torch.isfinite(y).all())}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
