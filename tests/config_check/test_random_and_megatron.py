"""Random-call coverage beyond msprobe's list, and Megatron's get_args() capture."""
from __future__ import annotations

import json
import subprocess
import textwrap
import zipfile

import pytest

from cc_helpers import BIN, clean_env, sheet_rows, summary

from msprobe.core.config_check import randomness
from msprobe.core.config_check.compare import compare_packs


@pytest.fixture
def recorder():
    rec = randomness.apply_patches("pytorch")
    yield rec
    randomness.remove_patches()


def test_torch_random_calls_msprobe_misses(recorder):
    import torch
    from torch import nn
    layer = nn.Linear(4, 4)                            # nn.init.kaiming_uniform_ -> Tensor.uniform_
    nn.init.normal_(layer.weight)                      # Tensor.normal_
    nn.init.trunc_normal_(layer.bias)                  # Tensor.normal_/uniform_ inside
    drop = nn.Dropout(0.5)
    drop(torch.ones(3))                                # training: draws numbers
    drop.eval()
    drop(torch.ones(3))                                # eval: no random numbers, not counted
    torch.bernoulli(torch.full((3,), 0.5))
    torch.ones(3).bernoulli_(0.5)
    generator = torch.Generator()
    generator.manual_seed(7)
    torch.rand(2, generator=generator)
    stats = recorder.snapshot()
    count = {api: sum(e["count"] for e in entries) for api, entries in stats.items()}
    assert count["torch.Tensor.uniform_"] >= 2 and count["torch.Tensor.normal_"] >= 1
    assert any("trunc_normal_" in " ".join(e["stack"]) for entries in stats.values() for e in entries)
    assert count["torch.nn.functional.dropout"] == 1
    assert count["torch.bernoulli"] == 1 and count["torch.Tensor.bernoulli_"] == 1
    assert stats["torch.Generator.manual_seed"][0]["seeds"] == [7]
    assert count["torch.rand (generator)"] == 1
    assert isinstance(generator, torch._C.Generator)
    assert any("test_random_and_megatron.py" in frame for frame in stats["torch.Tensor.normal_"][0]["stack"])


def test_mindspore_random_calls():
    script = textwrap.dedent("""
        import json, sys
        from msprobe.core.config_check import randomness
        rec = randomness.apply_patches("mindspore")
        import mindspore as ms
        from mindspore import nn, ops
        ms.set_seed(3)
        ops.rand(2)
        ops.uniform((2,), ms.Tensor(0.0), ms.Tensor(1.0))
        drop = nn.Dropout(p=0.5)
        drop.set_train(True)
        drop(ms.Tensor([1.0, 2.0]))
        nn.Dense(2, 2)
        print(json.dumps({k: sum(e["count"] for e in v) for k, v in rec.snapshot().items()}))
        print(json.dumps(rec.snapshot()["mindspore.set_seed"][0]["seeds"]))
    """)
    done = subprocess.run([str(BIN / "python"), "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    counts, seeds = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    assert counts["mindspore.set_seed"] == 1 and seeds == [3]
    assert counts["mindspore.ops.rand"] == 1 and counts["mindspore.ops.uniform"] == 1
    assert counts["mindspore.nn.Dropout"] == 1
    assert counts["np.random.randint"] >= 1  # MindSpore initializers draw their seeds from numpy


MEGATRON_SCRIPT = """
from msprobe.core.config_check import ConfigChecker
ConfigChecker.apply_patches("pytorch")
import sys, torch
from megatron.training import get_args, initialize
initialize(float(sys.argv[2]))
model = torch.nn.Linear(2, 2)
ConfigChecker(model, output_zip_path=sys.argv[1])
model(torch.ones(1, 2))
"""

# THE ONE FAKE IN THESE TESTS: megatron-core is installed but has no megatron.training, so this
# stands in for Megatron-LM's global argument store (get_args() returns the parsed Namespace).
FAKE_MEGATRON_TRAINING = """
import argparse
import torch
_GLOBAL_ARGS = None

def initialize(lr):
    global _GLOBAL_ARGS
    _GLOBAL_ARGS = argparse.Namespace(lr=lr, micro_batch_size=2, params_dtype=torch.bfloat16, bf16=True,
                                      data_path=["1.0", "/data/x"], tokenizer=object())

def get_args():
    assert _GLOBAL_ARGS is not None, "args is not initialized"
    return _GLOBAL_ARGS
"""


def test_megatron_get_args_captured(tmp_path):
    fake = tmp_path / "fake" / "megatron" / "training"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(FAKE_MEGATRON_TRAINING)
    (tmp_path / "train.py").write_text(MEGATRON_SCRIPT)
    env = clean_env(PYTHONPATH=str(tmp_path / "fake"))
    for name, lr in (("a", "0.1"), ("b", "0.2")):
        done = subprocess.run([str(BIN / "python"), "train.py", f"{name}.zip", lr], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    args = json.loads(zipfile.ZipFile(tmp_path / "a.zip").read("hyperparameters/hyperparameters_dynamic.json"))
    assert args["lr"] == 0.1 and args["params_dtype"] == "torch.bfloat16" and args["tokenizer"] == "<object>"
    compare_packs(tmp_path / "a.zip", tmp_path / "b.zip", tmp_path / "out")
    assert summary(tmp_path / "out")["hyperparameters"] == "error"
    rows = sheet_rows(tmp_path / "out", "hyperparameters")
    assert [(r["file_name"], r["bench_para"], r["level"]) for r in rows] == [
        ("hyperparameters_dynamic.json", "lr", "error")]
