"""Sparse (COO, CSR, CSC, BSR, BSC) and nested tensors as API inputs and outputs (issue #40).

msprobe 26.2.0 breaks the training on all of them but the jagged nested tensor (the API raises "Cannot
access data pointer of Tensor that doesn't have storage"), and the suite stopped dumping at the first one.
Now the dump goes on past them, the training's numbers are those of a run without the dump, and each gets
a record: a sparse tensor its dense shape and the statistics of its dense form, with a note, no checksum
and no file; a nested tensor the shape, statistics and file of its values, as msprobe records a jagged one.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from msprobe.pytorch import PrecisionDebugger
from msprobe.pytorch.adapter import TorchAdapter
from msprobe.schema import find_rank_dirs
from tests.support.cli import msprobe
from tests.support.upstream_msprobe import make_upstream_dump

DENSE = torch.tensor([[1.5, 0.0, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0], [0.5, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
SPARSE = {
    "sparse_coo": lambda d: d.to_sparse(),
    "sparse_csr": lambda d: d.to_sparse_csr(),
    "sparse_csc": lambda d: d.to_sparse_csc(),
    "sparse_bsr": lambda d: d.to_sparse_bsr((2, 2)),
    "sparse_bsc": lambda d: d.to_sparse_bsc((2, 2)),
}
STORED = {"sparse_coo": 4, "sparse_csr": 4, "sparse_csc": 4, "sparse_bsr": 12, "sparse_bsc": 12}  # (blocks of 4)
PARTS = [torch.arange(6.0).reshape(2, 3) - 2.5, torch.arange(12.0).reshape(4, 3) * 0.25]
NESTED = {
    "strided": lambda: torch.nested.nested_tensor([p.clone() for p in PARTS], requires_grad=True),
    "jagged": lambda: torch.nested.nested_tensor([p.clone() for p in PARTS], layout=torch.jagged, requires_grad=True),
}


def _dump(tmp_path: Path, work, task: str = "statistics", summary_mode: str = "statistics"):
    """``work()`` inside start()/stop() of a level-L1 dump; returns (its result, the dump's entries, the root)."""
    config = tmp_path / "config.json"
    root = tmp_path / "dump"
    config.write_text(json.dumps({"task": task, "level": "L1", "dump_path": str(root),
                                  task: {"summary_mode": summary_mode}}))
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start()
    result = work()
    torch.ones(3).add(1)  # after the odd tensor: still recorded
    debugger.stop()
    debugger.step()
    return result, find_rank_dirs(root)[0].load_dump().data, root


def _inspect_passes(root: Path) -> None:
    proc = msprobe("inspect", root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def _sparse_work(make):
    s = make(DENSE)
    return (s * 2).to_dense()


@pytest.mark.parametrize("layout", sorted(SPARSE))
def test_a_sparse_tensor_is_recorded_by_its_dense_form_and_the_dump_goes_on(tmp_path, capfd, layout):
    result, data, root = _dump(tmp_path, lambda: _sparse_work(SPARSE[layout]))
    assert torch.equal(result, DENSE * 2)
    assert "Tensor.add.0.forward" in data and "msprobe: error" not in capfd.readouterr().err
    record = data["Tensor.__mul__.0.forward"]["input_args"][0]
    dense = DENSE.numpy().astype(np.float64)
    assert record["shape"] == [4, 4] and record["dtype"] == "torch.float32" and record["type"] == "torch.Tensor"
    assert (record["Max"], record["Min"]) == (3.0, -2.0)
    assert math.isclose(record["Mean"], dense.mean(), rel_tol=1e-6)
    assert math.isclose(record["Norm"], float(np.linalg.norm(dense)), rel_tol=1e-6)
    assert record["note"] == f"{layout} tensor: statistics of its dense form ({STORED[layout]} of 16 stored)"
    assert data["Tensor.__mul__.0.forward"]["output"][0]["Max"] == 6.0
    _inspect_passes(root)


def test_an_uncoalesced_coo_tensor_counts_a_position_stored_twice_once(tmp_path):
    twice = torch.sparse_coo_tensor(torch.tensor([[0, 0, 1], [1, 1, 0]]), torch.tensor([2.0, 3.0, -1.0]), (2, 2))
    _, data, _ = _dump(tmp_path, lambda: twice * 1)
    record = data["Tensor.__mul__.0.forward"]["input_args"][0]
    assert (record["Max"], record["Min"], record["Mean"]) == (5.0, -1.0, 1.0)
    assert math.isclose(record["Norm"], math.sqrt(26.0), rel_tol=1e-6)


def test_all_zero_integer_and_meta_sparse_tensors(tmp_path):
    def work():
        torch.zeros(3, 3).to_sparse_csr().mul(2)
        return torch.tensor([[0, 7], [-4, 0]]).to_sparse().mul(1)

    _, data, _ = _dump(tmp_path, work)
    zeros = data["Tensor.mul.0.forward"]["input_args"][0]
    assert [zeros[k] for k in ("Max", "Min", "Mean", "Norm")] == [0.0, 0.0, 0.0, 0.0]
    integers = data["Tensor.mul.1.forward"]["input_args"][0]
    assert [integers[k] for k in ("Max", "Min", "Mean", "Norm")] == [7, -4, None, None]  # msprobe's integers
    # a meta one (few APIs take it: its statistics straight from the adapter) has no values, not zeros
    meta = torch.sparse_coo_tensor(torch.empty(2, 0, dtype=torch.long, device="meta"), torch.empty(0, device="meta"),
                                   (3, 3))
    found = TorchAdapter().tensor_stats(meta, "low", False)
    assert [found[k] for k in ("Max", "Min", "Mean", "Norm")] == [None] * 4


@pytest.mark.parametrize("task, summary_mode", [("tensor", "statistics"), ("statistics", "md5"),
                                                ("statistics", "xor")])
def test_a_sparse_tensor_has_no_file_and_no_checksum(tmp_path, task, summary_mode):
    result, data, root = _dump(tmp_path, lambda: _sparse_work(SPARSE["sparse_csr"]), task, summary_mode)
    assert torch.equal(result, DENSE * 2)
    record = data["Tensor.__mul__.0.forward"]["input_args"][0]
    if task == "tensor":
        assert record["data_name"] is None
        assert record["note"] == "sparse_csr tensor on cpu: statistics of its dense form, no file written"
    else:
        assert "md5" in record and record["md5"] is None
    assert "Tensor.add.0.forward" in data
    _inspect_passes(root)


def _nested_work(make):
    """A nested tensor through an API, with a backward: the output's and the gradient's components."""
    nested = make()
    out = nested * 2
    values = out.values() if out.layout != torch.strided else torch.cat([p.reshape(-1) for p in out.unbind()])
    (values * values).sum().backward()
    return [p.detach() for p in out.unbind()] + list(nested.grad.unbind())


@pytest.mark.parametrize("layout", sorted(NESTED))
def test_a_nested_tensor_is_recorded_by_its_values_and_the_training_is_unchanged(tmp_path, layout):
    expected = _nested_work(NESTED[layout])
    got, data, root = _dump(tmp_path, lambda: _nested_work(NESTED[layout]), task="tensor")
    assert len(got) == 4 and all(torch.equal(a, b) for a, b in zip(got, expected))
    assert "Tensor.add.0.forward" in data
    entry = data["Tensor.__mul__.0.forward"]
    record = entry["input_args"][0]
    values = torch.cat(PARTS).double()
    assert record["shape"] == [6, 3] and record["requires_grad"] is True
    assert (record["Max"], record["Min"]) == (values.max().item(), values.min().item())
    assert math.isclose(record["Norm"], values.norm().item(), rel_tol=1e-6)
    if layout == "jagged":
        assert record["type"] == "torch.nested._internal.nested_tensor.NestedTensor" and "note" not in record
    else:
        assert record["type"] == "torch.Tensor"
        assert record["note"] == "nested tensor of 2 tensors: shape and statistics of their values joined"
    saved = torch.load(find_rank_dirs(root)[0].tensor_dir / record["data_name"], weights_only=True)
    assert torch.equal(saved, torch.cat(PARTS))
    assert data["Tensor.__mul__.0.backward"]["input"][0]["shape"] == [6, 3]
    _inspect_passes(root)


JAGGED_SCRIPT = """
import json, os, torch
from msprobe.pytorch import PrecisionDebugger
out = os.environ["MSPROBE_OUT"]
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump({"task": "statistics", "level": "L1", "dump_path": out, "statistics": {"summary_mode": "statistics"}}, f)
debugger = PrecisionDebugger(config_path=os.path.join(out, "config.json"))
parts = [torch.arange(6.0).reshape(2, 3) - 2.5, torch.arange(12.0).reshape(4, 3) * 0.25]
nested = torch.nested.nested_tensor(parts, layout=torch.jagged)
debugger.start()
nested * 2
debugger.stop()
debugger.step()
"""


def test_a_jagged_tensor_is_recorded_as_msprobe_26_2_0_records_it(tmp_path):
    theirs = make_upstream_dump("26.2.0", JAGGED_SCRIPT, tmp_path / "msprobe")
    their_entry = json.loads(next(theirs.glob("step0/*/dump.json")).read_text())["data"]["Tensor.__mul__.0.forward"]
    ours = tmp_path / "ours"
    ours.mkdir()
    proc = subprocess.run([sys.executable, "-c", JAGGED_SCRIPT], env={"MSPROBE_OUT": str(ours), "PATH": "/usr/bin"},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    our_entry = find_rank_dirs(ours)[0].load_dump().data["Tensor.__mul__.0.forward"]
    for role in ("input_args", "output"):
        assert len(our_entry[role]) == len(their_entry[role]), role
    for ours_record, their_record in zip(our_entry["input_args"] + our_entry["output"],
                                         their_entry["input_args"] + their_entry["output"]):
        assert sorted(ours_record) == sorted(their_record)
        for key, value in their_record.items():
            if isinstance(value, float):
                assert math.isclose(ours_record[key], value, rel_tol=1e-6), key
            else:
                assert ours_record[key] == value, key


class _TakesOddTensors(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.arange(12.0).reshape(4, 3) / 10)

    def forward(self, sparse, nested):
        return torch.sparse.mm(sparse, self.weight), nested * 2


def _module_step(root=None):
    """One step of a model whose module takes a sparse and a jagged tensor needing gradients: (the output and
    every gradient, the dump's entries)."""
    model = torch.nn.Sequential()
    model.add_module("inner", _TakesOddTensors())
    sparse = DENSE.to_sparse().requires_grad_()
    nested = NESTED["jagged"]()
    debugger = PrecisionDebugger(task="statistics", level="mix", dump_path=str(root)) if root else None
    if debugger:
        debugger.start(model=model)
    dense_out, nested_out = model.inner(sparse, nested)
    (dense_out.sum() + nested_out.values().sum()).backward()
    if debugger:
        debugger.stop()
        debugger.step()
    numbers = [dense_out.detach(), model.inner.weight.grad, sparse.grad.to_dense(), nested.grad.values()]
    return numbers, find_rank_dirs(root)[0].load_dump().data if root else None


def test_a_module_taking_sparse_and_nested_tensors_trains_the_same_and_is_recorded(tmp_path):
    expected, _ = _module_step()
    got, data = _module_step(tmp_path / "dump")
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    forward = data["Module.inner._TakesOddTensors.forward.0"]["input_args"]
    assert forward[0]["note"] == "sparse_coo tensor: statistics of its dense form (4 of 16 stored)"
    assert forward[1]["type"] == "torch.nested._internal.nested_tensor.NestedTensor" and forward[1]["shape"] == [6, 3]
    assert {"Module.inner._TakesOddTensors.backward.0", "Module.inner._TakesOddTensors.parameters_grad"} <= set(data)
