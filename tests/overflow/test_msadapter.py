"""MSAdapter (torch API on MindSpore): online overflow_check with doc 29's script shape, then the analysis.

Runs where MSAdapter is installed (the Python 3.9 MSAdapter rootfs); skipped elsewhere.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.msadapter


def _torch():
    for name in ("msadapter.pytorch", "mindtorch.torch"):
        try:
            return pytest.importorskip(name)
        except pytest.skip.Exception:
            continue
    pytest.skip("MSAdapter (msadapter.pytorch / mindtorch.torch) is not installed")


def test_msadapter_forward_overflow(tmp_path):
    torch = _torch()
    import mindspore as ms

    from msprobe.mindspore import PrecisionDebugger
    from msprobe.overflow import analyze_dump

    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = nn.Linear(in_features=8, out_features=4)

        def forward(self, x):
            return torch.exp(self.linear1(x))

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "dump"), "rank": [],
                                  "step": [], "level": "L1", "overflow_check": {"overflow_nums": 1}}))
    debugger = PrecisionDebugger(config_path=str(config))
    net = Net()
    with torch.no_grad():
        net.linear1.weight.fill_(10.0)
        net.linear1.bias.fill_(0.0)
    grad_fn = ms.value_and_grad(lambda inputs: net(inputs).sum(), grad_position=0)
    debugger.start(model=net)
    grad_fn(torch.tensor(np.full((2, 8), 10.0, np.float32)))     # exp(800) overflows float32
    debugger.stop()
    debugger.step()
    wait = getattr(debugger.engine, "wait", None)
    if wait is not None:
        wait()
    [result] = analyze_dump(tmp_path / "dump")
    assert "exp" in result.origin.op_name, result.origin.op_name
