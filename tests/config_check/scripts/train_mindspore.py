"""A real (tiny) MindSpore training run instrumented as seed doc 31 says."""
import argparse

from msprobe.core.config_check import ConfigChecker

ConfigChecker.apply_patches("mindspore")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import nn, ops  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--seed", type=int, default=1234)
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--extra-random", action="store_true")
parser.add_argument("--shell", nargs="*", default=None)
args = parser.parse_args()

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
ms.set_seed(0)
model = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 4)])
ConfigChecker(model, args.shell, args.out, "mindspore")

ms.set_seed(args.seed)
data = np.random.RandomState(100)
optimizer = nn.SGD(model.trainable_params(), learning_rate=0.1)


def loss_fn(x, y):
    return ((model(x) - y) ** 2).mean()


grad_fn = ms.value_and_grad(loss_fn, None, optimizer.parameters)
for step in range(args.steps):
    x = ms.Tensor(data.randn(4, 8).astype(np.float32))
    y = ms.Tensor(data.randn(4, 4).astype(np.float32))
    loss, grads = grad_fn(x, y)
    optimizer(grads)
if args.extra_random:
    ops.rand(1)
print(f"done, loss {float(loss.asnumpy()):.6f}")
