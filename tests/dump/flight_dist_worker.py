"""Run by torchrun in test_flight_recorder_distributed.py: data-parallel training of the tiny Llama of
flight_runs.py (gloo on the CPU, the gradients all-reduced after each backward), a NaN planted on rank 1 only,
run in each rank without the recorder, with it, and with it but no ``step(grad_norm=...)`` (under
``<dump_path>-no-grad-norm``); each rank writes its losses, its triggers and whether its weights came out
bit-identical to ``<dump_path>.rank<R>.json``."""
import json
from dataclasses import asdict
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from flight_runs import same_params, train


def all_reduce_gradients(model: torch.nn.Module) -> None:
    for parameter in model.parameters():
        if parameter.grad is not None:
            dist.all_reduce(parameter.grad)
            parameter.grad /= dist.get_world_size()


def main() -> None:
    out, steps, at, options = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    fault = "nan" if rank == 1 else None
    off = train(None, steps, fault, at, sync=all_reduce_gradients)
    dist.barrier()
    on = train(out, steps, fault, at, options, sync=all_reduce_gradients)
    dist.barrier()
    # without step(grad_norm=...): rank 0 sees the NaN only in its forward, through its weights, a step later
    no_norm = train(Path(f"{out}-no-grad-norm"), steps, fault, at, options, sync=all_reduce_gradients,
                    give_grad_norm=False)
    dist.barrier()
    identical = same_params(on, off)
    report = {"off": [repr(x) for x in off.losses], "on": [repr(x) for x in on.losses], "params_identical": identical,
              "triggers": [asdict(t) for t in on.kept["debugger"].triggers()],
              "no_grad_norm": {"losses": [repr(x) for x in no_norm.losses],
                               "triggers": [asdict(t) for t in no_norm.kept["debugger"].triggers()]}}
    Path(f"{out}.rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
