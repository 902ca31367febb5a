"""config.json validation: every bad value is one line naming the file and the field."""
from __future__ import annotations

import json

import pytest

from msprobe.schema import SchemaError, config_to_json, load_config, parse_config


@pytest.mark.parametrize("doc, field, expected", [
    ({"task": "stats"}, "field 'task'", "expected one of statistics, tensor, overflow_check"),
    ({"level": "L3"}, "field 'level'", "expected one of L0, L1, mix"),
    ({"step": [0, "3-1"]}, "field 'step'", "ranges with a <= b"),
    ({"rank": "0"}, "field 'rank'", "expected a list"),
    ({"async_dump": "yes"}, "field 'async_dump'", "expected true or false"),
    ({"statistics": {"summary_mode": "sha"}}, "field 'statistics.summary_mode'", "expected one of statistics, md5"),
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
    with pytest.raises(SchemaError, match="cfg.json: field 'level': expected one of L0, L1, mix, got 'L9'"):
        config.overriding(level="L9")


def test_config_round_trip(tmp_path):
    original = parse_config({"task": "tensor", "level": "L0", "step": [1, 2], "seed": 7,
                             "tensor": {"scope": ["a", "b"], "file_format": "npy"}})
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config_to_json(original)))
    again = load_config(path)
    assert (again.task, again.level, again.step, again.seed, again.task_config.scope) == \
        ("tensor", "L0", (1, 2), 7, ("a", "b"))
