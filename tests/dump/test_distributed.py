"""torchrun --nproc_per_node 2 with gloo on CPU: one directory per rank, collectives recorded, rank filter."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprobe.schema import find_rank_dirs
from tests.support.torchrun import two_ranks

WORKER = Path(__file__).with_name("dist_worker.py")


def _torchrun(dump: Path, ranks: str) -> None:
    two_ranks(WORKER, dump, ranks, timeout=240)


@pytest.mark.slow
def test_torchrun_two_ranks(tmp_path):
    dump = tmp_path / "dump"
    _torchrun(dump, "")
    ranks = find_rank_dirs(dump)
    assert sorted((r.step, r.label) for r in ranks) == [(0, "rank0"), (0, "rank1"), (1, "rank0"), (1, "rank1")]
    for rank in ranks:
        data = json.loads((rank.path / "dump.json").read_text())["data"]
        reduce_names = [n for n in data if n.startswith("Distributed.all_reduce.")]
        assert reduce_names == [f"Distributed.all_reduce.{i}.forward" for i in range(3)]
        total = data["Distributed.all_reduce.2.forward"]
        assert total["input_args"][0]["Max"] == float(rank.rank)  # recorded before the collective ran
        assert total["output"][0]["Max"] == 1.0  # 0 + 1
        assert "Module.Linear.forward.0" not in data  # the root model is not recorded


@pytest.mark.slow
def test_rank_filter_does_not_block_other_ranks(tmp_path):
    dump = tmp_path / "dump"
    _torchrun(dump, "1")
    assert sorted((r.step, r.label) for r in find_rank_dirs(dump)) == [(0, "rank1"), (1, "rank1")]
