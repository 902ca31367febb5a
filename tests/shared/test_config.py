"""config.json validation: every bad value is one line naming the file and the field."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from msprobe.schema import IntRanges, SchemaError, config_to_json, load_config, parse_config


@pytest.mark.parametrize("doc, field, expected", [
    ({"task": "stats"}, "field 'task'", "expected one of statistics, tensor, overflow_check"),
    ({"level": "L3"}, "field 'level'", "expected one of L0, L1, mix"),
    ({"step": [0, "3-1"]}, "field 'step'", "ranges with a <= b"),
    ({"rank": "0"}, "field 'rank'", "expected a list"),
    ({"async_dump": "yes"}, "field 'async_dump'", "expected true or false"),
    ({"statistics": {"summary_mode": "sha"}}, "field 'statistics.summary_mode'",
     "expected one of statistics, md5, xor"),
    ({"statistics": {"data_mode": ["forwards"]}}, "field 'statistics.data_mode'", "expected one of all"),
    ({"tensor": {"scope": "Module.a"}}, "field 'tensor.scope'", "expected a list of strings"),
    ({"overflow_check": {"overflow_nums": 0}}, "field 'overflow_check.overflow_nums'", "-1 (unlimited)"),
    ({"levle": "L1"}, "field 'levle'", "did you mean 'level'"),
    ({"statistics": {"summary": "md5"}}, "field 'statistics.summary'", "did you mean 'summary_mode'"),
    ([], None, "expected a JSON object"),
])
def test_bad_values_name_the_field(tmp_path, doc, field, expected):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SchemaError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(str(path)) and expected in message and "\n" not in message
    if field:
        assert field in message


def test_ranges_and_defaults():
    config = parse_config({"step": [0, "2-4"], "rank": [1], "task": "tensor", "level": "mix",
                           "tensor": {"list": ["linear"], "data_mode": ["forward", "input"]}})
    assert config.step == (0, 2, 3, 4) and config.wants_step(3) and not config.wants_step(1)
    assert config.wants_rank(1) and not config.wants_rank(0) and config.wants_rank(None)
    assert config.task_config.list == ("linear",) and config.task_config.data_mode == ("forward", "input")
    assert load_config(None).task == "statistics"


def test_constructor_arguments_override_and_are_checked():
    config = parse_config({"task": "statistics", "level": "L1"}, "cfg.json")
    changed = config.overriding(task="tensor", level="mix", dump_path="/tmp/x", step=[1, "3-4"])
    assert (changed.task, changed.level, changed.dump_path, changed.step) == ("tensor", "mix", "/tmp/x", (1, 3, 4))
    with pytest.raises(SchemaError, match="PrecisionDebugger.. arguments: field 'level': expected one of L0, L1, "
                                          "mix, got 'L9'"):
        config.overriding(level="L9")


def test_arguments_apply_before_the_file_is_validated(tmp_path):
    """Issue 31: ``"dump_path": ""`` in the file plus ``dump_path="./x"`` as an argument is a valid setup."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"task": "statistics", "dump_path": "", "level": "L9",
                                "tensor": {"file_format": "bin", "data_mode": ["input"]}}))
    config = load_config(path, dump_path="./x", level="L0", task="tensor")
    assert (config.dump_path, config.level, config.task) == ("./x", "L0", "tensor")
    assert config.task_config.file_format == "bin" and config.task_config.data_mode == ("input",)
    with pytest.raises(SchemaError, match="field 'dump_path': expected a non-empty string"):
        load_config(path, level="L0")
    with pytest.raises(SchemaError, match="PrecisionDebugger.. arguments: field 'step'"):
        load_config(path, dump_path="./x", level="L0", step=["2-1"])
    assert load_config(None, dump_path="./y").dump_path == "./y"


def test_huge_step_range_stays_a_range():
    """``"step": ["0-1000000000"]`` is kept as a range, never expanded into a list (gigabytes). Run under a
    1 GiB address space limit, so expanding it fails quickly instead of exhausting the machine."""
    code = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from msprobe.schema import config_to_json, parse_config
config = parse_config({"step": ["0-1000000000", 7], "rank": ["2-5", 9]})
assert 999999999 in config.step and 1000000001 not in config.step and config.wants_step(5)
assert len(config.step) == 1000000001 and config.wants_rank(4) and not config.wants_rank(6)
print(config_to_json(config)["step"], config_to_json(config)["rank"])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['0-1000000000'] ['2-5', 9]"


def test_ranges_compare_like_the_tuples_they_stand_for():
    ranges = IntRanges([(3, 4), (0, 0), (5, 6)])
    assert ranges == (0, 3, 4, 5, 6) and ranges == [0, 3, 4, 5, 6] and ranges != (0, 3, 4, 5)
    assert ranges.ranges == ((0, 0), (3, 6)) and list(ranges) == [0, 3, 4, 5, 6] and ranges.to_json() == [0, "3-6"]
    assert 2 not in ranges and True not in ranges and "3" not in ranges and not IntRanges()
    with pytest.raises(SchemaError, match="field 'rank'"):
        parse_config({"rank": [2 ** 60]})


def test_summary_mode_xor_is_accepted():
    """msprobe 26.x writes a 64-bit XOR checksum with ``summary_mode: "xor"``."""
    config = parse_config({"task": "statistics", "statistics": {"summary_mode": "xor"}})
    assert config.summary_mode == "xor"
    assert parse_config(config_to_json(config)).summary_mode == "xor"


def test_config_round_trip(tmp_path):
    original = parse_config({"task": "tensor", "level": "L0", "step": [1, 2], "seed": 7,
                             "tensor": {"scope": ["a", "b"], "file_format": "npy"}})
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config_to_json(original)))
    again = load_config(path)
    assert (again.task, again.level, again.step, again.seed, again.task_config.scope) == \
        ("tensor", "L0", (1, 2), 7, ("a", "b"))
