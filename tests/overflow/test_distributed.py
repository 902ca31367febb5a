"""torchrun, 2 ranks on CPU (gloo): rank 1 goes inf first, rank 0 gets it through all_reduce."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import msprobe
from tests.support.torchrun import two_ranks

HERE = Path(__file__).resolve().parent


def _torchrun(tmp_path: Path, task: str) -> Path:
    dump = tmp_path / f"dump_{task}"
    two_ranks(HERE / "dist_overflow_script.py", dump, task, cwd=tmp_path)
    return dump


@pytest.mark.parametrize("task", ["statistics", "overflow_check"])
def test_analysis_names_rank_1(tmp_path, task):
    dump = _torchrun(tmp_path, task)
    proc = msprobe("overflow_check", "-i", dump / "step0", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "overflow started on rank1 at Torch.exp.0.forward" in proc.stdout, proc.stdout
    [report] = (tmp_path / "out").glob("anomaly_analyze_*.json")
    doc = json.loads(report.read_text())
    assert list(doc) == ["rank_1", "rank_0"]
    assert doc["rank_1"][0]["op_name"] == "Torch.exp.0.forward"
    # rank 0's first event comes after collective 1 (it is the collective itself when the dump records
    # the collective's result correctly, see the next test)
    assert doc["rank_0"][0]["op_name"] in ("Distributed.all_reduce.1.forward", "Torch.add.0.forward")


def test_rank_0_receives_inf_in_the_all_reduce(tmp_path):
    """The dump must show the collective's result (inf) as its output on rank 0, so the analysis can
    name the collective through which rank 0 received the inf."""
    from msprobe.overflow import analyze_dump

    dump = _torchrun(tmp_path, "statistics")
    [result] = analyze_dump(dump / "step0")
    rank0 = next(e for e in result.events if e.rank.rank == 0)
    assert rank0.op_name == "Distributed.all_reduce.1.forward", (
        f"rank 0's first event is {rank0.op_name}: the dump recorded all_reduce's in-place result with "
        f"stale statistics: {rank0.data_info}")
    assert rank0.order_key == (1, 1)
