"""Fuzz test (issue 29) of ``msprobe overflow_check``: any dump tree gives a report, nothing found, or the
suite's one-line error (exit 2); never a traceback or a hang. Seeds: the issue's cases."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msprobe.cli.main import main
from tests.shared.dump_trees import build_tree, encode, hang_guard, trees

EXP = {"data": {"Torch.exp.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float16",
                                                        "shape": [2], "Max": 20.0, "Min": 20.0, "Mean": 20.0,
                                                        "Norm": 28.0}],
                                        "output": [{"type": "torch.Tensor", "dtype": "torch.float16", "shape": [2],
                                                    "Max": float("inf"), "Min": float("inf"), "Mean": float("inf"),
                                                    "Norm": float("inf")}]}}}

# a statistic written as a 401-digit integer (issue 40): read as inf, never an OverflowError
BIG = {"data": {"Torch.exp.0.forward": {"input_args": EXP["data"]["Torch.exp.0.forward"]["input_args"],
                                        "output": [dict(EXP["data"]["Torch.exp.0.forward"]["output"][0],
                                                        Max=10 ** 400, Min=-10 ** 400)]}}}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(nodes=trees, target=st.sampled_from(["", "step0", "step1/rank0", "step0/rank/dump.json"]),
       options=st.lists(st.sampled_from([["--json"], ["--include-expected"], ["-n", "0"], ["--stack-lines", "1"]]),
                        max_size=2))
@example(nodes=[(["step1", "rank0", "dump.json"], "file", encode(EXP)),
                (["step01", "rank0", "dump.json"], "file", encode(EXP)),
                (["step-1", "rank0"], "dir", b"")], target="", options=[])
@example(nodes=[(["step0", "rank0", "dump.json"], "fifo", b"")], target="", options=[])
@example(nodes=[(["step0", "rank0", "dump.json"], "file", encode(BIG))], target="", options=[["--json"]])  # issue 40
@example(nodes=[(["step0", "rank", "dump.json"], "dir", b"")], target="step0/rank/dump.json", options=[])
def test_overflow_check_command(tmp_path_factory, capsys, nodes, target, options):
    root = tmp_path_factory.mktemp("tree")
    build_tree(root, nodes)
    args = ["overflow_check", "-q", "-i", str(root / target), "-o", str(root / "out")]
    with hang_guard(), pytest.raises(SystemExit) as exited:
        main(args + [item for option in options for item in option])
    err = capsys.readouterr().err
    assert exited.value.code in (0, 2), err
    if exited.value.code == 2:
        assert err.splitlines()[-1].startswith("msprobe: error: ") and "Traceback" not in err, err
