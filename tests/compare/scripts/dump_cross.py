"""The same small network in torch and in MindSpore 2.10, with the same weights and data, dumped at mix level.

argv: FRAMEWORK (torch | mindspore) DUMP_PATH. Weights and inputs come from numpy with a fixed seed, so
the two runs compute the same numbers up to float32 rounding. MS_LN_EPS: epsilon of MindSpore's LayerNorm
(default torch's 1e-5; another value is the planted cross-framework difference).
"""
import os
import sys

import numpy as np


def weights():
    rng = np.random.default_rng(7)
    shapes = {"fc1": (32, 16), "fc2": (32, 32), "head": (4, 32)}
    out = {name: (rng.standard_normal(shape).astype(np.float32) * 0.3,
                  rng.standard_normal(shape[0]).astype(np.float32) * 0.1) for name, shape in shapes.items()}
    x = rng.standard_normal((8, 16)).astype(np.float32)
    target = rng.integers(0, 4, 8).astype(np.int32)
    return out, x, target


def run_torch(path):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from msprobe.pytorch import PrecisionDebugger

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.norm, self.head = nn.Linear(16, 32), nn.Linear(32, 32), nn.LayerNorm(32), nn.Linear(32, 4)

        def forward(self, x):
            h = F.gelu(self.fc1(x))
            h = self.norm(h + F.relu(self.fc2(h)))
            return self.head(h)

    net = Net()
    params, x, target = weights()
    with torch.no_grad():
        for name, (w, b) in params.items():
            getattr(net, name).weight.copy_(torch.from_numpy(w))
            getattr(net, name).bias.copy_(torch.from_numpy(b))
    debugger = PrecisionDebugger(task="statistics", level="mix", dump_path=path)
    debugger.start(model=net)
    loss = F.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(target).long())
    loss.backward()
    debugger.stop()
    debugger.step()


def run_mindspore(path):
    import mindspore as ms
    from mindspore import mint, nn, ops
    from msprobe.mindspore import PrecisionDebugger

    ms.set_context(mode=ms.PYNATIVE_MODE)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.head = nn.Dense(16, 32), nn.Dense(32, 32), nn.Dense(32, 4)
            self.norm = nn.LayerNorm((32,), epsilon=float(os.environ.get("MS_LN_EPS", "1e-5")))

        def construct(self, x):
            h = ops.gelu(self.fc1(x))
            h = self.norm(h + mint.nn.functional.relu(self.fc2(h)))
            return self.head(h)

    net = Net()
    params, x, target = weights()
    for name, (w, b) in params.items():
        getattr(net, name).weight.set_data(ms.Tensor(w))
        getattr(net, name).bias.set_data(ms.Tensor(b))

    def loss_fn(data, label):
        return ops.cross_entropy(net(data), label)

    grad_fn = ms.value_and_grad(loss_fn, None, net.trainable_params())
    debugger = PrecisionDebugger(task="statistics", level="mix", dump_path=path)
    debugger.start(model=net)
    grad_fn(ms.Tensor(x), ms.Tensor(target.astype(np.int64)))
    debugger.stop()
    debugger.step()
    debugger.flush()


if __name__ == "__main__":
    (run_torch if sys.argv[1] == "torch" else run_mindspore)(sys.argv[2])
