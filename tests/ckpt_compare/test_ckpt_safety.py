"""Hostile and unusual checkpoint contents: bounded reads, args that are not a Namespace, odd tensor kinds."""
from __future__ import annotations

import argparse
import collections
import io
import json
import pickle
import shutil
import struct
import time
import zipfile
import zlib
from pathlib import Path

import pytest
import torch

from msprobe.ckpt_compare import writer

ARGS = argparse.Namespace(num_layers=4, swiglu=True, untie_embeddings_and_output_weights=True)
GiB = 1 << 30


def _deflate_bomb(path: Path) -> None:
    """A valid zip whose archive/data.pkl is 1 GiB of zeros deflated into ~1 MB (written directly)."""
    chunk = bytes(1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)  # the same bytes for every later MiB
    body = first + again * (GiB // len(chunk) - 2) + packer.compress(chunk) + packer.flush()
    crc = 0
    for _ in range(GiB // len(chunk)):
        crc = zlib.crc32(chunk, crc)
    name = b"archive/data.pkl"
    fields = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0, crc, len(body), GiB)
    local = b"PK\x03\x04" + fields + struct.pack("<HH", len(name), 0) + name
    central = (b"PK\x01\x02" + struct.pack("<H", 20) + fields + struct.pack("<HHHHHII", len(name), 0, 0, 0, 0, 0, 0)
               + name)
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 1, 1, len(central), len(local) + len(body), 0)
    path.write_bytes(local + body + central + end)


def test_small_file_inflating_to_a_gigabyte_is_refused_before_inflating(layouts, cli, tmp_path):
    bomb = shutil.copytree(layouts["core_tp1"], tmp_path / "bomb")
    shard = bomb / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt"
    _deflate_bomb(shard)
    assert shard.stat().st_size < 2 << 20
    with zipfile.ZipFile(shard) as archive:  # a real archive: the standard reader sees 1 GiB in it
        assert archive.getinfo("archive/data.pkl").file_size == GiB
    cli.one_line_error(layouts["core_tp1"], bomb, tmp_path / "r.json", str(shard), "archive/data.pkl",
                       "1,073,741,824 bytes", "refused")
    assert not (tmp_path / "r.json").exists()


class _Storage:
    """Pickled as a persistent id naming storage '0', as torch.save does."""


class _Tensor:
    def __init__(self, shape):
        self.shape = shape

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, (_Storage(), 0, self.shape, (1,) * len(self.shape), False,
                                                 collections.OrderedDict())


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ("storage", torch.FloatStorage, "0", "cpu", 4) if isinstance(obj, _Storage) else None


