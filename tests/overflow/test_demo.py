"""``msprobe demo``: the overflow part finds the overflow of its tiny fp16 model."""
from __future__ import annotations

import json
from pathlib import Path

from msprobe.cli.demo import DemoContext
from msprobe.overflow.demo import run
from tests.support.cli import msprobe



def test_demo_part_finds_the_exp_overflow(tmp_path, capsys):
    dump = run(DemoContext(out_dir=tmp_path, framework=None))
    captured = capsys.readouterr()
    said = captured.out
    # the online task says when it finds its first overflow, once (the demo trains two steps)
    assert [line for line in captured.err.splitlines() if "overflow_check: first overflow" in line] == [
        f"msprobe: overflow_check: first overflow: Torch.exp.0.forward, inf/nan in output.0; recorded in "
        f"{Path(dump, 'step0', 'rank', 'dump.json')}"], captured.err
    assert "overflow found on the single (non-distributed) rank: Torch.exp.0.forward (module chain: Module.block.Block.forward.0" in said
    [report] = (tmp_path / "overflow" / "analysis").glob("anomaly_analyze_*.json")
    assert json.loads(report.read_text())["rank_0"][0]["op_name"] == "Torch.exp.0.forward"
    assert Path(dump, "step0", "rank", "dump.json").is_file()
    assert run.order == 30


def test_readme_demo_command(tmp_path):
    proc = msprobe("demo", "-o", "msprobe_demo", cwd=tmp_path, timeout=600)
    part = proc.stdout.split("[overflow]", 1)[1].split("\n[", 1)[0]
    assert "overflow found on the single (non-distributed) rank: Torch.exp.0.forward" in part, proc.stdout + proc.stderr
    assert "overflow" not in proc.stderr.split("demo parts failed:", 1)[-1] or proc.returncode == 0


def test_demo_part_skips_under_another_framework(tmp_path, capsys):
    from msprobe.cli.demo import _run_part

    assert _run_part(DemoContext(out_dir=tmp_path, framework="mindspore"), "overflow", run) == "skipped"
    assert capsys.readouterr().out == "  skipped: framework mindspore\n"
    assert not (tmp_path / "overflow").exists()
