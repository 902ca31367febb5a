"""With ``async_dump``, the next recorded step's directory and journal are opened on the background thread
at step(): its first entry uses them when they are ready, opens its own when not, and an unused one is
removed. (Without it, a step's files are written before step() returns, and nothing is opened ahead.)"""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
import torch

from dumphelpers import MLP
from msprobe.dump import ahead
from msprobe.pytorch import PrecisionDebugger
from msprobe.schema import find_rank_dirs
from msprobe.schema.journal import journal_recorded
from msprobe.schema.index import INDEX_NAME, have_pyarrow

INDEXED = [INDEX_NAME] if have_pyarrow() else []  # the dump's index, where its extra is installed


def _async_debugger(dump_dir, level, **extra):
    config = dump_dir.parent / "config.json"
    config.write_text(json.dumps(dict({"task": "statistics", "level": level, "dump_path": str(dump_dir),
                                       "async_dump": True}, **extra)))
    return PrecisionDebugger(config_path=str(config))


def _step(debugger, model, x):
    debugger.start(model)
    model(x).sum().backward()
    debugger.stop()
    debugger.step()


def _files(rank_dir):
    return sorted(p.name for p in rank_dir.iterdir())


def _entries(rank_dir):
    return json.loads((rank_dir / "dump.json").read_text())["data"]


def test_the_next_steps_directory_is_ready_before_it_starts_and_used(dump_dir):
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    debugger = _async_debugger(dump_dir, "mix", step=[0, 1])
    _step(debugger, model, x)
    debugger.flush()
    assert _files(dump_dir / "step1" / "rank") == ["dump.journal"]  # step 1 not started yet
    assert not journal_recorded(dump_dir / "step1" / "rank" / "dump.journal")
    assert [rank.step for rank in find_rank_dirs(dump_dir)] == [0]  # readers pass it over
    assert subprocess.run([sys.executable, "-m", "msprobe.cli.main", "inspect", str(dump_dir)],
                          capture_output=True).returncode == 0
    opened = debugger.engine.output._ahead
    _step(debugger, model, x)
    debugger.flush()
    assert opened is not None and opened._taken and opened._writer is None  # handed out, not opened again
    assert _files(dump_dir / "step1" / "rank") == sorted(["construct.json", "dump.json", "stack.json"] + INDEXED)
    assert _entries(dump_dir / "step1" / "rank").keys() == _entries(dump_dir / "step0" / "rank").keys()
    assert not (dump_dir / "step2").exists()  # not a recorded step: nothing opened


def test_a_first_entry_before_the_background_thread_opens_its_own(dump_dir):
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    debugger = _async_debugger(dump_dir, "L1")
    debugger.start(model)
    model(x).sum().backward()
    debugger.stop()
    blocked = threading.Event()
    debugger.engine.output._file_writer().call(blocked.wait, "a slow disk")
    debugger.step()  # step 1's directory is asked for behind the slow work
    opened = debugger.engine.output._ahead
    _step(debugger, model, x)  # its entries came first
    blocked.set()
    debugger.flush()
    rank_dir = dump_dir / "step1" / "rank"
    assert opened.rank_dir == str(rank_dir) and opened._taken and opened._made == []  # never opened
    assert _files(rank_dir) == sorted(["construct.json", "dump.json", "stack.json"] + INDEXED)  # one writer, finished
    assert _entries(rank_dir).keys() == _entries(dump_dir / "step0" / "rank").keys()


def test_a_directory_opened_ahead_and_not_used_is_removed(dump_dir):
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    debugger = _async_debugger(dump_dir, "L1")
    _step(debugger, model, x)
    debugger.flush()
    assert (dump_dir / "step1" / "rank" / "dump.journal").exists()
    debugger.step()  # step 1 ends without a start(): removed, and step 2 (after a step that wrote nothing) not opened
    debugger.flush()
    assert sorted(p.name for p in dump_dir.iterdir()) == ["step0"]
    _step(debugger, model, x)  # step 2 writes: step 3 opened ahead ...
    debugger.flush()
    assert (dump_dir / "step3" / "rank" / "dump.journal").exists()
    debugger.engine.close()  # ... and removed at exit without a start()
    assert sorted(p.name for p in dump_dir.iterdir()) == ["step0", "step2"]


def test_prepare_dirs_makes_what_is_missing_and_stops_at_a_journal(tmp_path):
    step, rank = tmp_path / "step4", tmp_path / "step4" / "rank"
    journal = rank / "dump.journal"
    assert ahead._prepare_dirs([str(step), str(rank)], str(journal)) == [str(step), str(rank)]
    assert ahead._prepare_dirs([str(step), str(rank)], str(journal)) == []  # made already
    journal.write_bytes(b"")
    assert ahead._prepare_dirs([str(tmp_path / "step5")], str(journal)) is None  # a journal is there
    assert not (tmp_path / "step5").exists()  # nothing done
    (tmp_path / "step6").write_text("a file where a directory goes")
    with pytest.raises(OSError) as raised:
        ahead._prepare_dirs([str(tmp_path / "step6"), str(tmp_path / "step6" / "rank")], str(tmp_path / "j"))
    assert str(tmp_path / "step6") in str(raised.value)
