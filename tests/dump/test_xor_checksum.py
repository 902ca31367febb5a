"""``summary_mode: "xor"`` (msprobe 26.2.0): per tensor type/dtype/shape and ``md5`` = the XOR of its raw
bytes read as little-endian 64-bit words (zero-padded), no Max/Min/Mean/Norm; checked against numpy, on the
host path and the device path (run here on the CPU), and read by ``msprobe inspect`` and overflow_check."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from msprobe.pytorch import PrecisionDebugger, checksum, stats
from msprobe.schema import MsprobeError, find_rank_dirs, iter_records
from tests.support.cli import msprobe



def numpy_xor(t: torch.Tensor) -> str:
    """The reference: bytes of the tensor in element order, padded with zeros to whole words."""
    contiguous = t.detach().contiguous()
    raw = np.frombuffer(contiguous.reshape(-1).view(torch.uint8).numpy().tobytes(), dtype=np.uint8)
    padded = np.concatenate([raw, np.zeros(-raw.size % 8, dtype=np.uint8)])
    word = np.uint64(0)
    for value in padded.view("<u8"):
        word ^= value
    return f"0x{int(word):016x}"


TENSORS = {
    "float32 odd": lambda: torch.randn(7, 5),
    "bf16 3 elements": lambda: torch.randn(3).to(torch.bfloat16),
    "bool": lambda: torch.rand(13) > 0.5,
    "int64": lambda: torch.randint(-2**62, 2**62, (9,)),
    "transposed": lambda: torch.randn(6, 4).t(),
    "offset view": lambda: torch.randn(40)[3:20],
    "0-d": lambda: torch.tensor(3.5),
    "negated": lambda: torch.randn(5).conj().neg(),
}


@pytest.mark.parametrize("name", TENSORS)
def test_xor_equals_numpy_on_the_host_and_on_the_device_path(name):
    torch.manual_seed(0)
    tensor = TENSORS[name]()
    expected = numpy_xor(tensor.resolve_neg())
    assert checksum.xor_host(tensor) == expected
    assert checksum.hex_word(checksum.xor_on_device(tensor).item()) == expected
    handle = stats.Handle("xor", (checksum.xor_on_device(tensor),), tensor.numel(), None)
    assert stats.to_host([handle]) == [{"md5": expected}]  # the batch transfer's path


def test_empty_and_meta_tensors_have_no_checksum():
    assert checksum.xor_host(torch.empty(0)) is None
    assert stats.xor(torch.empty(2, 3, device="meta")).ready == {"md5": None}


def xor_dump(tmp_path) -> Path:
    dump = tmp_path / "dump"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "level": "mix", "dump_path": str(dump),
                                  "statistics": {"summary_mode": "xor"}}))
    debugger = PrecisionDebugger(config_path=str(config))
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
    x = torch.randn(3, 8)
    debugger.start(model=model)
    model(x).sum().backward()
    debugger.stop()
    debugger.step()
    return dump


def test_a_xor_dump_holds_msprobes_records(tmp_path):
    torch.manual_seed(0)
    dump = xor_dump(tmp_path)
    data = find_rank_dirs(dump)[0].load_dump().data
    records = [record for entry in data.values() for _, record in iter_records(entry)]
    assert len(records) > 10
    for record in records:
        assert list(record) == ["type", "dtype", "shape", "md5", "requires_grad"]
    weight = data["Module.0.Linear.forward.0"]["parameters"]["weight"]
    assert weight["md5"] != "0x0000000000000000"
    linear = data["Functional.linear.0.forward"]
    assert linear["input_args"][1]["md5"] == weight["md5"]  # the same bytes, the same checksum


def test_inspect_and_overflow_check_read_a_xor_dump(tmp_path):
    dump = xor_dump(tmp_path)
    inspect = msprobe("inspect", dump)
    assert inspect.returncode == 0, inspect.stderr
    assert ", 0 with inf/nan" in inspect.stdout
    overflow = msprobe("overflow_check", "-i", dump, "-o", tmp_path / "out")
    assert overflow.returncode == 0, overflow.stderr


def test_xor_is_refused_where_the_adapter_cannot_compute_it(tmp_path):
    from msprobe.dump import Adapter, DumpEngine
    from msprobe.schema import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"task": "statistics", "dump_path": str(tmp_path / "d"),
                                "statistics": {"summary_mode": "xor"}}))
    config = load_config(str(path))
    with pytest.raises(MsprobeError, match="field 'summary_mode': 'xor' is not supported for unknown"):
        DumpEngine(config, Adapter())
