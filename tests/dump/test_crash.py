"""A process killed with SIGKILL keeps every entry recorded before the kill."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from msprobe.schema import find_rank_dirs

SCRIPT = textwrap.dedent("""
    import os, signal, sys, torch
    from msprobe.pytorch import PrecisionDebugger
    debugger = PrecisionDebugger(task=sys.argv[2], level="L1", dump_path=sys.argv[1])
    debugger.start()
    x = torch.ones(3, requires_grad=True)
    for i in range(50):
        x = torch.sin(x) * 1.5
    print("recorded", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize("task", ["statistics", "tensor"])
def test_sigkill_keeps_entries(tmp_path, task):
    script = tmp_path / "killed.py"
    script.write_text(SCRIPT)
    dump = tmp_path / "dump"
    done = subprocess.run([sys.executable, str(script), str(dump), task], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "recorded" in done.stdout
    (rank,) = find_rank_dirs(dump)
    assert rank.interrupted and not (rank.path / "dump.json").exists()
    assert (rank.path / "dump.journal").read_bytes().endswith(b"\n")  # whole lines, one write each
    files = rank.load()
    assert files.dump.recovered and files.dump.framework == "pytorch"
    names = list(files.dump.data)
    assert [f"Torch.sin.{i}.forward" for i in range(50)] == [n for n in names if n.startswith("Torch.sin")]
    assert len([n for n in names if n.startswith("Tensor.__mul__.")]) == 50
    inspect = subprocess.run([sys.executable, "-m", "msprobe.cli.main", "inspect", str(dump), "--json"],
                             capture_output=True, text=True)
    summary = json.loads(inspect.stdout)
    # tensor files the writer had not reached are named, and fail the inspection
    assert inspect.returncode == (2 if summary[0]["bad_files"] else 0), inspect.stderr
    assert all(item.endswith(": missing") for item in summary[0]["bad_files"])
    assert summary[0]["entries"] == 100 and summary[0]["recovered"] is True


def test_a_run_started_again_into_a_killed_runs_dump_is_refused(tmp_path):
    """The dump of a killed run is an earlier run's dump: a second run into the same dump path stops with one
    line before training, and the first run's journal stays as it was."""
    script = tmp_path / "killed.py"
    script.write_text(SCRIPT)
    dump = tmp_path / "dump"
    first = subprocess.run([sys.executable, str(script), str(dump), "statistics"], capture_output=True, text=True)
    assert first.returncode == -signal.SIGKILL, first.stderr
    (rank,) = find_rank_dirs(dump)
    journal = (rank.path / "dump.journal").read_bytes()
    again = subprocess.run([sys.executable, str(script), str(dump), "statistics"], capture_output=True, text=True)
    assert again.returncode == 1 and "recorded" not in again.stdout
    assert f"'{dump}' already holds the dump of an earlier run (step0/rank" in again.stderr.splitlines()[-1]
    assert (rank.path / "dump.journal").read_bytes() == journal


STEPS_SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, torch
    from msprobe.pytorch import PrecisionDebugger
    config = sys.argv[1] + ".json"  # async_dump: the next step's journal is opened ahead
    with open(config, "w") as handle:
        json.dump({"task": "statistics", "level": "L1", "dump_path": sys.argv[1], "async_dump": True}, handle)
    debugger = PrecisionDebugger(config_path=config)
    kill_in_step = int(sys.argv[2])  # the step killed after its sin calls; -1: killed between steps 0 and 1
    for step in range(2):
        debugger.start()
        x = torch.ones(3, requires_grad=True)
        for i in range(5):
            x = torch.sin(x)
        if step == kill_in_step:
            debugger.flush()  # (its journal opened ahead, or not: either way the entries are in a journal)
            os.kill(os.getpid(), signal.SIGKILL)
        debugger.stop()
        debugger.step()
        if kill_in_step < 0:
            debugger.flush()  # step 1's journal is opened ahead: killed before step 1 records
            os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_step_killed_in_its_journal_opened_ahead_keeps_its_entries(tmp_path):
    """With ``async_dump``, step 1's journal is opened ahead (at step 0's step()) under its final name: killed in step 1, its
    entries are there; killed before step 1 recorded anything, the journal holds none and readers pass
    it over; a run started again into that dump path is refused (an earlier run's dump)."""
    script = tmp_path / "killed.py"
    script.write_text(STEPS_SCRIPT)
    sines = [f"Torch.sin.{i}.forward" for i in range(5)]
    for kill_in_step, dump in ((1, tmp_path / "in_step"), (-1, tmp_path / "between")):
        done = subprocess.run([sys.executable, str(script), str(dump), str(kill_in_step)], capture_output=True, text=True)
        assert done.returncode == -signal.SIGKILL, done.stderr
        assert (dump / "step1" / "rank" / "dump.journal").exists()
        ranks = find_rank_dirs(dump)
        if kill_in_step == 1:
            assert [(r.step, r.interrupted) for r in ranks] == [(0, False), (1, True)]
            assert [n for n in ranks[1].load().dump.data if n.startswith("Torch.sin")] == sines
        else:
            assert [(r.step, r.interrupted) for r in ranks] == [(0, False)]
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "between"), "2"], capture_output=True, text=True)
    assert done.returncode == 1 and "already holds the dump of an earlier run (step0/rank" in done.stderr
    assert [(r.step, r.interrupted) for r in find_rank_dirs(tmp_path / "between")] == [(0, False)]
