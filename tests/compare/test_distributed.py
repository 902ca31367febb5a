"""torchrun, 2 ranks with gloo, gradients all-reduced; rank 1 of the target run has the planted change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.compare.compare_helpers import DUMP_TINY, PLANTED_API, dump_env, msprobe
from tests.support.torchrun import two_ranks


def _torchrun(out: Path, plant: bool) -> Path:
    two_ranks(DUMP_TINY, env=dump_env(out, plant=plant, PLANT_RANK="1"), cwd=out.parent, timeout=600)
    return out


@pytest.mark.slow
def test_the_summary_names_the_rank_that_diverged_first(tmp_path):
    golden = _torchrun(tmp_path / "golden", plant=False)
    target = _torchrun(tmp_path / "target", plant=True)
    out = tmp_path / "out"
    done = msprobe("compare", "-tp", target, "-gp", golden, "-o", out, "--no-xlsx", "-j", "2")
    assert done.returncode == 1, done.stderr
    summary = json.loads((out / "compare_summary.json").read_text())
    assert [r["label"] for r in summary["ranks"]] == ["rank0", "rank1"]
    found = summary["first_divergence"]
    assert (found["rank"], found["entry"], found["kind"]) == ("rank1", PLANTED_API, "origin")
    assert "step0/rank1: first divergence at " + PLANTED_API in done.stdout
    rank0 = summary["ranks"][0]["first_divergence"]
    # rank 0 computed the same forward; it only received rank 1's gradients through all_reduce
    assert rank0["entry"].startswith("Distributed.all_reduce.") and rank0["direction"] == "forward"
    only_rank0 = msprobe("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "r0", "--ranks", "0", "--json")
    assert json.loads(only_rank0.stdout)["ranks"][0]["label"] == "rank0"
    none = msprobe("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "r5", "--ranks", "5")
    assert none.returncode == 2 and none.stderr.startswith("msprobe: error: nothing to compare")
