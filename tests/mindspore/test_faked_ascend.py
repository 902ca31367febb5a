"""What only runs on Ascend/GPU, faked on CPU (said so in tools/dump/README.md):

* the device statistics path (five reductions per tensor on the device, one host copy per batch of
  entries) is forced on the CPU target and checked against numpy on the tensor files;
* a distributed rank (``GlobalComm.INITED`` + ``get_rank``) is faked to get ``rank3`` directories.
"""
from __future__ import annotations

import mindspore as ms
import numpy as np
from mindspore import mint, ops

from msprobe.mindspore import internals
from msprobe.mindspore import PrecisionDebugger

from ms_dump_checks import check_dump_against_npy, entries, finish, inspect_ok


def _net_run(tmp_path, **kwargs):
    rng = np.random.default_rng(3)
    x = ms.Tensor(rng.standard_normal((4, 6)).astype(np.float32))
    w = ms.Tensor(rng.standard_normal((6, 5)).astype(np.float32))
    big = ms.Tensor(np.full((3, 3), 3e19, np.float32))  # float32 sum of squares overflows: scaled norm

    def f(x, w):
        return ops.tanh(mint.matmul(x, w)).sum() + (big * 1.0).mean() * 0

    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="L1", task="tensor", **kwargs)
    debugger.start()
    ms.grad(f, grad_position=(0, 1))(x, w)
    debugger.stop()
    debugger.step()
    finish(debugger)
    return debugger


def test_device_statistics_path_matches_numpy(tmp_path, monkeypatch):
    monkeypatch.setattr(internals, "device_target", lambda: "Ascend")
    debugger = _net_run(tmp_path)
    assert debugger.adapter.on_host is False and debugger.adapter.stats_batch > 1
    data = entries(tmp_path)
    assert data["Tensor.__mul__.0.forward"]["input_args"][0]["Norm"] > 8.9e19
    assert check_dump_against_npy(tmp_path) > 15
    inspect_ok(tmp_path)


def test_distributed_rank_directory(tmp_path, monkeypatch):
    from mindspore.communication import management
    monkeypatch.setattr(management.GlobalComm, "INITED", True, raising=False)
    monkeypatch.setattr(management, "get_rank", lambda *a, **k: 3)
    _net_run(tmp_path)
    assert (tmp_path / "step0" / "rank3" / "dump.json").is_file()
