"""The justfile recipes that chain tools on user data, run as a user runs them (`./dev <recipe> ARGS`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def dev(*args, cwd: Path = REPO, image: bool = False) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, MSPROBE_VENV=sys.prefix, IMAGE="1" if image else "0")
    return subprocess.run([str(REPO / "dev"), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def launch_scripts(folder: Path):
    a, b = folder / "a.sh", folder / "b.sh"
    a.write_text("torchrun --nproc_per_node 2 pretrain_gpt.py --lr 1e-4 --bf16 --train-iters 10\n")
    b.write_text("torchrun --nproc_per_node 2 pretrain_gpt.py --lr 2e-4 --fp16 --train-iters 10\n")
    return a, b


def checkpoints(folder: Path):
    """The demo's tiny GPT written TP1 and, one layer moved, TP2 x PP2 with legacy names."""
    import torch

    from msprobe.ckpt_compare import demo, writer
    base = demo.tiny_gpt()
    later = dict(base)
    later["decoder.layers.1.mlp.linear_fc2.weight"] = base["decoder.layers.1.mlp.linear_fc2.weight"] + 0.01
    a = writer.write_megatron(folder / "ckpt_a", base, demo.args(), iteration=1)
    b = writer.write_megatron(folder / "ckpt_b", later, demo.args(), tp=2, pp=2, iteration=2, style="legacy")
    assert torch.load(next(a.rglob("*.pt")), weights_only=False)["iteration"] == 1
    return a, b


def check_env_diff(result, out: Path) -> None:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (out / "a.zip").is_file() and (out / "b.zip").is_file()
    assert "hyperparameters" in result.stdout and "error" in result.stdout
    assert any((out / "result").iterdir())


def check_ckpt_diff(result, out: Path) -> None:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    entries = json.loads(out.read_text())
    text = json.dumps(entries)
    assert "decoder.layers.1.mlp.linear_fc2.weight" in text


def test_env_diff_packs_both_scripts_and_names_what_differs(tmp_path):
    a, b = launch_scripts(tmp_path)
    out = tmp_path / "env"
    check_env_diff(dev("env-diff", a, b, out), out)


def test_ckpt_diff_compares_two_layouts(tmp_path):
    a, b = checkpoints(tmp_path)
    out = tmp_path / "diff" / "ckpt.json"
    check_ckpt_diff(dev("ckpt-diff", a, b, out), out)


def test_first_overflow_without_inf_says_so(tmp_path):
    """The offline half runs on any dump; with op_generate's --from-overflow the chain goes on to a verdict."""
    from msprobe.schema import RankWriter  # noqa: F401  (the dump below is written by the dump tool)
    import torch
    from msprobe.pytorch import PrecisionDebugger

    dump = tmp_path / "dump"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "dump_path": str(dump), "level": "L1", "rank": [],
                                  "step": [], "statistics": {"scope": [], "list": [], "data_mode": ["all"]}}))
    model = torch.nn.Linear(4, 4)
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start(model)
    model(torch.ones(2, 4)).sum().backward()
    debugger.stop()
    debugger.step()
    result = dev("first-overflow", dump, tmp_path / "fo")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "first-overflow: no inf/nan in" in result.stdout
