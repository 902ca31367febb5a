"""MSAdapter scenarios run inside the Python 3.9 rootfs: ``python3.9 scenarios.py <name> <dump_path>``.
Each writes its dump under dump_path and what the host test compares against into dump_path/expected.npz
or prints a RESULT line."""
import json
import os
import sys

import mindspore as ms
import numpy as np
import msadapter.pytorch as torch
import msadapter.pytorch.nn as nn
import msadapter.pytorch.nn.functional as F

from msprobe.mindspore import PrecisionDebugger, seed_all

NAME, DUMP = sys.argv[1], sys.argv[2]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(8, 4)
        self.linear2 = nn.Linear(4, 2)
        self.scale = ms.ops.Mul()  # a Primitive held by the model (recorded at L1 only with model=)

    def forward(self, x):
        h = torch.matmul(self.linear1(x), torch.ones(4, 4))
        h = h.permute(1, 0).permute(1, 0) + h * 0.5  # Tensor methods and operators
        return F.relu(self.scale(self.linear2(h), 2.0))


def run(level, task="tensor", model=True, config=None, steps=2):
    seed_all(1234)
    net = Net()
    debugger = PrecisionDebugger(config_path=config, dump_path=DUMP, level=level, task=task)
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), grad_position=0)
    expected = {}
    for step in range(steps):
        x = torch.tensor(np.random.RandomState(step).randn(3, 8).astype(np.float32))
        debugger.start(model=net if model else None)
        loss, grad = grad_fn(x)
        debugger.stop()
        debugger.step()
        expected[f"grad{step}"] = grad.asnumpy()
    debugger.flush()
    np.savez(os.path.join(DUMP, "expected.npz"), **expected)


def run_weights(level):
    """Weight gradients through value_and_grad(weights=...): the parameters_grad entries on MindSpore 2.0."""
    seed_all(1234)
    net = Net()
    debugger = PrecisionDebugger(dump_path=DUMP, level=level, task="tensor")
    weights = net.trainable_params()
    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), grad_position=0, weights=weights)
    expected = {}
    for step in range(2):
        x = torch.tensor(np.random.RandomState(step).randn(3, 8).astype(np.float32))
        debugger.start(model=net)
        loss, (input_grad, weight_grads) = grad_fn(x)
        debugger.stop()
        debugger.step()
        for param, grad in zip(weights, weight_grads):
            expected[f"{param.name}.{step}"] = grad.asnumpy()
    debugger.flush()
    np.savez(os.path.join(DUMP, "expected.npz"), **expected)


if NAME == "mix":
    run("mix")
elif NAME == "weights":
    run_weights("L0")
elif NAME == "l1_no_model":
    run("L1", model=False, steps=1)
elif NAME == "l1_model":
    run("L1", model=True, steps=1)
elif NAME == "api_list":
    os.makedirs(DUMP, exist_ok=True)
    with open(os.path.join(DUMP, "..", "my_ops.yaml"), "w") as f:
        f.write("functional:\n  - relu\ntensor:\n  - permute\n")
    config = os.path.join(DUMP, "..", "config.json")
    with open(config, "w") as f:
        json.dump({"task": "statistics", "level": "L1", "api_list": os.path.join(DUMP, "..", "my_ops.yaml")}, f)
    run("L1", task=None, model=False, config=config, steps=1)
elif NAME == "jit":
    @ms.jit
    def block(x, w):
        return ms.ops.tanh(ms.ops.matmul(x, w))

    debugger = PrecisionDebugger(dump_path=DUMP, level="L1", task="tensor")
    x, w = torch.ones(2, 3), torch.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    debugger.start()
    gx, gw = ms.grad(lambda x, w: F.relu(block(x, w)).sum(), grad_position=(0, 1))(x, w)
    debugger.forward_backward_dump_end()  # doc 2.1.4: the deprecated name of stop()
    debugger.step()
    debugger.flush()
    np.savez(os.path.join(DUMP, "expected.npz"), gx=gx.asnumpy(), gw=gw.asnumpy())
elif NAME == "seed":
    seed_all(42, mode=True)
    x = torch.ones(4, 4)
    drop = nn.Dropout(p=0.5)
    drop.train()
    out = {"numpy": float(np.random.rand()), "ops.Dropout": bool((ms.ops.Dropout(keep_prob=0.5)(x)[0] == x).all()),
           "torch.nn.Dropout": bool((drop(x) == x).all()),
           "F.dropout": bool((F.dropout(x, p=0.5, training=True) == x).all())}
    print("RESULT" + json.dumps(out))
