"""Two runs at once on one dump_path never mix (issue 40): a rank folder another live process writes is
refused in one line (when the debugger is made if its rank is known then, else at its first entry, where the
dump stops and the training goes on); other ranks, and runs after the holder ended, are fine."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from msprobe.dump import rank_lock
from msprobe.pytorch import PrecisionDebugger
from msprobe.schema import MsprobeError

HOLDER = textwrap.dedent("""
    import sys, time, torch
    from msprobe.pytorch import PrecisionDebugger
    debugger = PrecisionDebugger(task="statistics", dump_path=sys.argv[1], level="L1")  # RANK=0: claims rank0
    debugger.start()
    torch.sin(torch.ones(2))  # no torch.distributed: its first entry claims the folder 'rank'
    debugger.stop()
    debugger.step()
    print("ready", flush=True)
    time.sleep(120)
""")


@pytest.fixture
def holder(tmp_path, monkeypatch):
    """A live training process that dumped step 0 of ``tmp_path/dump`` and keeps running."""
    monkeypatch.delenv("RANK", raising=False)
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "dump")], stdout=subprocess.PIPE,
                               text=True, env=dict(__import__("os").environ, RANK="0", OMP_NUM_THREADS="1"))
    try:
        assert process.stdout.readline().strip() == "ready"
        yield process
    finally:
        process.kill()
        process.wait()
        rank_lock.release_all()


def _sin_step(debugger) -> None:
    debugger.start()
    torch.sin(torch.ones(3))
    debugger.stop()
    debugger.step()


def test_a_rank_folder_a_live_process_writes_is_refused(tmp_path, monkeypatch, capsys, holder):
    dump = tmp_path / "dump"
    before = (dump / "step0" / "rank" / "dump.json").read_bytes()
    # rank unknown when made: the first entry finds the folder held; the dump stops, the training goes on
    debugger = PrecisionDebugger(task="statistics", dump_path=str(dump), level="L1")
    _sin_step(debugger)
    assert torch.cos(torch.ones(1)).item() > 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("msprobe: error: dump stopped"), err
    assert f"written by process {holder.pid}, which is still running" in err
    assert (dump / "step0" / "rank" / "dump.json").read_bytes() == before  # nothing of ours in it
    assert sorted(p.name for p in dump.iterdir()) == ["step0"]
    # rank known when made (the launcher's RANK): refused before training starts, like an earlier run's dump
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(MsprobeError, match=rf"field 'dump_path': .*rank0 is being written by process "
                                           rf"{holder.pid}, which is still running"):
        PrecisionDebugger(task="statistics", dump_path=str(dump), level="L1")
    monkeypatch.setenv("RANK", "1")  # another rank of the same run
    PrecisionDebugger(task="statistics", dump_path=str(dump), level="L1")


def test_the_lock_of_an_ended_run_is_taken_over(tmp_path, monkeypatch, holder):
    lock = rank_lock.lock_file(str(tmp_path / "dump"), "rank0")
    assert open(lock).read().strip() == str(holder.pid)  # the lock file names its holder
    holder.kill()
    holder.wait()
    monkeypatch.setenv("RANK", "0")
    debugger = PrecisionDebugger(task="statistics", dump_path=str(tmp_path / "dump"), level="L1")
    assert open(lock).read().strip() == str(__import__("os").getpid())
    _sin_step(debugger)
    data = json.loads((tmp_path / "dump" / "step0" / "rank" / "dump.json").read_text())["data"]
    assert list(data) == ["Torch.sin.0.forward"]
