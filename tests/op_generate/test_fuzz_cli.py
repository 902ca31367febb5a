"""Fuzz test (issue 29) of ``msprobe op_generate``: any config_op.json (and any dump it names) gives scripts
or the suite's one-line error (exit 2); never a traceback or a hang."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msprobe.cli.main import main
from tests.shared.dump_trees import file_bytes, json_value, run_command

FIELDS = ["dump_json_path", "api_name", "extract_api_path", "propagation", "data_mode", "random_seed", "iter_times"]
values = st.one_of(json_value, st.sampled_from(["DUMP", "EXTRACT", "Torch.exp.0", "Torch.exp.0.forward", "forward",
                                                "backward", "random_data", "real_data", 1234, 0, 1001]))
_RECORD = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 10 ** 400, "Min": 0.0}
BIG = json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None,
                  "data": {"Torch.exp.0.forward": {"input_args": [_RECORD], "output": [_RECORD]}}}).encode()
configs = st.one_of(st.dictionaries(st.sampled_from(FIELDS), values, max_size=7), json_value)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(config=configs, dump=file_bytes)
@example(config={"dump_json_path": "DUMP", "api_name": "Torch.exp.0"}, dump=BIG)  # issue 40: a 401-digit Max
@example(config={"dump_json_path": "DUMP", "api_name": "Torch.exp.0"}, dump=BIG[:-9])  # truncated
@example(config={"dump_json_path": "DUMP", "api_name": "Torch.exp(__import__('os')).0"}, dump=BIG)
def test_op_generate_command(tmp_path_factory, capsys, config, dump):
    root = tmp_path_factory.mktemp("opgen")
    (root / "dump.json").write_bytes(dump)
    if isinstance(config, dict):
        config = {k: str(root / "dump.json") if v == "DUMP" else str(root / "extract.json") if v == "EXTRACT" else v
                  for k, v in config.items()}
    (root / "config_op.json").write_text(json.dumps(config))
    args = ["-f", "pytorch", "op_generate", "-i", str(root / "config_op.json"), "-o", str(root / "out")]
    code, err = run_command(main, capsys, args, (0, 2), 60)
