"""``msprobe demo`` part ``dump_mindspore``: a small MindSpore network trained with ``ms.value_and_grad``
under a statistics mix dump (PyNative, any device MindSpore runs on)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

STEPS = 2


def run(ctx: Any) -> str:
    """Returns the dump path; skips when mindspore is not installed."""
    ctx.only("mindspore")
    import mindspore as ms
    import numpy as np
    from mindspore import mint, nn, ops

    from msprobe.schema import find_rank_dirs

    from . import PrecisionDebugger, seed_all

    class TinyNet(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Dense(16, 32)
            self.hidden = nn.Dense(32, 32)
            self.norm = nn.LayerNorm((32,))
            self.head = nn.Dense(32, 4)

        def construct(self, x: Any) -> Any:
            h = ops.gelu(self.embed(x))
            h = self.norm(h + mint.nn.functional.relu(self.hidden(h)))
            return self.head(h)

    ms.set_context(mode=ms.PYNATIVE_MODE)
    seed_all(1234)
    net = TinyNet()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)

    def loss_fn(x: Any, target: Any) -> Any:
        return ops.cross_entropy(net(x), target)

    grad_fn = ms.value_and_grad(loss_fn, None, optimizer.parameters)
    dump_path = Path(ctx.out_dir) / "dump_mindspore"
    debugger = PrecisionDebugger(task="statistics", level="mix", dump_path=str(dump_path))
    rng = np.random.default_rng(0)
    for step in range(STEPS):
        x = ms.Tensor(rng.standard_normal((8, 16)).astype(np.float32))
        target = ms.Tensor(rng.integers(0, 4, 8).astype(np.int32))
        debugger.start(model=net)
        loss, grads = grad_fn(x, target)
        debugger.stop()
        optimizer(grads)
        debugger.step()
        ctx.say(f"step {step}: loss {float(loss.asnumpy()):.4f}")
    debugger.flush()  # step() finishes the files on a background thread: read them once written
    ranks = find_rank_dirs(dump_path)
    entries = sum(len(r.load_dump().data) for r in ranks)
    ctx.say(f"MindSpore {ms.__version__} statistics mix dump of {STEPS} steps: {entries} entries in "
            f"{len(ranks)} rank directories under {dump_path}")
    return str(dump_path)


run.order = 20
