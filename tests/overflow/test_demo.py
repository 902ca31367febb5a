"""``msprobe demo``: the overflow part finds the overflow of its tiny fp16 model."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from msprobe.cli.demo import DemoContext
from msprobe.overflow.demo import run

BIN = Path(sys.executable).parent


def test_demo_part_finds_the_exp_overflow(tmp_path, capsys):
    dump = run(DemoContext(out_dir=tmp_path, framework=None))
    said = capsys.readouterr().out
    assert "overflow found on the single (non-distributed) rank: Torch.exp.0.forward (module chain: Module.block.Block.forward.0" in said
    [report] = (tmp_path / "overflow" / "analysis").glob("anomaly_analyze_*.json")
    assert json.loads(report.read_text())["rank_0"][0]["op_name"] == "Torch.exp.0.forward"
    assert Path(dump, "step0", "rank", "dump.json").is_file()
    assert run.order == 30


def test_readme_demo_command(tmp_path):
    proc = subprocess.run([str(BIN / "msprobe"), "demo", "-o", "demo_out"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    part = proc.stdout.split("[overflow]", 1)[1].split("\n[", 1)[0]
    assert "overflow found on the single (non-distributed) rank: Torch.exp.0.forward" in part, proc.stdout + proc.stderr
    assert "overflow" not in proc.stderr.split("demo parts failed:", 1)[-1] or proc.returncode == 0
