"""bench/cuda_check.py, the comparison a lent GPU runs (bench/gpu_check.sh), run here with both sides on the
CPU; its comparison of two dumps, on records changed on purpose."""
from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "cuda_check.py"


def _module():
    spec = importlib.util.spec_from_file_location("cuda_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_runs_on_the_cpu_and_finds_both_sides_alike():
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--level", "L0", "--steps", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "cpu against cpu, L0, 1 steps, 57 entries a step: 0 statistics off" in done.stdout


def test_statistics_off_by_more_than_the_tolerance_and_missing_entries_are_named():
    check = _module()
    record = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": 2.0, "Min": -1.0,
              "Mean": 1e-7, "Norm": 3.0, "requires_grad": True}
    cpu = {"Module.fc.Linear.forward.0": {"input_args": [record], "output": [dict(record)]}}
    assert check.differences(cpu, copy.deepcopy(cpu)) == []
    close = copy.deepcopy(cpu)
    close["Module.fc.Linear.forward.0"]["output"][0].update(Mean=5e-7, Norm=3.0001)  # within 1e-3 of 2.0 / of 3.0
    assert check.differences(cpu, close) == []
    off = copy.deepcopy(cpu)
    off["Module.fc.Linear.forward.0"]["input_args"][0]["Mean"] = 0.01
    off["Module.fc.Linear.forward.0"]["output"][0]["Norm"] = float("nan")
    off["Module.fc.Linear.backward.0"] = {}
    assert check.differences(cpu, off) == [
        "/Module.fc.Linear.backward.0: on one side only",
        "/Module.fc.Linear.forward.0/input_args/0/Mean: 1e-07 on the CPU, 0.01 here",
        "/Module.fc.Linear.forward.0/output/0/Norm: 3.0 on the CPU, nan here"]
