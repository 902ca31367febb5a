"""Statistics of device tensors are started on the device and brought to the host in batches: no
synchronization per entry. No accelerator here: a fake device adapter treats CPU tensors as device
tensors (statistics left as 0-d tensors, ``stats.reduce_on_device``) and counts the host transfers."""
from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn as nn

from msprobe.pytorch import PrecisionDebugger, stats
from msprobe.pytorch.adapter import TorchAdapter


class FakeDevice(TorchAdapter):
    """Every tensor is a device tensor; each ``stats_to_host`` call is one device→host synchronization."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.transfers = []  # handles per transfer

    def tensor_stats(self, tensor, precision, md5):
        return stats.reduce_on_device(tensor, precision, md5)

    def ready_stats(self, handle):
        return None

    def stats_to_host(self, handles):
        self.transfers.append(len(handles))
        return super().stats_to_host(handles)


class FakeDeviceDebugger(PrecisionDebugger):
    def _make_adapter(self, config):
        return FakeDevice(config.api_list, config.record_nested)


def _train(debugger, steps: int = 2):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    for _ in range(steps):
        debugger.start(model)
        model(torch.randn(5, 8)).pow(2).mean().backward()
        debugger.stop()
        debugger.step()
    debugger.flush()


def _data(root, step):
    return json.loads((root / f"step{step}" / "rank" / "dump.json").read_text())["data"]


@pytest.mark.parametrize("batch", [64, 8])
def test_device_statistics_come_in_batches_with_the_host_numbers(tmp_path, batch):
    fake = FakeDeviceDebugger(task="statistics", level="mix", dump_path=str(tmp_path / "device"), step=[0, 1])
    fake.adapter.stats_batch = batch
    _train(fake)
    transfers = fake.adapter.transfers
    tensors = sum(transfers)
    # flushed when ``batch`` entries wait, and at stop() and step(): never one transfer per entry
    entries = sum(len(_data(tmp_path / "device", step)) for step in (0, 1))
    assert len(transfers) <= math.ceil(entries / batch) + 2 * 2 < entries
    assert len(transfers) >= (2 if batch > entries else 4) and tensors > entries
    host = PrecisionDebugger(task="statistics", level="mix", dump_path=str(tmp_path / "host"), step=[0, 1])
    _train(host)
    for step in (0, 1):
        device, cpu = _data(tmp_path / "device", step), _data(tmp_path / "host", step)
        assert list(device) == list(cpu)  # the same entries in the same order
        for name in cpu:
            _close(device[name], cpu[name], name)


def _close(got, want, where):
    """The same records; statistics equal to float32 rounding (the device path sums with torch)."""
    if isinstance(want, dict) and "Max" in want:
        assert {k: v for k, v in got.items() if k not in ("Mean", "Norm")} == \
            {k: v for k, v in want.items() if k not in ("Mean", "Norm")}, where
        for key in ("Mean", "Norm"):
            assert (got[key] is None) == (want[key] is None), where
            if want[key] is not None:
                assert math.isclose(got[key], want[key], rel_tol=1e-5, abs_tol=1e-7), where
    elif isinstance(want, dict):
        assert list(got) == list(want), where
        for key in want:
            _close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            _close(a, b, f"{where}[{i}]")
    else:
        assert got == want, where
