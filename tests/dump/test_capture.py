"""What is captured, how it is named, and the statistics rules (FORMATS.md §3)."""
from __future__ import annotations

import json
import zlib
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import relu  # imported before the debugger exists: still captured

from dumphelpers import assert_stats_match, numpy_stats
from msprobe.pytorch import PrecisionDebugger


def _run(dump_dir, body, **kwargs):
    debugger = PrecisionDebugger(dump_path=str(dump_dir), **{"task": "statistics", "level": "L1", **kwargs})
    debugger.start()
    result = body()
    debugger.stop()
    debugger.step()
    debugger.flush()
    return json.loads((dump_dir / "step0" / "rank" / "dump.json").read_text())["data"], result


def _all_apis(dump_dir) -> str:
    """A config.json recording every overridable API (``clone``, ``to``... are not in msprobe's default set)."""
    config = dump_dir.parent / "all_apis.json"
    config.write_text('{"record_all_apis": true}')
    return str(config)


def test_apis_captured_however_imported_and_identity_kept(dump_dir):
    config = SimpleNamespace(act=F.gelu)

    class Block(nn.Module):
        def forward(self, x):
            assert config.act is F.gelu  # model code comparing functions keeps working
            return config.act(relu(x)) + x.sum()

    data, _ = _run(dump_dir, lambda: Block()(torch.randn(4)))
    assert {"Torch.relu.0.forward", "Functional.gelu.0.forward", "Tensor.sum.0.forward",
            "Tensor.__add__.0.forward"} <= set(data)


def test_only_outermost_api_is_recorded(dump_dir):
    data, _ = _run(dump_dir, lambda: F.layer_norm(torch.randn(2, 4), (4,)))
    assert list(data) == ["Functional.layer_norm.0.forward"]  # not the torch.layer_norm inside


def test_counters_restart_every_step(dump_dir):
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    for _ in range(2):
        debugger.start()
        torch.cos(torch.ones(2))
        torch.cos(torch.ones(2))
        debugger.stop()
        debugger.step()
    debugger.flush()
    for step in (0, 1):
        data = json.loads((dump_dir / f"step{step}" / "rank" / "dump.json").read_text())["data"]
        assert [n for n in data if "cos" in n] == ["Torch.cos.0.forward", "Torch.cos.1.forward"]


def test_statistics_rules(dump_dir):
    tensors = {
        "bf16": torch.full((1000, 1000), 1000.0, dtype=torch.bfloat16),
        "int": torch.arange(-5, 7),
        "f64": torch.linspace(-1, 3, 11, dtype=torch.float64),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(-2.5),
        "empty": torch.zeros(0, 3),
    }
    data, _ = _run(dump_dir, lambda: [torch.clone(t) for t in tensors.values()], config_path=_all_apis(dump_dir))
    records = [data[f"Torch.clone.{i}.forward"]["input_args"][0] for i in range(len(tensors))]
    by_name = dict(zip(tensors, records))
    assert by_name["bf16"]["Norm"] == pytest.approx(1e6, rel=1e-6)  # upstream: 999424 (norm in bf16)
    assert by_name["bf16"]["dtype"] == "torch.bfloat16"
    assert_stats_match(by_name["f64"], numpy_stats(tensors["f64"].numpy()), "f64", rel=1e-12)
    assert by_name["f64"]["Norm"] is not None
    # integers as msprobe writes them: Max and Min as integers, no Mean or Norm
    assert [by_name["int"][k] for k in ("Max", "Min", "Mean", "Norm")] == [6, -5, None, None]
    assert (by_name["bool"]["Max"], by_name["bool"]["Min"], by_name["bool"]["Mean"]) == (True, False, None)
    assert by_name["scalar"]["Max"] == by_name["scalar"]["Min"] == by_name["scalar"]["Mean"] == -2.5
    assert by_name["scalar"]["Norm"] == 2.5 and by_name["scalar"]["shape"] == []
    assert [by_name["empty"][k] for k in ("Max", "Min", "Mean", "Norm")] == [None] * 4


def test_md5_is_crc32_of_raw_bytes(dump_dir):
    x = torch.randn(3, 5)
    config = dump_dir.parent / "config.json"
    config.write_text(json.dumps({"task": "statistics", "level": "L1", "dump_path": str(dump_dir),
                                  "statistics": {"summary_mode": "md5"}}))
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start()
    y = torch.neg(x)
    debugger.stop()
    debugger.step()
    debugger.flush()
    entry = json.loads((dump_dir / "step0" / "rank" / "dump.json").read_text())["data"]["Torch.neg.0.forward"]
    assert entry["input_args"][0]["md5"] == f"{zlib.crc32(x.numpy().tobytes()):08x}"
    assert entry["output"][0]["md5"] == f"{zlib.crc32(y.numpy().tobytes()):08x}"
    assert list(entry["output"][0])[-1] == "md5"


def test_inplace_api_records_inputs_before_the_change(dump_dir):
    x = torch.ones(4)
    data, _ = _run(dump_dir, lambda: x.add_(1))
    entry = data["Tensor.add_.0.forward"]
    assert entry["input_args"][0]["Max"] == 1.0 and entry["output"][0]["Max"] == 2.0


def test_non_tensor_arguments(dump_dir):
    data, _ = _run(dump_dir, lambda: torch.randn(2, 3).to(torch.float64).sum(dim=1, keepdim=True),
                   config_path=_all_apis(dump_dir))
    to_entry = data["Tensor.to.0.forward"]
    assert to_entry["input_args"][1] == {"type": "torch.dtype", "value": "torch.float64"}
    assert data["Tensor.sum.0.forward"]["input_kwargs"] == {"dim": {"type": "int", "value": 1},
                                                           "keepdim": {"type": "bool", "value": True}}


def test_user_api_list_adds_and_removes(tmp_path, dump_dir):
    api_list = tmp_path / "ops.yaml"
    api_list.write_text("functional:\n  - relu\ntorch:\n  - cos\n")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"dump_path": str(dump_dir), "api_list": str(api_list), "level": "L1"}))
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start()
    F.relu(torch.cos(torch.sin(torch.ones(2))))
    debugger.stop()
    debugger.step()
    debugger.flush()
    data = json.loads((dump_dir / "step0" / "rank" / "dump.json").read_text())["data"]
    assert list(data) == ["Torch.cos.0.forward", "Functional.relu.0.forward"]


def test_shipped_api_list_is_generated_from_torch(repo_root):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(repo_root / "tools/dump/scripts/gen_support_wrap_ops.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


class _Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Parameter(torch.ones(2))
        self.second = self.first  # one parameter under two names
        self.register_parameter("unset", None)
        self.last = nn.Parameter(torch.zeros(1))


@pytest.mark.parametrize("module", [nn.Linear(3, 2), nn.Linear(3, 2, bias=False), _Tied(), nn.Sequential(nn.Linear(2, 2))],
                         ids=["linear", "no bias", "tied and unset", "container"])
def test_a_modules_own_parameters_as_named_parameters_lists_them(module):
    from msprobe.pytorch.hooks import _own_parameters

    want = dict(module.named_parameters(recurse=False))
    got = _own_parameters(module)
    assert list(got) == list(want) and all(got[name] is want[name] for name in want)
