"""Models and numpy references shared by the dump tests."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
        return self.head(torch.flatten(x, 1))


class TransformerBlock(nn.Module):
    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 32), nn.GELU(), nn.Linear(32, d))

    def forward(self, x):
        h = self.ln(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(x)


MODELS = {
    "mlp": (MLP, lambda: torch.randn(5, 8)),
    "conv": (ConvNet, lambda: torch.randn(2, 1, 8, 8)),
    "transformer": (TransformerBlock, lambda: torch.randn(2, 6, 16)),
}


def train(debugger, name: str, steps: int = 2, seed: int = 0):
    torch.manual_seed(seed)
    model_cls, make_input = MODELS[name]
    model = model_cls()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        x = make_input()
        debugger.start(model=model)
        loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        debugger.stop()
        debugger.step()
    debugger.flush()
    return model


def numpy_stats(array: np.ndarray):
    """The reference statistics, computed in float64 with numpy."""
    if array.dtype == np.bool_:
        return {"Max": bool(array.any()), "Min": bool(array.all()), "Mean": None, "Norm": None}
    if array.size == 0:
        return {"Max": None, "Min": None, "Mean": None, "Norm": None}
    if array.dtype.kind in "iu":  # as msprobe writes integers: Max and Min, as integers; a 0-d one four times
        if array.ndim == 0:
            return dict.fromkeys(("Max", "Min", "Mean", "Norm"), int(array))
        return {"Max": int(array.max()), "Min": int(array.min()), "Mean": None, "Norm": None}
    wide = array.astype(np.float64)
    return {"Max": float(wide.max()), "Min": float(wide.min()), "Mean": float(wide.mean()),
            "Norm": float(np.sqrt((wide * wide).sum()))}


def assert_stats_match(record: dict, expected: dict, where: str, rel: float = 1e-4) -> None:
    for key in ("Max", "Min", "Mean", "Norm"):
        got, want = record[key], expected[key]
        if want is None or isinstance(want, bool):
            assert got == want, f"{where}.{key}: {got} != {want}"
            continue
        scale = max(abs(want), 1e-6) if key != "Mean" else max(abs(want), expected["Norm"] / 1e3, 1e-6)
        assert math.isclose(got, want, rel_tol=rel, abs_tol=rel * scale), f"{where}.{key}: {got} != {want}"


def dump_one_step(folder: Path, body, **config) -> dict:
    """Run ``body`` in one dumped L1 statistics step configured through a config.json in ``folder``
    (``config`` adds or replaces fields); returns the step's dump.json data."""
    from msprobe.pytorch import PrecisionDebugger

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_text(json.dumps({"task": "statistics", "level": "L1", "dump_path": str(folder / "dump"), **config}))
    debugger = PrecisionDebugger(config_path=str(path))
    debugger.start()
    body()
    debugger.stop()
    debugger.step()
    debugger.flush()
    return json.loads((folder / "dump" / "step0" / "rank" / "dump.json").read_text())["data"]


STEP_FILES = ("dump.json", "stack.json", "construct.json")


def sgd_steps(make_model, input_shape, loss_of, debugger=None, steps: int = 2) -> dict:
    """``steps`` plain SGD steps (lr 0.1) from seed 0, dumped when a ``debugger`` is given (and its files
    flushed); returns the last step's parameter gradients."""
    torch.manual_seed(0)
    model = make_model()
    x = torch.randn(*input_shape)
    grads = {}
    for _ in range(steps):
        model.zero_grad()
        if debugger is not None:
            debugger.start(model=model)
        loss_of(model(x)).backward()
        if debugger is not None:
            debugger.stop()
            debugger.step()
        grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p -= 0.1 * p.grad
    if debugger is not None:
        debugger.flush()
    return grads


def step_files(dump_path: Path, steps: int = 2) -> dict:
    """{(step, file name): bytes} of the files each step of a single-rank dump left."""
    return {(step, name): (dump_path / f"step{step}" / "rank" / name).read_bytes()
            for step in range(steps) for name in STEP_FILES}


def assert_same_dumps(ours: tuple, python: tuple, undumped: dict, what: str) -> None:
    """``ours`` and ``python``: (step files, gradients) of the same run through a C path and the Python
    path it stands in for. Their files are the same bytes and their gradients the same numbers; both
    match an undumped run's within float rounding (the gates' views change the order in which autograd
    adds a tensor's gradients up)."""
    (files, grads), (python_files, python_grads) = ours, python
    for key in python_files:
        assert files[key] == python_files[key], f"{key} differs between {what}"
    assert grads.keys() == python_grads.keys() == undumped.keys()
    for name in undumped:
        torch.testing.assert_close(grads[name], python_grads[name], rtol=0, atol=0)
        torch.testing.assert_close(grads[name], undumped[name], rtol=1e-5, atol=1e-6)
