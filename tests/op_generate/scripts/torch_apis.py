"""A torch step through a few APIs in float32 and float16 (layer_norm and embedding among them), dumped with task
tensor at L1 by the suite's dump tool; and ``overflow(root)``: a step whose log of zero is the first -inf."""
from __future__ import annotations

from pathlib import Path

APIS = ["Functional.linear.0", "Functional.layer_norm.0", "Functional.embedding.0", "Torch.matmul.0",
        "Tensor.softmax.0", "Tensor.__mul__.0"]


def _run(root: Path, task: str, body) -> None:
    import torch

    from msprobe.pytorch import PrecisionDebugger

    torch.manual_seed(0)
    debugger = PrecisionDebugger(dump_path=str(root), level="L1", task=task)
    debugger.start()
    body(torch)
    debugger.stop()
    debugger.step()


def dump(root: Path) -> None:
    def body(torch):
        import torch.nn.functional as F
        x, w = torch.randn(4, 8, requires_grad=True), torch.randn(6, 8, requires_grad=True)
        table = torch.randn(10, 6, requires_grad=True)
        y = F.layer_norm(F.linear(x, w), (6,))
        e = F.embedding(torch.tensor([1, 3, 5, 9]), table)
        z = torch.matmul(y, e.t()).softmax(-1)
        (z.half() * 2).sum().float().backward()
    _run(root, "tensor", body)


def overflow(root: Path) -> None:
    def body(torch):
        x = torch.rand(3, 4)
        x[0, 0] = 0.0
        torch.exp(torch.log(x) * 2).sum()
    _run(root, "statistics", body)
