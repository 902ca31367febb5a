"""tools/dump/FLIGHT_RECORDER.md as a user runs it: its example (a loss spike, then replay under a full dump),
twice (a second run starts afresh), then every command it shows."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe.schema import find_rank_dirs
from tests.support.readme import code_blocks, run_shown

DOC = Path(__file__).resolve().parents[2] / "tools" / "dump" / "FLIGHT_RECORDER.md"


@pytest.mark.slow
def test_the_example_fires_writes_the_ring_and_replays(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    (example,) = code_blocks(text, "python")
    (tmp_path / "example.py").write_text(example)
    for _ in range(2):
        done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600, env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("msprobe")]
    assert line.startswith("msprobe: flight recorder: loss_spike fired at step 120 (value ")
    assert "ring of steps 105-120 written to ./msprobe_out/flight/trigger0 (trigger.json)" in line
    trigger = json.loads((tmp_path / "msprobe_out" / "flight" / "trigger0" / "trigger.json").read_text())
    assert (trigger["detector"], trigger["step"], trigger["ring_steps"][0]) == ("loss_spike", 120, 105)
    (replayed,) = find_rank_dirs(tmp_path / "msprobe_out" / "replay")
    assert replayed.load().dump.level == "mix"
    for command in code_blocks(text, "bash")[0].strip().splitlines():
        shown = run_shown(command, tmp_path)
        assert shown.returncode == 0, (command, shown.stderr)
