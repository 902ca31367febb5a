"""The engine core is framework-free: it runs with a numpy-only adapter and imports no framework."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from msprobe.dump import Adapter, DumpEngine
from msprobe.schema import DebuggerConfig, find_rank_dirs


class NumpyAdapter(Adapter):
    framework = "mindspore"
    tensor_suffix = ".npy"
    module_prefix = "Cell"

    def is_tensor(self, value):
        return isinstance(value, np.ndarray)

    def tensor_meta(self, tensor):
        return "mindspore.Tensor", "Float32", list(tensor.shape), False

    def tensor_stats(self, tensor, precision, md5):
        return tensor.copy()

    def stats_to_host(self, handles):
        return [{"Max": float(h.max()), "Min": float(h.min()), "Mean": float(h.mean()),
                 "Norm": float(np.linalg.norm(h))} for h in handles]

    def snapshot(self, tensor):
        return tensor.copy()

    def save_tensor(self, snapshot, path):
        np.save(path, snapshot)

    def install(self, engine, models):
        pass

    def uninstall_forward(self):
        pass


def test_engine_with_a_numpy_adapter(tmp_path):
    engine = DumpEngine(DebuggerConfig(task="tensor", level="mix", dump_path=str(tmp_path)), NumpyAdapter())
    assert engine.begin()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    cell = engine.module_begin("dense", "Dense", (x,), {})
    call = engine.api_begin("Mint", "relu")
    engine.api_inputs(call, (x,), {})
    engine.api_outputs(call, np.maximum(x, 1))
    engine.backward_expect(call, 1, 1, 1, 1)
    engine.module_end(cell, x * 2, {"weight": np.ones(3, dtype=np.float32)})
    engine.backward_grad(call, "input", (0,), np.ones((2, 3), dtype=np.float32))
    engine.backward_grad(call, "output", (0,), np.full((2, 3), 0.5, dtype=np.float32))
    engine.end()
    engine.next_step()
    engine.wait()
    (rank,) = find_rank_dirs(tmp_path)
    data = json.loads((rank.path / "dump.json").read_text())["data"]
    assert list(data) == ["Mint.relu.0.forward", "Cell.dense.Dense.forward.0", "Mint.relu.0.backward"]
    assert data["Mint.relu.0.backward"]["output"][0]["Max"] == 0.5
    assert data["Mint.relu.0.forward"]["output"][0]["data_name"] == "Mint.relu.0.forward.output.0.npy"
    assert np.load(rank.path / "dump_tensor_data" / "Cell.dense.Dense.forward.0.parameters.weight.npy").sum() == 3
    construct = json.loads((rank.path / "construct.json").read_text())
    assert construct == {"Cell.dense.Dense.forward.0": None, "Mint.relu.0.forward": "Cell.dense.Dense.forward.0",
                         "Mint.relu.0.backward": "Cell.dense.Dense.backward.0"}


def test_core_imports_no_framework():
    code = "import sys, msprobe.dump; print(sorted(m for m in ('torch', 'mindspore') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_rank_writer_finalize_indent(tmp_path):
    """The shared-library change this tool made: finalize(indent=None) writes compact JSON, default unchanged."""
    from msprobe.schema import RankWriter, load_dump

    for indent, folder in ((None, "compact"), (1, "indented")):
        writer = RankWriter(tmp_path / folder, {"task": "statistics", "level": "L1", "framework": "pytorch",
                                                "dump_data_dir": None})
        writer.entry("Torch.cos.0.forward", {"input_args": [], "input_kwargs": {}, "output": [float("nan")]})
        writer.finalize(remove_journal=True, indent=indent) if indent is None else writer.finalize(True)
        text = (tmp_path / folder / "dump.json").read_text()
        assert ("\n" in text) == (indent is not None) and "NaN" in text
        assert list(load_dump(tmp_path / folder / "dump.json").data) == ["Torch.cos.0.forward"]
