"""What users see for unusual and bad input: one-sided parameters, shapes, dtypes, broken files."""
from __future__ import annotations

import argparse
import json
import shutil

import pytest
import torch

from msprobe.ckpt_compare import writer

ARGS = argparse.Namespace(num_layers=4, swiglu=True, untie_embeddings_and_output_weights=True)


def test_one_sided_parameters_shape_mismatch_and_vocab_padding(layouts, full, cli, tmp_path):
    other = dict(full["dense"])
    del other["decoder.layers.3.self_attention.linear_proj.bias"]
    other["decoder.layers.0.self_attention.q_layernorm.weight"] = torch.ones(8)
    other["decoder.layers.0.pre_mlp_layernorm.weight"] = torch.ones(32)
    emb = other["embedding.word_embeddings.weight"]
    other["embedding.word_embeddings.weight"] = torch.cat([emb, torch.zeros(64, emb.shape[1])])
    writer.write_megatron(tmp_path / "other", other, ARGS, tp=2, split_dims=full["dense_dims"], gated=True)
    code, stdout, _ = cli.compare(layouts["core_tp1"], tmp_path / "other", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert code == 0
    assert data["decoder.layers.3.self_attention.linear_proj.bias"]["only_in"] == "path1"
    assert data["decoder.layers.0.self_attention.q_layernorm.weight"] == {
        "l2": None, "cos": None, "numel": 8, "shape": [8], "only_in": "path2"}
    mismatch = data["decoder.layers.0.pre_mlp_layernorm.weight"]
    assert mismatch["error"] == "shape mismatch" and mismatch["shape"] == [64] and mismatch["shape_path2"] == [32]
    vocab = data["embedding.word_embeddings.weight"]
    assert vocab["cos"] == 1.0 and vocab["l2"] == 0.0 and "256 vs 320" in vocab["note"]
    assert "only in path1: 1" in stdout and "only in path2: 1" in stdout and "shape mismatch: 1" in stdout


def test_bfloat16_shards_against_float32(layouts, full, cli, tmp_path):
    bf16 = {k: v.to(torch.bfloat16) for k, v in full["dense"].items()}
    back = {k: v.float() for k, v in bf16.items()}
    writer.write_megatron(tmp_path / "bf16", bf16, ARGS, tp=2, pp=2, split_dims=full["dense_dims"], gated=True)
    writer.write_megatron(tmp_path / "f32", back, ARGS, split_dims=full["dense_dims"], gated=True)
    code, _, _ = cli.compare(tmp_path / "f32", tmp_path / "bf16", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and all(e["l2"] == 0.0 for e in data.values())


def test_nan_and_replica_mismatch_are_reported(full, cli, tmp_path):
    dense = dict(full["dense"])
    dense["decoder.layers.0.mlp.linear_fc2.weight"] = dense["decoder.layers.0.mlp.linear_fc2.weight"].clone()
    dense["decoder.layers.0.mlp.linear_fc2.weight"][0, 0] = float("nan")
    writer.write_megatron(tmp_path / "a", full["dense"], ARGS, split_dims=full["dense_dims"], gated=True)
    writer.write_megatron(tmp_path / "b", dense, ARGS, tp=2, split_dims=full["dense_dims"], gated=True)
    shard = tmp_path / "b" / "iter_0000005" / "mp_rank_01" / "model_optim_rng.pt"
    state = torch.load(shard, weights_only=False)  # written by this test: trusted
    state["model"]["decoder.final_layernorm.weight"] = state["model"]["decoder.final_layernorm.weight"] + 1
    torch.save(state, shard)
    code, stdout, _ = cli.compare(tmp_path / "a", tmp_path / "b", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    fc2 = data["decoder.layers.0.mlp.linear_fc2.weight"]
    assert code == 0 and fc2["l2"] is None and fc2["cos"] is None and "non-finite" in fc2["note"]
    assert data["decoder.final_layernorm.weight"]["replicas_differ_path2"] == ["tp1 ep0"]
    assert "non-finite values: 1" in stdout and "replicas differ across ranks: 1" in stdout



def test_existing_output_is_refused(layouts, cli, tmp_path):
    out = tmp_path / "taken.json"
    out.write_text("{}")
    cli.one_line_error(layouts["core_tp1"], layouts["core_tp1"], out, str(out), "exists")
    assert out.read_text() == "{}"


def test_missing_shard(layouts, cli, tmp_path):
    broken = shutil.copytree(layouts["real_tp2pp2"], tmp_path / "broken")
    shutil.rmtree(broken / "iter_0000005" / "mp_rank_01_001")
    cli.one_line_error(layouts["core_tp1"], broken, tmp_path / "r.json", "mp_rank_01_001", "missing shard")


def test_truncated_file(layouts, cli, tmp_path):
    broken = shutil.copytree(layouts["core_tp1"], tmp_path / "broken")
    shard = broken / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    cli.one_line_error(layouts["core_tp1"], broken, tmp_path / "r.json", str(shard))


class _Evil:
    def __reduce__(self):
        import os
        return os.system, (f"touch {_Evil.marker}",)


def test_pickle_that_runs_code_is_refused(layouts, cli, tmp_path):
    _Evil.marker = tmp_path / "pwned"
    evil = shutil.copytree(layouts["core_tp1"], tmp_path / "evil")
    shard = evil / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt"
    torch.save({"model": {}, "args": _Evil()}, shard)
    cli.one_line_error(layouts["core_tp1"], evil, tmp_path / "r.json", str(shard), "system", "allow-list")
    assert not _Evil.marker.exists()


@pytest.mark.parametrize("case", ["rank_folder", "bad_tracker", "empty"])
def test_wrong_paths(layouts, cli, tmp_path, case):
    if case == "rank_folder":
        target = layouts["core_tp1"] / "iter_0000005" / "mp_rank_00"
        expected = ("single rank",)
    elif case == "bad_tracker":
        target = shutil.copytree(layouts["core_tp1"], tmp_path / "t")
        (target / "latest_checkpointed_iteration.txt").write_text("9")
        expected = ("latest_checkpointed_iteration.txt", "iter_0000009")
    else:
        target = tmp_path / "empty"
        target.mkdir()
        expected = (str(target), "mp_rank_")
    cli.one_line_error(layouts["core_tp1"], target, tmp_path / "r.json", *expected)


@pytest.mark.parametrize("damage", ["missing_distcp", "truncated_distcp", "bad_metadata"])
def test_broken_torch_dist(layouts, cli, tmp_path, damage):
    broken = shutil.copytree(layouts["real_dist_tp2pp2"], tmp_path / "broken")
    folder = broken / "iter_0000005"
    if damage == "missing_distcp":
        (folder / "__3_1.distcp").unlink()
        expected = (str(folder / "__3_1.distcp"), "missing")
    elif damage == "truncated_distcp":
        target = folder / "__2_0.distcp"
        target.write_bytes(target.read_bytes()[:1000])
        expected = (str(target),)
    else:
        (folder / ".metadata").write_bytes(b"\x80\x04not a pickle")
        expected = (str(folder / ".metadata"),)
    cli.one_line_error(layouts["core_tp1"], broken, tmp_path / "r.json", *expected)


def test_tied_head_and_missing_args(full, cli, tmp_path):
    tied = argparse.Namespace(num_layers=4, swiglu=True, untie_embeddings_and_output_weights=False)
    alone = {k: v for k, v in full["dense"].items() if k != "output_layer.weight"}
    with_head = dict(alone, **{"output_layer.weight": full["dense"]["embedding.word_embeddings.weight"]})
    writer.write_megatron(tmp_path / "tp1", alone, tied, split_dims=full["dense_dims"], gated=True)
    writer.write_megatron(tmp_path / "pp2", with_head, tied, pp=2, tp=2, split_dims=full["dense_dims"], gated=True)
    code, stdout, _ = cli.compare(tmp_path / "tp1", tmp_path / "pp2", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and "output_layer.weight" not in data and all(e["l2"] == 0.0 for e in data.values())
    assert "tied to the embedding" in stdout
    for shard in (tmp_path / "pp2" / "iter_0000005").glob("*/model_optim_rng.pt"):
        state = torch.load(shard, weights_only=False)  # written by this test: trusted
        del state["args"]
        torch.save(state, shard)
    code, stdout, _ = cli.compare(tmp_path / "tp1", tmp_path / "pp2", tmp_path / "r2.json")
    assert code == 0 and "no 'args', so SwiGLU is unknown" in stdout
    assert json.loads((tmp_path / "r2.json").read_text())["decoder.layers.0.mlp.linear_fc1.weight"]["l2"] > 0
