"""Every shell command of tools/overflow/README.md is run: here, as written, on dumps made from real torch
values; the demo line by test_demo.py, the two ``export`` lines by test_ascend_mode.py."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import torch

from overflow_builders import api, write_rank
from tests.support.cli import msprobe

REPO = Path(__file__).resolve().parents[2]
ELSEWHERE = {"msprobe demo -o msprobe_demo": "test_demo.py", "export INF_NAN_MODE_ENABLE=1": "test_ascend_mode.py",
             'export MS_ASCEND_CHECK_OVERFLOW_MODE="INFNAN_MODE"': "test_ascend_mode.py"}


def readme_commands() -> list:
    text = (REPO / "tools" / "overflow" / "README.md").read_text()
    blocks = text.split("```shell\n")[1:]
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.split("```", 1)[0].splitlines()]
    return [line for line in lines if line]


def _dumps(root: Path) -> None:
    big = torch.full((2,), 20.0, dtype=torch.float16)
    write_rank(root / "dump" / "step0" / "rank0", [("Torch.exp.0.forward", api([big], [torch.exp(big)]))])
    scores = torch.randn(2, 2)
    masked = scores.masked_fill(torch.ones(2, 2, dtype=torch.bool).triu(1), float("-inf"))
    fill = api([scores], [masked])
    fill["input_args"].append({"type": "float", "value": float("-inf")})
    write_rank(root / "masked_dump" / "rank", [("Tensor.masked_fill.0.forward", fill),
                                               ("Functional.softmax.0.forward", api([masked], [masked.softmax(-1)]))])


def test_every_command_of_the_overflow_readme(tmp_path):
    _dumps(tmp_path)
    commands = readme_commands()
    for line, test_file in ELSEWHERE.items():
        assert line in commands and line.split()[-1] in (Path(__file__).parent / test_file).read_text()
    runs = [line for line in commands if line not in ELSEWHERE]
    assert len(runs) == 3
    outputs = {}
    for line in runs:
        args = shlex.split(line)
        assert args[0] == "msprobe"
        done = msprobe(*args[1:], cwd=tmp_path, timeout=120)
        assert done.returncode == 0 and done.stdout.strip(), (line, done.stderr)
        outputs[line] = done.stdout
    assert "overflow started on rank0 at Torch.exp.0.forward" in outputs[runs[0]]
    assert json.loads(outputs[runs[1]])[0]["origin"] == {"rank": "rank0", "op_name": "Torch.exp.0.forward"}
    assert "overflow started on rank at Tensor.masked_fill.0.forward" in outputs[runs[2]]
    reports = list((tmp_path / "msprobe_out" / "overflow").iterdir())  # three runs, three reports: none replaced another
    assert len(reports) == 3 and all(p.name.startswith("anomaly_analyze_") for p in reports)


def test_the_ignore_list_config_of_the_readme_is_read_as_shown(tmp_path):
    from msprobe.overflow.rules import UserIgnore
    from msprobe.overflow.task import make_task
    from msprobe.schema import load_config

    text = (REPO / "tools" / "overflow" / "README.md").read_text()
    [block] = [b.split("```", 1)[0] for b in text.split("```json\n")[1:] if '"ignore"' in b.split("```", 1)[0]]
    (tmp_path / "config.json").write_text(block)
    task = make_task(load_config(tmp_path / "config.json"))
    assert task.ignores == (UserIgnore("Torch.log", "-inf"),)
    assert not task.keep("Torch.log.0.forward", api([torch.arange(3.0)], [torch.log(torch.arange(3.0))]))
