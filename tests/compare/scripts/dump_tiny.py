"""Dump one training step of the suite's tiny transformer; runs under our msprobe or upstream's.

Environment: MSPROBE_OUT (dump path), DUMP_TASK (statistics | tensor | md5), DUMP_LEVEL (L0 | L1 | mix),
PLANT=tanh (layer 1's MLP uses tanh-approximate gelu: the planted divergence), PLANT_RANK (under
torchrun: plant on that rank only; gradients are all-reduced), TINY_MODEL (path of tiny_model.py, for an
interpreter where the suite is not installed), DUMP_STEPS (steps to run).
"""
import glob
import importlib.util
import os
import shutil

import torch
import torch.nn.functional as F
from msprobe.pytorch import PrecisionDebugger, seed_all


def tiny_model_module():
    path = os.environ.get("TINY_MODEL")
    if not path:
        from msprobe.pytorch import tiny_model
        return tiny_model
    spec = importlib.util.spec_from_file_location("tiny_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plant(model):
    mlp = model.blocks[1].mlp
    mlp.forward = lambda x: mlp.fc2(F.gelu(mlp.fc1(x), approximate="tanh"))


def main():
    tm = tiny_model_module()
    rank = None
    if "WORLD_SIZE" not in os.environ:  # one process: a second run starts afresh (a dump never overwrites)
        for step in glob.glob(os.path.join(glob.escape(os.environ["MSPROBE_OUT"]), "step*")):
            shutil.rmtree(step)
    if "WORLD_SIZE" in os.environ:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
    seed_all(1234)
    model = tm.TinyTransformer()
    planted_rank = os.environ.get("PLANT_RANK")
    if os.environ.get("PLANT") == "tanh" and (planted_rank is None or int(planted_rank) == rank):
        plant(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    task = os.environ.get("DUMP_TASK", "statistics")
    summary = "md5" if task == "md5" else "statistics"
    kwargs = {"task": "statistics" if task == "md5" else task, "level": os.environ.get("DUMP_LEVEL", "mix"),
              "dump_path": os.environ["MSPROBE_OUT"]}
    if summary == "md5":
        import json
        config = os.path.join(os.environ["MSPROBE_OUT"], "config.json")
        with open(config, "w") as handle:
            json.dump({"task": "statistics", "level": kwargs["level"], "dump_path": kwargs["dump_path"],
                       "rank": [], "step": [], "statistics": {"scope": [], "list": [], "data_mode": ["all"],
                                                              "summary_mode": "md5"}}, handle)
        debugger = PrecisionDebugger(config_path=config)
    else:
        debugger = PrecisionDebugger(**kwargs)
    tokens, targets = tm.make_batch(batch=2, seq=8, seed=rank or 0)
    for _ in range(int(os.environ.get("DUMP_STEPS", "1"))):
        debugger.start(model=model)
        if rank is None:
            tm.train_step(model, optimizer, tokens, targets)
        else:
            distributed_step(tm, model, optimizer, tokens, targets)
        debugger.stop()
        debugger.step()
    if rank is not None:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def distributed_step(tm, model, optimizer, tokens, targets):
    loss = F.cross_entropy(model(tokens).reshape(-1, tm.VOCAB), targets.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    for param in model.parameters():
        torch.distributed.all_reduce(param.grad)
    optimizer.step()


if __name__ == "__main__":
    main()
