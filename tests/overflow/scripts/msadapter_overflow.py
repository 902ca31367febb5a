"""Doc 29's script shape with MSAdapter's torch, task overflow_check (run inside the Python 3.9 rootfs)."""
import json
import sys

import mindspore as ms
import msadapter.pytorch as torch
import msadapter.pytorch.nn as nn
import numpy as np

from msprobe.mindspore import PrecisionDebugger

level = sys.argv[1]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(in_features=8, out_features=4)

    def forward(self, x):
        return torch.exp(self.linear1(x))


with open("config.json", "w") as handle:
    json.dump({"task": "overflow_check", "dump_path": "./dump", "level": level,
               "overflow_check": {"overflow_nums": 1}}, handle)
debugger = PrecisionDebugger(config_path="./config.json")
net = Net()
net.linear1.weight.set_data(ms.Tensor(np.full((4, 8), 10.0, np.float32)))
net.linear1.bias.set_data(ms.Tensor(np.zeros(4, np.float32)))
grad_fn = ms.value_and_grad(lambda inputs: net(inputs).sum(), grad_position=0)
for step in range(2):
    debugger.start(model=net)
    grad_fn(torch.tensor(np.full((2, 8), 10.0 if step else 0.01, np.float32)))  # step 1: exp(800) overflows
    debugger.stop()
    debugger.step()
debugger.flush()
print("done")
