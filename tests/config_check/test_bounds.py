"""Every input bounded: zip bombs, deep nesting and undecodable environments end in one line, not a crash."""
from __future__ import annotations

import json
import os
import subprocess
import zipfile
import zlib
from pathlib import Path

from cc_helpers import BIN, error_lines, msprobe

from msprobe.core.config_check.formats import load_pack, write_zip

GIB = 2**30


def _bomb(path: Path, inflated: int = GIB) -> Path:
    """A ~1 MB pack whose 'env' entry inflates to 1 GiB of spaces.

    zipfile would spend seconds deflating 1 GiB; the same deflate stream is one fully flushed 16 MiB
    block repeated (each block starts afresh after a full flush), stored raw and then declared
    deflated in the zip's directory, which is what readers trust.
    """
    block = b" " * (16 * 2**20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    count = inflated // len(block)
    stream = piece * count + zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pip", "torch=2.1.0\n")
        archive.writestr("env", stream)
        info = archive.getinfo("env")
        info.compress_type, info.file_size, info.CRC = zipfile.ZIP_DEFLATED, count * len(block), crc
    return path


def test_a_zip_bomb_is_refused_from_the_directory(tmp_path):
    bomb = _bomb(tmp_path / "bomb.zip")
    assert bomb.stat().st_size < 2 * 2**20
    with zipfile.ZipFile(bomb) as archive:  # a real bomb: it does inflate
        with archive.open("env") as stream:
            assert stream.read(4096) == b" " * 4096
    good = tmp_path / "good.zip"
    write_zip(good, {"env": b"{}", "pip": b"torch=2.1.0\n"})
    done = msprobe("-f", "pytorch", "config_check", "-c", str(good), str(bomb), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    (line,) = error_lines(done.stderr)
    assert f"{bomb}: entry 'env' inflates to 1.0 GiB from 1019.8 KiB" in line and "refusing the pack" in line
    assert not (tmp_path / "out").exists()


def test_nesting_too_deep_is_one_line(tmp_path):
    pack = tmp_path / "deep.zip"
    write_zip(pack, {"env": b"{}", "pip": b"", "weights/step0/rank0/weight.json": b"[" * 100_000 + b"]" * 100_000})
    done = msprobe("config_check", "-c", str(pack), str(pack), "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and error_lines(done.stderr) == [
        f"msprobe: error: {pack}: entry 'weights/step0/rank0/weight.json': JSON nested too deeply"]
    nested = {"args": {"0": {"max": 1.0, "min": 0.0, "mean": 0.5, "norm": 1.0}}}
    for _ in range(200):  # deep, but within what JSON readers take: compared as a whole below depth 32
        nested = {"x": nested}
    write_zip(pack, {"env": b"{}", "pip": b"", "dataset/step0/rank0/dataset.json": json.dumps(nested).encode()})
    done = msprobe("config_check", "-c", str(pack), str(pack), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    done = msprobe("config_check", "-d", "deep.yaml", "-o", "p.zip", cwd=tmp_path)
    assert done.returncode == 2 and "deep.yaml: yaml nested too deeply" in done.stderr, done.stderr


def _bytes_env(**extra: bytes):
    env = {key.encode(): value.encode() for key, value in os.environ.items()}
    env.update({key.encode(): value for key, value in extra.items()})
    return env


def test_environment_that_is_not_utf8(tmp_path):
    """env $'X=\\xff' msprobe -f pytorch config_check -d train.sh -o p.zip, and ConfigChecker(...)"""
    (tmp_path / "train.sh").write_text("torchrun train.py --lr 0.1\n")
    env = _bytes_env(X=b"\xff", Y=b"caf\xc3\xa9 \xfe", MY_TOKEN=b"\xffsecret")
    done = msprobe("-f", "pytorch", "config_check", "-d", "train.sh", "-o", "p.zip", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    stored = json.loads(zipfile.ZipFile(tmp_path / "p.zip").read("env"))
    assert stored["X"] == "\\xff" and stored["Y"] == "café \\xfe"  # the bytes, readable, nothing lost
    assert stored["MY_TOKEN"].startswith("<secret hmac:")
    script = ("import torch\nfrom msprobe.core.config_check import ConfigChecker\n"
              "ConfigChecker(torch.nn.Linear(2, 2), 'train.sh', 'dyn.zip')\n")
    done = subprocess.run([str(BIN / "python"), "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert load_pack(tmp_path / "dyn.zip").env["X"] == "\\xff"
    done = msprobe("config_check", "-c", "p.zip", "dyn.zip", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
