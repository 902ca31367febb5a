"""Dump trees as users leave them (issue 29): unreadable folders, a FIFO or folder in place of dump.json,
odd step names, msprobe 26.x xor checksums. Each is one line and a clear exit status, never a traceback."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from msprobe.schema import RankWriter, SchemaError, load_dump, scan_dump_tree
from tests.support.ci import unavailable
from tests.support.cli import assert_one_line_error, msprobe

HEADER = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None}
TENSOR = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5,
          "Norm": 1.0, "requires_grad": False}


def rank(path: Path, entries: int = 1) -> Path:
    writer = RankWriter(path, HEADER)
    for number in range(entries):
        writer.entry(f"Torch.sin.{number}.forward", {"input_args": [TENSOR], "input_kwargs": {}, "output": [TENSOR]})
    writer.finalize(remove_journal=True)
    return path


def run(*args: str, cwd: Path, unprivileged: bool = False) -> "subprocess.CompletedProcess[str]":
    prefix = []
    if unprivileged and os.geteuid() == 0:
        # root reads any folder; without these two capabilities it is refused like any user
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            unavailable("running as root without setpriv (util-linux): cannot take away root's read access")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    return msprobe(*args, cwd=cwd, timeout=120, prefix=prefix)


@pytest.fixture
def open_dir():
    """A folder anyone may enter (tmp_path's parents are private to root), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="msprobe-perm-"))
    path.chmod(0o755)
    yield path
    for sub in path.rglob("*"):
        if sub.is_dir() and not sub.is_symlink():
            sub.chmod(0o755)
    shutil.rmtree(path)


@pytest.mark.parametrize("command", [["inspect", "dump"], ["overflow_check", "-i", "dump", "-o", "out"]])
def test_unreadable_step_and_rank_folders_are_one_line(open_dir, command):
    rank(open_dir / "dump" / "step0" / "rank0")
    rank(open_dir / "dump" / "step1" / "rank0")
    (open_dir / "dump" / "step1").chmod(0)
    assert_one_line_error(run(*command, cwd=open_dir, unprivileged=True), "dump/step1: cannot read the directory")
    (open_dir / "dump" / "step1").chmod(0o755)
    (open_dir / "dump" / "step1" / "rank0").chmod(0)
    assert_one_line_error(run(*command, cwd=open_dir, unprivileged=True), "dump/step1/rank0: cannot read the directory")
    (open_dir / "dump" / "step1" / "rank0").chmod(0o755)
    (open_dir / "dump" / "step1" / "rank0" / "dump.json").chmod(0)
    assert_one_line_error(run(*command, cwd=open_dir, unprivileged=True), "rank0/dump.json: cannot read")


@pytest.mark.parametrize("make, kind", [(os.mkfifo, "FIFO (named pipe)"), (os.mkdir, "directory")])
def test_fifo_or_folder_in_place_of_dump_json_says_what_it_is(tmp_path, make, kind):
    rank(tmp_path / "dump" / "step0" / "rank0")
    bad = tmp_path / "dump" / "step0" / "rank1" / "dump.json"
    bad.parent.mkdir()
    make(bad)
    for target in ("dump", "dump/step0", "dump/step0/rank1", "dump/step0/rank1/dump.json"):
        assert_one_line_error(run("inspect", target, cwd=tmp_path), f"rank1/dump.json: expected a file, found a {kind}")
    assert_one_line_error(run("overflow_check", "-i", "dump", cwd=tmp_path), f"found a {kind}")
    with pytest.raises(SchemaError, match=re.escape(f"found a {kind}")):
        load_dump(bad)  # never opened: opening a FIFO would wait for a writer


def test_step01_is_its_own_step_and_step_minus_1_is_reported(tmp_path):
    rank(tmp_path / "dump" / "step1" / "rank0", entries=1)
    rank(tmp_path / "dump" / "step01" / "rank0", entries=2)
    rank(tmp_path / "dump" / "step-1" / "rank0")
    tree = scan_dump_tree(tmp_path / "dump")
    assert [(r.step, r.step_label) for r in tree.ranks] == [(1, "step01"), (1, "step1")]
    assert tree.skipped == [f"{tmp_path / 'dump' / 'step-1'}: skipped, not part of the dump "
                            "(a step directory is named step<N>)"]
    shown = run("inspect", "dump", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "steps: 01, 1 " in shown.stdout and "- step01/rank0: " in shown.stdout and "- step1/rank0: " in shown.stdout
    assert shown.stderr == "msprobe: warning: dump/step-1: skipped, not part of the dump " \
                           "(a step directory is named step<N>)\n"
    checked = run("overflow_check", "-i", "dump", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("step01: 1 rank(s), no overflow found; no tensor holds inf/nan\n"
                                     "step1: 1 rank(s), no overflow found; no tensor holds inf/nan\n")
    assert "dump/step-1: skipped" in checked.stderr


def test_xor_checksums_of_msprobe_26_are_read(tmp_path):
    """``summary_mode: "xor"`` dumps hold "0x" and 16 hex digits in ``md5`` and no statistics."""
    record = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "md5": "0x832304e8808f4155"}
    doc = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None,
           "data": {"Functional.linear.0.forward": {"input_args": [record], "input_kwargs": {}, "output": [record]}}}
    path = tmp_path / "rank" / "dump.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    shown = run("inspect", "rank", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "total: 1 rank dump(s), 1 entries, 2 tensors, 0 with inf/nan" in shown.stdout
    assert run("overflow_check", "-i", "rank", cwd=tmp_path).returncode == 0
    for bad in ("0x832304e8808f415", "832304e8808f4155", "0X832304E8808F4155 ", "abcdef1"):
        record["md5"] = bad
        path.write_text(json.dumps(doc))
        assert_one_line_error(run("inspect", "rank", cwd=tmp_path), "field 'data.Functional.linear.0.forward.input_args[0]"
                       ".md5': expected 8 hex digits (CRC-32), 0x and 16 hex digits (xor checksum) or a number")
