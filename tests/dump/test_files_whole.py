"""Tensor files whole or absent (issue 29): a process killed while writing one leaves no partial file under
its final name, ``msprobe inspect`` fails on files dump.json names but that are missing or cut, meta and
sparse tensors are recorded without a file, and a slow disk holds the training back with one note."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import torch

from msprobe.dump import writer as writer_module
from msprobe.dump.writer import TensorFileWriter
from msprobe.pytorch import PrecisionDebugger
from msprobe.schema import find_rank_dirs, iter_records
from tests.support.cli import assert_one_line_error, msprobe


KILLED_MIDWAY = r"""
import builtins, os, sys, threading, torch
from msprobe.pytorch import PrecisionDebugger

real_open, opened, recorded = builtins.open, [], threading.Event()

class Cut:  # the process is killed halfway through the bytes of the 5th tensor file: on the writer thread once
           # all is recorded, on the training thread (a small file, written by the hook) at once
    def __init__(self, handle): self.handle = handle
    def __enter__(self): return self
    def __exit__(self, *exc): self.handle.close()
    def write(self, data):
        self.handle.write(bytes(memoryview(data)[:len(data) // 2])); self.handle.flush()
        recorded.wait(0 if threading.current_thread() is threading.main_thread() else 60); os._exit(9)
    def __getattr__(self, name): return getattr(self.handle, name)

def cutting_open(path, mode="r", *args, **kwargs):
    handle = real_open(path, mode, *args, **kwargs)
    if "w" in mode and "dump_tensor_data" in str(path):
        opened.append(path)
        if len(opened) == 5:
            return Cut(handle)
    return handle

builtins.open = cutting_open
debugger = PrecisionDebugger(task="tensor", level="L1", dump_path=sys.argv[1])
debugger.start()
x = torch.randn(int(sys.argv[2]), int(sys.argv[2]))
for _ in range(6):
    x = torch.tanh(x @ x)
recorded.set()
debugger.stop()
debugger.step()
"""


def test_a_kill_while_writing_leaves_no_partial_file_and_inspect_says_what_is_missing(tmp_path):
    """Files of 1.6 MB: written by the writer thread, behind the records naming them."""
    dump = tmp_path / "dump"
    assert _killed_while_writing(dump, 640)
    inspect = msprobe("inspect", dump)
    assert_one_line_error(inspect, "tensor file(s) named in dump.json missing or unreadable, first ")
    assert f"first {dump}/step0/rank/dump_tensor_data/" in inspect.stderr, inspect.stderr  # the file's own path
    assert "tensor files missing or unreadable:" in inspect.stdout


def test_a_kill_while_the_hook_writes_a_small_file_leaves_every_recorded_entry_whole(tmp_path):
    """Files of 16 KB: written by the hook before the entry's record, so the entry being written when the
    process dies is not in the journal, and every file the journal names is there."""
    dump = tmp_path / "dump"
    assert _killed_while_writing(dump, 64)
    inspect = msprobe("inspect", dump)
    assert inspect.returncode == 0, inspect.stdout + inspect.stderr
    # matmul, tanh, matmul recorded; the second tanh died writing its output
    assert "entries=3 forward=3" in inspect.stdout and "tensors=8" in inspect.stdout, inspect.stdout
    assert "recovered from the journal of an interrupted run" in inspect.stdout, inspect.stdout


def _killed_while_writing(dump: Path, side: int) -> list:
    """KILLED_MIDWAY on side x side tensors: the whole tensor files it left (none cut under its name)."""
    done = subprocess.run([sys.executable, "-c", KILLED_MIDWAY, str(dump), str(side)], capture_output=True,
                          timeout=120)
    assert done.returncode == 9, done.stderr
    files = sorted((dump / "step0" / "rank" / "dump_tensor_data").glob("*.pt"))
    for path in files:  # every file under its final name is whole
        assert torch.load(path, weights_only=True).shape == (side, side)
    return files


def test_inspect_names_a_cut_tensor_file(tmp_path):
    debugger = PrecisionDebugger(task="tensor", level="L1", dump_path=str(tmp_path / "dump"))
    debugger.start()
    torch.sin(torch.ones(3))
    debugger.stop()
    debugger.step()
    assert msprobe("inspect", tmp_path / "dump").returncode == 0
    victim = sorted((tmp_path / "dump" / "step0" / "rank" / "dump_tensor_data").iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:100])
    inspect = msprobe("inspect", tmp_path / "dump")
    assert inspect.returncode == 2
    assert f"{victim.name}: cut short (no zip end record)" in inspect.stdout


def test_meta_and_sparse_tensors_are_recorded_without_a_file(tmp_path):
    debugger = PrecisionDebugger(task="tensor", level="L1", dump_path=str(tmp_path / "dump"))
    debugger.start()
    torch.empty(3, 4, device="meta").mul(2)
    torch.eye(3).to_sparse().mul(2)
    debugger.stop()
    debugger.step()
    rank = find_rank_dirs(tmp_path / "dump")[0]
    data = rank.load_dump().data
    meta = data["Tensor.mul.0.forward"]["output"][0]
    sparse = data["Tensor.mul.1.forward"]["output"][0]
    assert meta["shape"] == [3, 4] and meta["dtype"] == "torch.float32" and meta["data_name"] is None
    assert meta["note"] == "meta tensor: no data, no file written"
    assert sparse["shape"] == [3, 3] and sparse["data_name"] is None
    assert sparse["note"] == "sparse_coo tensor on cpu: statistics of its dense form, no file written"
    named = {record["data_name"] for entry in data.values() for _, record in iter_records(entry)}
    assert {p.name for p in rank.tensor_dir.iterdir()} == named - {None}
    assert msprobe("inspect", tmp_path / "dump").returncode == 0


def test_a_slow_disk_holds_the_training_back_with_one_note(monkeypatch, capfd):
    monkeypatch.setattr(writer_module, "_BACKLOG_BYTES", 1000)
    release = threading.Event()
    files = TensorFileWriter(lambda snapshot, path: release.wait(), size=len)
    producer = threading.Thread(target=lambda: [files.put(b"x" * 400, f"{i}.pt") for i in range(10)])
    producer.start()
    producer.join(0.5)
    assert producer.is_alive() and files._queued_bytes - files._done_bytes <= 1400
    release.set()
    producer.join(10)
    files.drain()
    err = capfd.readouterr().err
    assert err.count("msprobe: note: tensor files are made faster than the disk takes them") == 1, err


def test_md5_of_a_meta_tensor_is_left_out(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "level": "L1", "dump_path": str(tmp_path / "dump"),
                                  "statistics": {"summary_mode": "md5"}}))
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start()
    torch.empty(2, device="meta").mul(2)
    debugger.stop()
    debugger.step()
    record = find_rank_dirs(tmp_path / "dump")[0].load_dump().data["Tensor.mul.0.forward"]["output"][0]
    assert record["Max"] is None and "md5" not in record
