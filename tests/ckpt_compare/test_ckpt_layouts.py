"""Different parallel layouts of the same Megatron model compare as identical; numbers match torch."""
from __future__ import annotations

import json
import math

import pytest
import torch

SAME_AS_TP1 = ["dist", "real_tp2pp2", "real_dist_tp2pp2", "real_pp2_vpp2", "legacy_tp2pp2_release", "te_tp4", "core_tp2_pp2_vpp2", "core_tp2_pp2_uneven"]


def _compare(cli, tmp_path, a, b, name="out.json"):
    out = tmp_path / name
    code, stdout, stderr = cli("-f", "pytorch", "config_check", "--compare", str(a), str(b), "-o", str(out))
    assert code == 0, stderr
    return json.loads(out.read_text()), stdout


@pytest.mark.parametrize("layout", SAME_AS_TP1)
def test_any_layout_of_the_same_model_is_identical(layouts, full, cli, tmp_path, layout):
    data, stdout = _compare(cli, tmp_path, layouts["core_tp1"], layouts[layout])
    assert set(data) == set(full["dense"])  # every parameter, under megatron-core names
    for name, entry in data.items():
        assert entry["l2"] == 0.0 and entry["cos"] == 1.0, (name, entry)
        assert entry["shape"] == list(full["dense"][name].shape)
        assert entry["numel"] == full["dense"][name].numel()
    assert "worst cos: 1.000000" in stdout and "only in" not in stdout


def _expected(a: torch.Tensor, b: torch.Tensor):
    a, b = a.double().flatten(), b.double().flatten()
    if a.norm() == 0 and b.norm() == 0:
        return 0.0, 1.0  # the tool's convention: two all-zero tensors (fresh biases) are identical
    return torch.linalg.norm(a - b).item(), (a @ b / (a.norm() * b.norm())).item()


@pytest.mark.parametrize("left,right", [("core_tp1", "perturbed_tp1"), ("real_tp2pp2", "perturbed_tp2pp2"),
                                        ("dist", "perturbed_tp2pp2"), ("real_dist_tp2pp2", "perturbed_tp1"), ("te_tp4", "perturbed_tp1")])
def test_numbers_equal_torch_whatever_the_layouts(layouts, full, cli, tmp_path, left, right):
    data, stdout = _compare(cli, tmp_path, layouts[left], layouts[right])
    dense = full["dense"]
    fc1 = "decoder.layers.2.mlp.linear_fc1.weight"
    generator = torch.Generator().manual_seed(7)
    changed = {fc1: dense[fc1] + 0.01 * torch.randn(dense[fc1].shape, generator=generator),
               "decoder.layers.1.input_layernorm.weight": dense["decoder.layers.1.input_layernorm.weight"] * 1.5}
    for name, entry in data.items():
        l2, cos = _expected(dense[name], changed.get(name, dense[name]))
        assert math.isclose(entry["l2"], l2, rel_tol=1e-9, abs_tol=1e-12), name
        assert math.isclose(entry["cos"], cos, rel_tol=1e-12), name
    assert data[fc1]["l2"] > 0 and data[fc1]["cos"] < 1
    norm = "decoder.layers.1.input_layernorm.weight"  # scaled by 1.5: cos stays 1, l2 is the largest
    assert f"worst cos: {data[fc1]['cos']:.6f} ({fc1})" in stdout
    assert f"worst l2: {data[norm]['l2']:.6g} ({norm})" in stdout


def test_naive_concatenation_of_gated_fc1_would_be_wrong(layouts, full):
    """msprobe concatenates TP shards; for SwiGLU fc1 that mixes gate and up rows across TP sizes."""
    import argparse

    from megatron.core.transformer.enums import AttnBackend

    from msprobe.ckpt_compare.ptfile import load_pt
    folder = layouts["real_tp2pp2"] / "iter_0000005"
    with torch.serialization.safe_globals([argparse.Namespace, AttnBackend]):
        shards = [torch.load(folder / f"mp_rank_0{t}_000" / "model_optim_rng.pt", weights_only=True)
                  ["model"]["decoder.layers.0.mlp.linear_fc1.weight"] for t in (0, 1)]
    logical = full["dense"]["decoder.layers.0.mlp.linear_fc1.weight"]
    assert not torch.equal(torch.cat(shards), logical)
    gate = torch.cat([s[: s.shape[0] // 2] for s in shards])
    up = torch.cat([s[s.shape[0] // 2:] for s in shards])
    assert torch.equal(torch.cat([gate, up]), logical)
    assert load_pt(layouts["real_tp2pp2"] / "iter_0000005" / "mp_rank_00_000" / "model_optim_rng.pt")["args"].swiglu


@pytest.mark.parametrize("layout", ["moe_ep2", "moe_tp2_pp2_ep2", "moe_dist"])
def test_expert_parallel_layouts_meet_global_expert_numbers(layouts, full, cli, tmp_path, layout):
    data, _ = _compare(cli, tmp_path, layouts["moe_tp1"], layouts[layout])
    assert set(data) == set(full["moe"])
    assert "decoder.layers.3.mlp.experts.local_experts.3.linear_fc2.weight" in data
    assert all(e["l2"] == 0.0 and e["cos"] == 1.0 for e in data.values())


def test_ambiguous_rank_folder_is_read_from_args(layouts):
    from msprobe.ckpt_compare.compare import open_checkpoint
    names = sorted(p.name for p in (layouts["moe_ep2"] / "iter_0000005").iterdir())
    assert names == ["mp_rank_00_000", "mp_rank_00_001"]  # PP rank or EP rank? args say EP2
    assert open_checkpoint(layouts["moe_ep2"]).layout == "TP1 PP1 EP2 VPP1"
    assert open_checkpoint(layouts["real_tp2pp2"]).layout == "TP2 PP2 EP1 VPP1"


def test_iteration_directory_and_mindspore_framework(layouts, cli, tmp_path):
    out = tmp_path / "ms.json"
    code, stdout, _ = cli("-f", "mindspore", "config_check", "-c", str(layouts["core_tp1"] / "iter_0000005"),
                          str(layouts["legacy_tp2pp2_release"] / "release"), "-o", str(out))
    assert code == 0 and "release" in stdout and len(json.loads(out.read_text())) == 43