def _pt_with_claimed_shape(path: Path, shape) -> None:
    """A torch.save-style file whose only tensor claims ``shape`` over a 16-byte storage."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump({"model": {"decoder.final_layernorm.weight": _Tensor(shape)}, "args": ARGS})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", buf.getvalue())
        archive.writestr("archive/data/0", bytes(16))
        archive.writestr("archive/version", "3\n")


def test_tensor_larger_than_its_storage_is_refused(layouts, cli, tmp_path):
    liar = shutil.copytree(layouts["core_tp1"], tmp_path / "liar")
    shard = liar / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt"
    _pt_with_claimed_shape(shard, (4,))  # the same writer with an honest shape reads fine
    from msprobe.ckpt_compare.ptfile import load_pt
    assert load_pt(shard)["model"]["decoder.final_layernorm.weight"].shape == (4,)
    _pt_with_claimed_shape(shard, (1 << 40,))
    cli.one_line_error(layouts["core_tp1"], liar, tmp_path / "r.json", str(shard), "reaches past the end",
                       "archive/data/0")


def _replace_args(root: Path, value) -> None:
    for shard in root.rglob("model_optim_rng.pt"):
        state = torch.load(shard, weights_only=False)  # written by this test: trusted
        state["args"] = value
        torch.save(state, shard)


def test_args_saved_as_a_dict_are_read(full, cli, tmp_path):
    writer.write_megatron(tmp_path / "tp1", full["dense"], ARGS, split_dims=full["dense_dims"], gated=True)
    writer.write_megatron(tmp_path / "tp2", full["dense"], ARGS, tp=2, split_dims=full["dense_dims"], gated=True)
    _replace_args(tmp_path / "tp2", dict(vars(ARGS), tensor_model_parallel_size=2))
    code, stdout, _ = cli.compare(tmp_path / "tp1", tmp_path / "tp2", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and "SwiGLU" not in stdout
    assert all(e["l2"] == 0.0 and e["cos"] == 1.0 for e in data.values())


@pytest.mark.parametrize("args", [["--swiglu"], "swiglu", argparse.Namespace(num_layers=4)],
                         ids=["list", "str", "namespace_without_swiglu"])
def test_swiglu_guess_is_said_whenever_args_do_not_tell(full, cli, tmp_path, args):
    writer.write_megatron(tmp_path / "tp1", full["dense"], ARGS, split_dims=full["dense_dims"], gated=True)
    writer.write_megatron(tmp_path / "tp2", full["dense"], ARGS, tp=2, split_dims=full["dense_dims"], gated=True)
    _replace_args(tmp_path / "tp2", args)
    code, stdout, _ = cli.compare(tmp_path / "tp1", tmp_path / "tp2", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    why = "sets neither swiglu" if isinstance(args, argparse.Namespace) else f"'args' is a {type(args).__name__}"
    assert code == 0 and why in stdout and "SwiGLU is unknown" in stdout
    fc1 = data["decoder.layers.0.mlp.linear_fc1.weight"]
    assert "SwiGLU unknown" in fc1["note"] and fc1["cos"] < 1  # the guess (concatenate as stored) is wrong here
    assert "note" not in data["decoder.layers.0.mlp.linear_fc2.weight"]


def test_complex_tensor_is_compared_and_float8_is_named(full, cli, tmp_path):
    gen = torch.Generator().manual_seed(3)
    freqs = torch.randn(16, 8, dtype=torch.complex64, generator=gen)
    moved = freqs + 0.05 * torch.randn(16, 8, dtype=torch.complex64, generator=gen)
    scale = torch.ones(4).to(torch.float8_e4m3fn)
    left = dict(full["dense"], **{"decoder.layers.0.rotary.freqs": freqs, "decoder.layers.0.fp8.scale": scale})
    right = dict(left, **{"decoder.layers.0.rotary.freqs": moved})
    writer.write_megatron(tmp_path / "a", left, ARGS, split_dims=full["dense_dims"], gated=True)
    writer.write_megatron(tmp_path / "b", right, ARGS, tp=2, split_dims=full["dense_dims"], gated=True)
    code, stdout, stderr = cli.compare(tmp_path / "a", tmp_path / "b", tmp_path / "r.json")
    assert code == 0, stderr
    data = json.loads((tmp_path / "r.json").read_text())
    a, b = freqs.flatten().to(torch.complex128), moved.flatten().to(torch.complex128)
    entry = data["decoder.layers.0.rotary.freqs"]
    assert entry["shape"] == [16, 8] and entry["numel"] == 128
    assert entry["l2"] == pytest.approx(torch.linalg.norm(a - b).item(), rel=1e-12)
    assert entry["cos"] == pytest.approx((torch.vdot(a, b).real / (a.norm() * b.norm())).item(), rel=1e-12)
    assert data["decoder.layers.0.fp8.scale"]["error"] == "dtype float8_e4m3fn is not compared"
    assert "not compared: 1 (decoder.layers.0.fp8.scale (dtype float8_e4m3fn is not compared))" in stdout


def test_sparse_tensor_is_named_and_nesting_is_bounded(layouts, cli, tmp_path):
    odd = shutil.copytree(layouts["core_tp1"], tmp_path / "odd")
    shard = odd / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt"
    torch.save({"model": {"decoder.final_layernorm.weight": torch.eye(4).to_sparse()}, "args": ARGS}, shard)
    cli.one_line_error(layouts["core_tp1"], odd, tmp_path / "r.json", str(shard), "sparse tensor")
    nested = {"weight": torch.ones(2)}
    for _ in range(200):
        nested = {"m": nested}
    torch.save({"model": nested, 1: "a key that is not a string", "args": ARGS}, shard)
    cli.one_line_error(layouts["core_tp1"], odd, tmp_path / "r.json", str(shard), "nest deeper than 64 levels")


def test_shared_children_are_counted_each_time_they_are_walked(layouts, cli, tmp_path):
    """40 levels of ``{"a": node, "b": node}`` sharing one child: 2 KB on disk, 2**40 paths, which no
    walk finishes (nor fits in memory). Refused in one line, at once."""
    odd = shutil.copytree(layouts["core_tp1"], tmp_path / "odd")
    shard = odd / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt"
    node = {"weight": torch.ones(2)}
    for _ in range(40):
        node = {"a": node, "b": node}
    torch.save({"model": node, "args": ARGS}, shard)
    assert shard.stat().st_size < 4096
    began = time.monotonic()
    cli.one_line_error(layouts["core_tp1"], odd, tmp_path / "r.json", str(shard), "more than 2097152 objects")
    assert time.monotonic() - began < 10  # (unbounded, the walk ran 24 s to 2.9 GB and a MemoryError: issue 40)
