"""A real (tiny) PyTorch training run instrumented as seed doc 31 says; 1 process or torchrun."""
import argparse
import os

from msprobe.core.config_check import ConfigChecker

ConfigChecker.apply_patches("pytorch")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--seed", type=int, default=1234)
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--extra-random", action="store_true")
parser.add_argument("--shell", nargs="*", default=None)
parser.add_argument("--dropout", type=float, default=0.0)
args = parser.parse_args()

if "RANK" in os.environ:
    dist.init_process_group("gloo")
rank = dist.get_rank() if dist.is_initialized() else 0

torch.manual_seed(0)  # initialisation seed: weights do not depend on --seed
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(args.dropout), nn.Linear(16, 4))
ConfigChecker(model, args.shell, args.out, "pytorch")

torch.manual_seed(args.seed)  # training seed
data = torch.Generator().manual_seed(100 + rank)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.steps):
    x = torch.randn(4, 8, generator=data)
    y = torch.randn(4, 4, generator=data)
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    if dist.is_initialized():
        for param in model.parameters():
            dist.all_reduce(param.grad)
            param.grad /= dist.get_world_size()
    optimizer.step()
    optimizer.zero_grad()
if args.extra_random:
    torch.rand(1)  # one more random call, after training: changes nothing else
if dist.is_initialized():
    dist.destroy_process_group()
print(f"rank {rank} done, loss {loss.item():.6f}")
