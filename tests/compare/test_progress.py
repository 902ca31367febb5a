"""A progress bar over the ranks, for a person at a terminal only; none with --quiet or through a pipe."""
from __future__ import annotations

from pathlib import Path

import pytest

from msprobe.schema import RankWriter
from tests.support.cli import MSPROBE
from tests.support.terminal import on_a_terminal

RECORD = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": -1.0, "Mean": 0.0,
          "Norm": 1.4, "requires_grad": False}


def _dump(root: Path) -> Path:
    for rank in range(3):
        writer = RankWriter(root / "step0" / f"rank{rank}", {"task": "statistics", "level": "L1",
                                                             "framework": "pytorch", "dump_data_dir": None})
        writer.entry("Torch.sin.0.forward", {"input_args": [RECORD], "input_kwargs": {}, "output": [RECORD]})
        writer.finalize(remove_journal=True)
    return root


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_bar_on_a_terminal_none_with_quiet(tmp_path, workers):
    dump = _dump(tmp_path / "dump")
    command = [MSPROBE, "compare", "-tp", dump, "-gp", dump, "--no-xlsx", "-j", workers, "-o"]
    code, err = on_a_terminal(command + [tmp_path / "shown"], tmp_path)
    assert code == 0 and "compare" in err and "\x1b[" in err, err  # a bar drawn, then cleared
    code, err = on_a_terminal(command + [tmp_path / "quiet", "--quiet"], tmp_path)
    assert code == 0 and err == "", err
    assert len(list((tmp_path / "quiet").glob("compare_result_rank*_*.csv"))) == 3
