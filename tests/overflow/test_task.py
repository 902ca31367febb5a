"""The online task's keep decision, on entries built from real torch values."""
from __future__ import annotations

import pytest
import torch

from msprobe.overflow.rules import parse_ignore
from msprobe.overflow.task import OverflowTask, has_overflow, make_task
from msprobe.schema import DebuggerConfig, SchemaError, TaskConfig, load_config
from overflow_builders import api, record

OK = torch.ones(3)
INF = torch.exp(torch.full((3,), 20.0, dtype=torch.float16))
NAN = INF - INF


def test_keeps_only_overflowing_entries_and_stops_after_overflow_nums():
    task = make_task(DebuggerConfig(task="overflow_check", level="L1", task_config=TaskConfig(overflow_nums=2)))
    assert not task.keep("Torch.mul.0.forward", api([OK], [OK]))
    assert task.keep("Torch.exp.0.forward", api([OK], [INF]))
    assert not task.finished()
    assert task.keep("Tensor.__sub__.0.forward", api([INF, INF], [NAN]))
    assert task.finished() and task.first == "Torch.exp.0.forward"
    assert not task.keep("Torch.exp.1.forward", api([OK], [INF]))


def test_unlimited_and_l1_excludes_primitive_and_jit():
    task = OverflowTask(overflow_nums=-1, level="L1")
    assert not task.keep("Primitive.norm.RmsNorm.0.forward", api([OK], [INF]))
    assert not task.keep("Jit.block.0.forward", api([OK], [INF]))
    for call in range(5):
        assert task.keep(f"Torch.exp.{call}.forward", api([OK], [INF]))
    assert not task.finished()
    assert OverflowTask(level="L0").keep("Module.fc.Linear.forward.0", api([OK], [INF]))


def test_expected_inf_is_not_kept():
    mask_fill = {"input_args": [record(OK), record(OK.bool().float()), {"type": "float", "value": float("-inf")}],
                 "input_kwargs": {}, "output": [record(-INF)]}
    assert not has_overflow("Tensor.masked_fill.0.forward", mask_fill)
    assert not has_overflow("Functional.softmax.0.forward", api([-INF], [OK]))
    assert not has_overflow("Torch.empty.0.forward", {"input_args": [], "output": [record(NAN)]})
    assert has_overflow("Functional.linear.0.forward", api([NAN], [NAN]))
    assert has_overflow("Tensor.__mul__.0.backward", {"input": [record(OK)], "output": [record(INF)]})


def t5_bucket(task):
    """What T5's relative-position bucket records on every healthy run: log(0) = -inf, divided, then discarded
    (an integer cast), and later a real overflow."""
    return [task.keep("Torch.log.0.forward", api([OK], [-INF])),
            task.keep("Tensor.__truediv__.0.forward", api([-INF], [-INF])),
            task.keep("Torch.exp.0.forward", api([OK], [INF]))]


def test_ignore_list_leaves_out_a_listed_api_and_what_carries_its_value():
    assert t5_bucket(make_task(DebuggerConfig(task="overflow_check", task_config=TaskConfig(overflow_nums=-1)))) == [
        True, True, True]
    listed = make_task(DebuggerConfig(task="overflow_check",
                                      task_config=TaskConfig(overflow_nums=-1, ignore=("Torch.log:-inf",))))
    assert t5_bucket(listed) == [False, False, True] and listed.first == "Torch.exp.0.forward"


def test_ignore_list_by_value_still_counts_other_values():
    task = OverflowTask(overflow_nums=-1, ignores=parse_ignore(["Torch.log:-inf"], "config.json", "overflow_check.ignore"))
    assert task.keep("Torch.log.0.forward", api([-OK], [NAN]))  # log of a negative number: NaN is not listed
    assert not OverflowTask(ignores=parse_ignore(["Torch.log"], "c", "f")).keep("Torch.log.0.forward", api([-OK], [NAN]))


def test_a_malformed_ignore_item_is_one_line_naming_the_field(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"task": "overflow_check", "overflow_check": {"ignore": ["Torch.log:-Inf"]}}')
    with pytest.raises(SchemaError) as raised:
        make_task(load_config(config))
    assert str(raised.value) == (f"{config}: field 'overflow_check.ignore[0]': expected API[:inf|-inf|nan] (an entry "
                                 "name without its call count and direction), e.g. Torch.log:-inf, got 'Torch.log:-Inf'")
