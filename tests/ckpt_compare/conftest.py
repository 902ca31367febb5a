"""Real Megatron checkpoints for the checkpoint-compare tests, built once and cached between sessions.

megatron_fixture.py writes them with megatron-core's GPTModel (single process, then 4 gloo processes
for TP2 x PP2); the other layouts are re-sharded from the same weights with Megatron's partition_dim.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import torch

from msprobe.ckpt_compare import writer
from msprobe.cli.main import main as msprobe_main
from tests.support.cli import assert_one_line_error

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "megatron_fixture.py"


def _digest() -> str:
    text = SCRIPT.read_bytes() + Path(writer.__file__).read_bytes()
    return hashlib.sha256(text).hexdigest()[:12]


@pytest.fixture(scope="session")
def megatron_dir(request, tmp_path_factory) -> Path:
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider: build per session
    if cache is None:
        out = tmp_path_factory.mktemp("megatron")
    else:
        out = Path(cache.mkdir(f"ckpt_compare_megatron_{_digest()}"))
        for stale in out.parent.glob("ckpt_compare_megatron_*"):
            if stale != out:  # written by an older generator
                shutil.rmtree(stale, ignore_errors=True)
    if not (out / "DONE").exists():
        shutil.rmtree(out)
        out.mkdir()
        for extra in ([], ["--real"]):
            # megatron's save hangs without psutil and can stall on a busy machine: always a timeout.
            run = subprocess.run([sys.executable, str(SCRIPT), str(out)] + extra, capture_output=True,
                                 text=True, timeout=600, cwd=HERE)
            assert run.returncode == 0, run.stderr[-3000:]
        (out / "DONE").write_text("ok")
    return out


@pytest.fixture(scope="session")
def full(megatron_dir) -> Dict:
    return torch.load(megatron_dir / "full.pt", weights_only=True)


def _args(tp=1, pp=1, moe=False):
    import argparse
    return argparse.Namespace(num_layers=4, hidden_size=64, num_attention_heads=8, num_query_groups=4,
                              ffn_hidden_size=96, swiglu=True, untie_embeddings_and_output_weights=True,
                              padded_vocab_size=256, num_experts=4 if moe else None)


@pytest.fixture(scope="session")
def layouts(megatron_dir, full, tmp_path_factory) -> Dict[str, Path]:
    """name → checkpoint root; every layout holds the same weights as core_tp1 unless named otherwise."""
    root = tmp_path_factory.mktemp("layouts")
    dense, dims = full["dense"], full["dense_dims"]
    moe, moe_dims = full["moe"], full["moe_dims"]
    out = {name: megatron_dir / name for name in ("core_tp1", "dist", "real_tp2pp2", "real_dist_tp2pp2", "real_pp2_vpp2", "moe_tp1",
                                                 "moe_dist")}
    specs = {
        "legacy_tp2pp2_release": dict(tp=2, pp=2, style="legacy", iteration="release"),
        "te_tp4": dict(tp=4, style="te"),
        "core_tp2_pp2_vpp2": dict(tp=2, pp=2, vpp=2),
        "core_tp2_pp2_uneven": dict(tp=2, pp=2, stage_layers=[1, 3]),
    }
    for name, spec in specs.items():
        out[name] = writer.write_megatron(root / name, dense, _args(), split_dims=dims, gated=True, **spec)
    out["moe_ep2"] = writer.write_megatron(root / "moe_ep2", moe, _args(moe=True), ep=2, split_dims=moe_dims, gated=True)
    out["moe_tp2_pp2_ep2"] = writer.write_megatron(root / "moe_tp2_pp2_ep2", moe, _args(moe=True), tp=2, pp=2, ep=2,
                                                   split_dims=moe_dims, gated=True)
    perturbed = dict(dense)
    generator = torch.Generator().manual_seed(7)
    key = "decoder.layers.2.mlp.linear_fc1.weight"
    perturbed[key] = dense[key] + 0.01 * torch.randn(dense[key].shape, generator=generator)
    perturbed["decoder.layers.1.input_layernorm.weight"] = dense["decoder.layers.1.input_layernorm.weight"] * 1.5
    out["perturbed_tp1"] = writer.write_megatron(root / "perturbed_tp1", perturbed, _args(), split_dims=dims, gated=True)
    out["perturbed_tp2pp2"] = writer.write_megatron(root / "perturbed_tp2pp2", perturbed, _args(), tp=2, pp=2,
                                                    split_dims=dims, gated=True, style="legacy")
    return out


class Cli:
    """The real ``msprobe`` command run in-process: ``cli(*argv)`` returns (exit code, stdout, stderr)."""

    def __init__(self, capsys) -> None:
        self.capsys = capsys

    def __call__(self, *argv: str):
        code = 0
        try:
            msprobe_main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err

    def compare(self, a, b, out):
        return self("-f", "pytorch", "config_check", "--compare", str(a), str(b), "-o", str(out))

    def one_line_error(self, a, b, out, *expected: str) -> str:
        """Asserts exit 2 with one ``msprobe: error:`` line holding every ``expected`` text; returns it (the
        suite's check of a command's failure, on this in-process run)."""
        code, stdout, stderr = self.compare(a, b, out)
        done = subprocess.CompletedProcess(["msprobe", "config_check", "--compare"], code, stdout, stderr)
        return assert_one_line_error(done, *expected)


@pytest.fixture
def cli(capsys) -> Cli:
    return Cli(capsys)


def changed(tree: Path, dest: Path) -> Path:
    shutil.copytree(tree, dest)
    return dest


def entries_without(data: Dict, key: str) -> List[str]:
    return [n for n, e in data.items() if key not in e]
