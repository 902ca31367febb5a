"""Our numbers equal msprobe's (26.2.0's compare) on the rows both write, on our dumps and on dumps made
by msprobe 8.3.3 and 26.2.0 themselves (through tests/support/upstream_msprobe.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

import pytest

from msprobe.schema import find_rank_dirs
from tests.compare.compare_helpers import DUMP_TINY, PLANTED_API, TINY_MODEL, msprobe, read_csv
from tests.support.upstream_msprobe import make_upstream_dump, run_upstream_cli

SKIP_COLUMNS = {"NPU_Stack_Info", "Result", "Err_message", "Requires_grad Consistent"}
"""Judgements, not numbers: msprobe's rules for Result differ from ours (see the README)."""


def _number(text: str):
    try:
        return float(text.strip().rstrip("%"))
    except ValueError:
        return None


def assert_same_numbers(ours: List[Dict[str, str]], theirs: List[Dict[str, str]], min_common: int) -> None:
    theirs_by_name = {r["NPU Name"]: r for r in theirs}
    common = [r for r in ours if r["NPU Name"] in theirs_by_name and r["Bench Name"] != "N/A"]
    assert len(common) >= min_common, (len(common), len(ours), len(theirs))
    assert list(ours[0].keys()) == list(theirs[0].keys())
    mismatches = []
    for row in common:
        other = theirs_by_name[row["NPU Name"]]
        for column, value in row.items():
            if column in SKIP_COLUMNS or value == other[column]:
                continue
            a, b = _number(value), _number(other[column])
            if a is None or b is None or abs(a - b) > 1e-6 * max(1.0, abs(b)):
                mismatches.append((row["NPU Name"], column, value, other[column]))
    assert not mismatches, mismatches[:10]


def _upstream_compare(target: Path, golden: Path, out: Path) -> List[Dict[str, str]]:
    t_file, g_file = (find_rank_dirs(p)[0].path / "dump.json" for p in (target, golden))
    out.mkdir()
    done = run_upstream_cli("26.2.0", ["compare", "-tp", t_file, "-gp", g_file, "-o", out], cwd=out)
    found = list(out.glob("compare_result_*.csv"))
    assert len(found) == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return read_csv(found[0])


def _ours(target: Path, golden: Path, out: Path) -> List[Dict[str, str]]:
    done = msprobe("compare", "-tp", target, "-gp", golden, "-o", out, "--no-xlsx")
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads((out / "compare_summary.json").read_text())
    assert summary["first_divergence"]["entry"] == PLANTED_API
    return read_csv(Path(summary["ranks"][0]["files"]["csv"]))


@pytest.mark.slow
@pytest.mark.parametrize("task", ["statistics", "tensor"])
def test_numbers_equal_msprobe_262_on_our_dumps(tiny_dumps, tmp_path, task):
    target, golden = tiny_dumps[task + "_planted"], tiny_dumps[task]
    theirs = _upstream_compare(target, golden, tmp_path / "theirs")
    assert_same_numbers(_ours(target, golden, tmp_path / "ours"), theirs, min_common=480)  # msprobe's default set


@pytest.mark.slow
@pytest.mark.parametrize("version", ["8.3.3", "26.2.0"])
def test_numbers_equal_msprobe_on_msprobe_dumps(tmp_path, version):
    dumps = {}
    for name, plant in (("golden", ""), ("planted", "tanh")):
        env = {"DUMP_TASK": "statistics", "PLANT": plant, "TINY_MODEL": str(TINY_MODEL), "OMP_NUM_THREADS": "1"}
        dumps[name] = make_upstream_dump(version, DUMP_TINY, tmp_path / name, env=env)
    labels = {r.label for p in dumps.values() for r in find_rank_dirs(p)}
    assert all(label.startswith("proc" if version == "26.2.0" else "rank") for label in labels)
    theirs = _upstream_compare(dumps["planted"], dumps["golden"], tmp_path / "theirs")
    assert_same_numbers(_ours(dumps["planted"], dumps["golden"], tmp_path / "ours"), theirs, min_common=300)
