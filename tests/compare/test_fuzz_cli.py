"""Fuzz test (issue 29) of ``msprobe compare``: any two dump trees give a comparison or the suite's one-line
error (exit 2); never a traceback or a hang."""
from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msprobe.cli.main import main
from tests.shared.dump_trees import build_tree, encode, run_command, trees

TENSOR = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5,
          "Norm": 1.0, "requires_grad": False}
DUMP = {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None,
        "data": {"Torch.exp.0.forward": {"input_args": [TENSOR], "input_kwargs": {}, "output": [TENSOR]}}}
WHOLE = [(["step0", "rank0", "dump.json"], "file", encode(DUMP))]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(target=trees, golden=trees, options=st.lists(st.sampled_from([["--json"], ["--no-xlsx"], ["--steps", "0"]]),
                                                     max_size=2))
@example(target=WHOLE, golden=WHOLE, options=[])
@example(target=[(["step0", "rank0", "dump.json"], "fifo", b"")],
         golden=[(["step0", "rank0", "dump.json"], "file", encode(DUMP))], options=[])
def test_compare_command(tmp_path_factory, capsys, target, golden, options):
    root = tmp_path_factory.mktemp("trees")
    build_tree(root / "target", target)
    build_tree(root / "golden", golden)
    args = ["compare", "-tp", str(root / "target"), "-gp", str(root / "golden"), "-o", str(root / "out")]
    args += [item for option in options for item in option]
    code, err = run_command(main, capsys, args, (0, 1, 2), 60)
    if target == golden == WHOLE and not options:  # a whole dump against itself
        assert code == 0, err
