"""A MindSpore 2.x step through 22 common APIs (Mint, MintFunctional, ops, Tensor), dumped with task tensor at L1.

``dump(root)`` writes ``root/step0/rank/{dump.json,dump_tensor_data/}``; ``APIS`` names the calls to reproduce.
"""
from __future__ import annotations

from pathlib import Path

APIS = ["Mint.matmul.0", "MintFunctional.softmax.0", "Mint.tanh.0", "Functional.gelu.0",
        "Mint.split.0", "Mint.add.0", "Mint.mul.0", "Mint.sum.0", "Mint.mean.0", "Mint.transpose.0",
        "Tensor.reshape.0", "Mint.cat.0", "Mint.exp.0", "Mint.log.0", "Mint.sqrt.0", "Mint.pow.0",
        "MintFunctional.linear.0", "Functional.conv2d.0",
        "MintFunctional.dropout.0", "Functional.softmax.0", "Functional.transpose.0", "Tensor.sum.0"]


def step(x, w, b, img, kernel, table):
    from mindspore import mint, ops
    f = mint.nn.functional
    h = f.linear(x, w, b)                                   # (4, 6)
    a = mint.matmul(h, mint.transpose(h, 0, 1))             # (4, 4)
    s = f.softmax(a, dim=-1)
    # (no CPU kernels in MindSpore 2.10 for LayerNormExt, GeluExt, Conv2DExt, Embedding: layer_norm and embedding
    # are reproduced on the torch side; gelu and conv2d here through ops)
    n = mint.tanh(h)
    g = ops.gelu(n)
    left, right = mint.split(g, [2, 4], dim=1)
    m = mint.mul(mint.add(left, 1.5), mint.sum(right, dim=1, keepdim=True))
    p = mint.pow(mint.sqrt(mint.exp(m) + 1.0), 2)
    lg = mint.log(p)
    c = mint.cat([lg, s], dim=1)                             # (4, 6)
    r = c.reshape(2, 12)
    conv = ops.conv2d(img, kernel)
    d = f.dropout(table, p=0.3, training=False)
    o = ops.softmax(ops.transpose(d, (1, 0)), axis=0)
    return mint.mean(r) + conv.sum() + o.sum(axis=1).sum()


def dump(root: Path) -> None:
    import mindspore as ms
    import numpy as np

    from msprobe.mindspore import PrecisionDebugger

    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.default_rng(7)

    def tensor(*shape):
        return ms.Tensor(rng.uniform(-1, 1, shape).astype(np.float32))
    inputs = (tensor(4, 5), tensor(6, 5), tensor(6), tensor(1, 2, 5, 5), tensor(3, 2, 3, 3), tensor(10, 4))
    debugger = PrecisionDebugger(dump_path=str(root), level="L1", task="tensor")
    debugger.start()
    ms.grad(step, grad_position=(0, 1, 2, 3, 4, 5))(*inputs)
    debugger.stop()
    debugger.step()
    debugger.engine.close()  # what process exit does: every file final
