"""dump_path is checked when the debugger is made (issue 29): a file, a read-only folder or an earlier run's
dump stops the script with one line before training starts."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
import torch

from msprobe.pytorch import PrecisionDebugger
from msprobe.schema import MsprobeError, RankWriter, find_rank_dirs
from tests.support.ci import unavailable

HEADER = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None}


def test_a_file_as_dump_path_or_on_its_way_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(MsprobeError, match=r"field 'dump_path': '.*file' cannot be a dump folder: it is a file"):
        PrecisionDebugger(task="statistics", dump_path=str(tmp_path / "file"))
    with pytest.raises(MsprobeError, match=r"cannot be a dump folder: '.*file' is a file"):
        PrecisionDebugger(task="statistics", dump_path=str(tmp_path / "file" / "dump"))


def test_a_read_only_folder_is_refused_before_training(tmp_path):
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv is None:
        unavailable("running as root without setpriv (util-linux): root writes into any folder")
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    script = ("from msprobe.pytorch import PrecisionDebugger\n"
              "from msprobe.schema import MsprobeError\n"
              "try:\n"
              f"    PrecisionDebugger(task='statistics', dump_path={str(read_only / 'dump')!r})\n"
              "except MsprobeError as exc:\n"
              "    print(exc)\n")
    # root writes anywhere; without this capability it is refused like any user
    prefix = [setpriv, "--bounding-set=-dac_override"] if os.geteuid() == 0 else []
    done = subprocess.run(prefix + [sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"'{read_only}' is not writable by this user: choose another dump_path")
    assert done.stdout.count("\n") == 1


def earlier_run(dump_dir, rank: int = 0, hours_ago: float = 1):
    writer = RankWriter(dump_dir / "step0" / f"rank{rank}", HEADER)
    writer.entry("Torch.sin.0.forward", {"input_args": [], "input_kwargs": {}, "output": []})
    writer.finalize(remove_journal=True)
    then = time.time() - hours_ago * 3600
    os.utime(dump_dir / "step0" / f"rank{rank}", (then, then))


def test_a_folder_holding_an_earlier_run_is_refused_and_left_alone(tmp_path):
    earlier_run(tmp_path / "dump")
    before = sorted(p.name for p in (tmp_path / "dump").rglob("*"))
    with pytest.raises(MsprobeError, match=r"already holds the dump of an earlier run \(step0/rank0, 1 rank folder"):
        PrecisionDebugger(task="statistics", dump_path=str(tmp_path / "dump"))
    assert sorted(p.name for p in (tmp_path / "dump").rglob("*")) == before


def dump_one_sin(debugger) -> None:
    debugger.start()
    torch.sin(torch.ones(2))
    debugger.stop()
    debugger.step()


def files_of(folder) -> dict:
    """Every file under ``folder`` (relative path: bytes) and every folder (relative path: None)."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}


def test_other_ranks_of_this_run_may_have_begun(tmp_path):
    earlier_run(tmp_path / "dump", rank=1, hours_ago=0)  # another process of this run, started with this one
    theirs = files_of(tmp_path / "dump" / "step0" / "rank1")
    assert "dump.json" in theirs
    dump_one_sin(PrecisionDebugger(task="statistics", level="L1", dump_path=str(tmp_path / "dump")))
    ranks = {rank.path.name: rank for rank in find_rank_dirs(tmp_path / "dump")}
    assert sorted(ranks) == ["rank", "rank1"]  # this process (no rank: not distributed) beside rank 1
    assert "Torch.sin.0.forward" in ranks["rank"].load().dump.data
    assert files_of(tmp_path / "dump" / "step0" / "rank1") == theirs


def test_other_files_and_empty_step_folders_are_no_dump(tmp_path):
    (tmp_path / "dump" / "step0" / "rank0").mkdir(parents=True)  # a killed run's folder opened ahead
    (tmp_path / "dump" / "notes.txt").write_text("mine")
    dump_one_sin(PrecisionDebugger(task="statistics", level="L1", dump_path=str(tmp_path / "dump")))
    assert (tmp_path / "dump" / "notes.txt").read_text() == "mine"
    opened_ahead = tmp_path / "dump" / "step0" / "rank0"
    assert opened_ahead.is_dir() and files_of(opened_ahead) == {}  # still there, still empty
    [rank] = find_rank_dirs(tmp_path / "dump")
    assert rank.path.name == "rank" and "Torch.sin.0.forward" in rank.load().dump.data


def test_a_second_debugger_of_the_same_script_writes_on(tmp_path):
    dump = str(tmp_path / "dump")
    for step in range(2):  # upstream scripts make the debugger again where they use it
        debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=dump, step=[step])
        for _ in range(step + 1):
            debugger.start()
            torch.sin(torch.ones(2))
            debugger.stop()
            debugger.step()
    assert [rank.step for rank in find_rank_dirs(dump)] == [0, 1]
