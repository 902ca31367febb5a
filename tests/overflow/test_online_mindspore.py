"""Online overflow_check with real MindSpore (CPU, PyNative), then the offline analysis."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.ci import unavailable

if importlib.util.find_spec("mindspore") is None:
    unavailable("mindspore is not installed", module=True)
import mindspore as ms  # noqa: E402
from mindspore import nn, ops  # noqa: E402

from msprobe.mindspore import PrecisionDebugger  # noqa: E402
from msprobe.overflow import analyze_dump  # noqa: E402
from msprobe.schema import find_rank_dirs, iter_records, record_is_finite  # noqa: E402


class Net(nn.Cell):
    def __init__(self, weight: float, use_exp: bool) -> None:
        super().__init__()
        init = ms.Tensor(np.full((8, 8), weight, np.float16))
        self.fc1 = nn.Dense(8, 8, weight_init=init, bias_init="zeros", dtype=ms.float16)
        self.fc2 = nn.Dense(8, 8, weight_init=init, bias_init="zeros", dtype=ms.float16)
        self.use_exp = use_exp

    def construct(self, x):
        h = self.fc1(x)
        if self.use_exp:
            h = ops.exp(h)
        return self.fc2(h)


def _run(tmp_path: Path, net, x, scale: float, level: str = "mix") -> Path:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "dump"), "rank": [],
                                  "step": [], "level": level, "overflow_check": {"overflow_nums": -1}}))
    debugger = PrecisionDebugger(config_path=str(config))

    def loss_fn(inputs):
        return (net(inputs).astype(ms.float32) * scale).sum()

    grad_fn = ms.value_and_grad(loss_fn, None, net.trainable_params())
    debugger.start(model=net)
    grad_fn(x)
    debugger.stop()
    debugger.step()
    wait = getattr(debugger.engine, "wait", None)   # JSON files are written on the engine's writer thread
    if wait is not None:
        wait()
    return tmp_path / "dump"


def _data(dump: Path):
    [rank] = find_rank_dirs(dump / "step0")
    return rank.load().dump.data


def test_forward_exp_overflow(tmp_path):
    x = ms.Tensor(np.full((2, 8), 20.0, np.float16))   # fc1 -> 8 * 0.125 * 20 = 20, exp(20) overflows fp16
    dump = _run(tmp_path, Net(0.125, use_exp=True), x, 1.0)
    data = _data(dump)
    assert data and all(any(not record_is_finite(r) for _, r in iter_records(e)) for e in data.values())
    [result] = analyze_dump(dump)
    assert "exp" in result.origin.op_name and result.origin.op_name.endswith(".forward"), result.origin.op_name


def test_backward_overflow_from_exploding_gradient(tmp_path):
    x = ms.Tensor(np.ones((4, 8), np.float16))          # forward 80, 6400: finite in fp16
    dump = _run(tmp_path, Net(10.0, use_exp=False), x, 1000.0)
    data = _data(dump)
    assert data and not [n for n in data if n.endswith(".forward") or ".forward." in n], list(data)
    [result] = analyze_dump(dump)
    assert "backward" in result.origin.op_name, result.origin.op_name
