"""A fault of the dump is one line; with MSPROBE_DEBUG=1 its traceback follows (tools/dump/README.md)."""
from __future__ import annotations

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn, ops

from msprobe.mindspore import PrecisionDebugger, stats
from msprobe.mindspore.grads import GradTap


def _faulty_run(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug of ours")
    monkeypatch.setattr(stats, "stats_to_host", broken)
    x = ms.Tensor(np.ones((2, 3), np.float32))
    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="L1", task="statistics")
    debugger.start()
    out = ops.relu(x) * 2.0
    debugger.stop()
    debugger.step()
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.0, np.float32))  # the training goes on


@pytest.mark.parametrize("debug", [None, "1"])
def test_a_dump_fault_is_one_line_and_its_traceback_under_msprobe_debug(tmp_path, monkeypatch, capfd, debug):
    if debug:
        monkeypatch.setenv("MSPROBE_DEBUG", debug)
    else:
        monkeypatch.delenv("MSPROBE_DEBUG", raising=False)
    _faulty_run(tmp_path, monkeypatch)
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("msprobe: error: dump stopped")]
    assert len(lines) == 1 and "RuntimeError: a bug of ours" in lines[0], err
    if debug:
        after = err.split(lines[0], 1)[1]
        assert "Traceback (most recent call last)" in after and "in broken" in after, err
    else:
        assert "Traceback" not in err


@pytest.mark.parametrize("level", ["L1", "L0"])
@pytest.mark.parametrize("side", ["tap_inputs", "tap_outputs"])
def test_a_fault_tapping_gradients_leaves_the_gradients_as_they_are(tmp_path, monkeypatch, capfd, side, level):
    net = nn.SequentialCell(nn.Dense(3, 2), nn.Tanh())  # (L0: the root cell itself is not recorded)
    x = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    grad_fn = ms.grad(lambda x: net(x).sum(), grad_position=0, weights=net.trainable_params())
    want = grad_fn(x)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug of ours")
    monkeypatch.setattr(GradTap, side, broken)
    debugger = PrecisionDebugger(dump_path=str(tmp_path), level=level, task="statistics")
    debugger.start(model=net)
    got = grad_fn(x)
    debugger.stop()
    debugger.step()
    for a, b in zip(ms_leaves(want), ms_leaves(got)):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("msprobe: error: dump stopped")]
    assert len(lines) == 1 and "observing the gradients of" in lines[0] and "a bug of ours" in lines[0], lines


def ms_leaves(value):
    """The tensors of ms.grad's (input gradient, weight gradients) in order."""
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in ms_leaves(item)]
    return [value]
