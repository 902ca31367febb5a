"""Offline analysis on dumps written in the documented format from real torch values."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from msprobe.overflow import INHERITED, ORIGIN, analyze_dump
from overflow_builders import api, write_rank
from tests.support.cli import assert_one_line_error, msprobe

BIG = torch.full((4,), 20.0, dtype=torch.float16)


def _forward_overflow_rank(rank_dir: Path) -> None:
    x = torch.ones(4, dtype=torch.float16)
    y = x * BIG                      # finite
    z = torch.exp(y)                 # exp(20) overflows fp16 -> inf
    w = z * 2                        # inherits inf
    write_rank(rank_dir, [
        ("Module.layer.Block.forward.0", api([x], [w])),
        ("Tensor.__mul__.0.forward", api([x, BIG], [y])),
        ("Torch.exp.0.forward", api([y], [z])),
        ("Tensor.__mul__.1.forward", api([z], [w])),
    ], construct={"Module.layer.Block.forward.0": None, "Tensor.__mul__.0.forward": "Module.layer.Block.forward.0",
                  "Torch.exp.0.forward": "Module.layer.Block.forward.0",
                  "Tensor.__mul__.1.forward": "Module.layer.Block.forward.0"},
        stacks={"Torch.exp.0.forward": ["File model.py, line 12, in forward, \n z = torch.exp(y)"]})


def test_forward_overflow_descends_from_module_to_api(tmp_path):
    assert torch.isinf(torch.exp(BIG)).all()
    _forward_overflow_rank(tmp_path / "step0" / "rank")
    [result] = analyze_dump(tmp_path)
    origin = result.origin
    assert origin.kind == ORIGIN and origin.op_name == "Torch.exp.0.forward"
    assert origin.construct_info == ["Module.layer.Block.forward.0"]
    assert "torch.exp(y)" in origin.stack_info[0]
    assert [s.name for s in origin.before] == ["Module.layer.Block.forward.0", "Tensor.__mul__.0.forward"]


def test_cli_prints_node_and_writes_msprobe_json(tmp_path):
    _forward_overflow_rank(tmp_path / "dump" / "step0" / "rank")
    proc = msprobe("overflow_check", "-i", "dump/step0", "-o", "out", "-n", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "overflow started on rank at Torch.exp.0.forward" in proc.stdout
    assert "module chain: Module.layer.Block.forward.0" in proc.stdout
    assert "z = torch.exp(y)" in proc.stdout
    [path] = list((tmp_path / "out").glob("anomaly_analyze_*.json"))
    doc = json.loads(path.read_text())
    assert list(doc) == ["rank_0"]
    [node] = doc["rank_0"]
    assert sorted(node) == ["construct_info", "data_info", "op_name", "stack_info"]
    assert node["op_name"] == "Torch.exp.0.forward"
    assert node["data_info"]["output"][0]["Max"] == float("inf")


def test_backward_overflow_from_exploding_gradient(tmp_path):
    weight = torch.full((4,), 300.0, dtype=torch.float16, requires_grad=True)
    x = torch.ones(4, dtype=torch.float16)
    grad_out = torch.full((4,), 300.0, dtype=torch.float16)
    grad_in = grad_out * weight.detach()           # 90000 > fp16 max -> inf
    assert torch.isinf(grad_in).all()
    write_rank(tmp_path / "rank", [
        ("Tensor.__mul__.0.forward", api([x, weight], [x * weight.detach()])),
        ("Tensor.__mul__.0.backward", {"input": [api([grad_out], [])["input_args"][0]],
                                      "output": [api([], [grad_in])["output"][0], None]}),
    ])
    [result] = analyze_dump(tmp_path / "rank")
    assert result.origin.op_name == "Tensor.__mul__.0.backward"


def test_inputs_already_nan_are_reported_as_inherited(tmp_path):
    nan = torch.full((2,), float("nan"))
    write_rank(tmp_path / "rank", [("Functional.linear.0.forward", api([nan], [nan]))])
    [result] = analyze_dump(tmp_path / "rank")
    assert result.origin.kind == INHERITED


def test_expected_inf_of_empty_and_recv_buffers_is_ignored(tmp_path):
    garbage = torch.tensor([float("inf"), 1.0])
    ok = torch.ones(2)
    write_rank(tmp_path / "rank", [
        ("Torch.empty.0.forward", {"input_args": [], "input_kwargs": {}, "output": [api([], [garbage])["output"][0]]}),
        ("Distributed.recv.0.forward", api([garbage], [ok])),
    ])
    [result] = analyze_dump(tmp_path / "rank")
    assert result.origin is None


def test_interrupted_run_is_read_from_its_journal(tmp_path):
    y = torch.full((2,), 20.0, dtype=torch.float16)
    write_rank(tmp_path / "rank", [("Torch.exp.0.forward", api([y], [torch.exp(y)]))], finalize=False)
    assert (tmp_path / "rank" / "dump.journal").exists() and not (tmp_path / "rank" / "dump.json").exists()
    [result] = analyze_dump(tmp_path / "rank")
    assert result.origin.op_name == "Torch.exp.0.forward"


def test_ranks_are_ordered_through_collectives(tmp_path):
    """Rank 1 overflows before the first all_reduce; rank 0 only receives inf through it."""
    ok = torch.ones(2)
    inf = torch.full((2,), float("inf"))
    step = tmp_path / "step0"
    write_rank(step / "rank0", [("Torch.mul.0.forward", api([ok], [ok])),
                                ("Distributed.all_reduce.0.forward", api([ok], [inf]))])
    write_rank(step / "rank1", [("Torch.exp.0.forward", api([ok], [inf])),
                                ("Distributed.all_reduce.0.forward", api([inf], [inf]))])
    [result] = analyze_dump(step)
    assert result.origin.rank.rank == 1 and result.origin.op_name == "Torch.exp.0.forward"
    assert [e.rank.rank for e in result.events] == [1, 0] and len(result.tied) == 1


@pytest.mark.parametrize("fixture", [
    "test/msprobe_test/visualization_ut/input_format_correct",
    "test/msprobe_test/mindspore_ut/compare/dump_file/pytorch_data",
    "test/msprobe_test/mindspore_ut/compare/dump_file/mindspore_data",
    "test/msprobe_test/resources/layer_mapping/pytorch",
    "test/msprobe_test/resources/layer_mapping/mindspore",
])
def test_msprobe_finite_dumps_report_no_overflow(peer_fixtures, tmp_path, fixture):
    proc = msprobe("overflow_check", "-i", str(peer_fixtures / fixture), "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Cannot find any anomaly node" in proc.stdout
    assert not (tmp_path / "out").exists()


def test_bad_input_exits_2_with_one_line(tmp_path):
    (tmp_path / "rank").mkdir()
    (tmp_path / "rank" / "dump.json").write_text("{not json")
    assert_one_line_error(msprobe("overflow_check", "-i", "rank", cwd=tmp_path), "dump.json")
    assert_one_line_error(msprobe("overflow_check", "-i", "missing", cwd=tmp_path), "missing")


def test_attention_mask_inf_is_not_an_overflow_but_a_later_one_is(tmp_path):
    scores = torch.randn(2, 2)
    mask = torch.ones(2, 2, dtype=torch.bool).triu(1)
    masked = scores.masked_fill(mask, float("-inf"))
    probs = torch.softmax(masked, dim=-1)
    fill = {"input_args": [api([scores], [])["input_args"][0], api([mask.float()], [])["input_args"][0],
                           {"type": "float", "value": float("-inf")}], "input_kwargs": {},
            "output": [api([], [masked])["output"][0]]}
    entries = [("Tensor.masked_fill.0.forward", fill), ("Functional.softmax.0.forward", api([masked], [probs]))]
    write_rank(tmp_path / "clean", entries)
    assert analyze_dump(tmp_path / "clean")[0].origin is None
    big = torch.full((2,), 20.0, dtype=torch.float16)
    write_rank(tmp_path / "later", entries + [("Torch.exp.0.forward", api([big], [torch.exp(big)]))])
    assert analyze_dump(tmp_path / "later")[0].origin.op_name == "Torch.exp.0.forward"


def test_nan_made_from_inf_minus_inf_is_an_origin(tmp_path):
    inf = torch.full((2,), float("inf"))
    ok = torch.ones(2)
    write_rank(tmp_path / "rank", [("Torch.exp.0.forward", api([ok * 1000], [torch.exp(ok * 1000)])),
                                   ("Tensor.__sub__.0.forward", api([inf, inf], [inf - inf]))])
    [result] = analyze_dump(tmp_path / "rank")
    assert result.origin.op_name == "Torch.exp.0.forward"
    write_rank(tmp_path / "only_sub", [("Tensor.__sub__.0.forward", api([inf, inf], [inf - inf]))])
    origin = analyze_dump(tmp_path / "only_sub")[0].origin
    assert origin.kind == ORIGIN and origin.op_name == "Tensor.__sub__.0.forward"


def test_json_summary_and_multi_step_tree(tmp_path):
    _forward_overflow_rank(tmp_path / "dump" / "step0" / "rank")
    ok = torch.ones(2)
    write_rank(tmp_path / "dump" / "step1" / "rank", [("Torch.mul.0.forward", api([ok], [ok]))])
    proc = msprobe("overflow_check", "-i", "dump", "-o", "out", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [d["step"] for d in doc] == [0, 1]
    assert doc[0]["origin"] == {"rank": "rank", "op_name": "Torch.exp.0.forward"} and doc[1]["origin"] is None
    assert [p.name.split("_2")[0] for p in (tmp_path / "out").iterdir()] == ["anomaly_analyze_step0"]
