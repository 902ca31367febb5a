"""Every upstream dump/construct/stack/config file loads; the malformed ones give our one-line error.

PyTorch dumps and the shipped config.json come live from upstream msprobe 8.3.3 / 26.2.0
(tests/support/upstream_msprobe.py); msprobe's own unit-test files and MindSpore dumps, which upstream
cannot make on CPU, come from ../shared/peer-fixtures (skipped, with the reason, where it is absent)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from msprobe.schema import (RankWriter, SchemaError, find_rank_dirs, load_config, load_construct, load_dump,
                            load_stack)
from msprobe.schema.journal import JOURNAL_NAME, journal_recorded
from tests.support.upstream_msprobe import SUPPORTED

# Upstream's deliberately broken inputs (no `data`, entries that are not objects, a step inside a step).
MALFORMED_DUMPS = {
    "test/msprobe_test/core_ut/common/test_dump_file/pt_dump_no_framework.json": "field 'data'",
    "test/msprobe_test/core_ut/common/test_dump_file/ms_dump_no_framework.json": "field 'data'",
    "test/msprobe_test/core_ut/common/test_dump_file/dump_no_pt_no_ms.json": "field 'data'",
    "test/msprobe_test/resources/common/test_no_dump_data.json": "field 'data'",
    "test/msprobe_test/resources/common/test_no_fb_data.json": "field 'data.invalid_value'",
    "test/msprobe_test/resources/common/test_backward.json": "field 'data.Module'",
    "test/msprobe_test/visualization_ut/input/step0/rank1/dump.json": "field 'data'",
    "test/msprobe_test/visualization_ut/input/step1/step1/dump.json": "field 'data'",
    "test/msprobe_test/visualization_ut/input/step1/rank0/dump.json": "field 'data'",
    "test/msprobe_test/visualization_ut/builder/dump.json": "field 'data'",
}
NOT_DUMPS = ("monitor/config", "config.json", "config_op.json", "forward.json")


def _json_files(root, name):
    return sorted(p for p in root.rglob(name))


def test_every_dump_json_loads_or_fails_cleanly(peer_fixtures):
    loaded = 0
    for path in _json_files(peer_fixtures, "*.json"):
        rel = path.relative_to(peer_fixtures).as_posix()
        if any(part in rel for part in NOT_DUMPS) or path.name in ("stack.json", "construct.json"):
            continue
        if path.name.startswith("construct") or path.name.startswith("stack"):
            continue
        if rel in MALFORMED_DUMPS:
            with pytest.raises(SchemaError) as info:
                load_dump(path)
            message = str(info.value)
            assert str(path) in message and MALFORMED_DUMPS[rel] in message and "\n" not in message
            continue
        dump = load_dump(path)
        assert isinstance(dump.data, dict)
        loaded += 1
    assert loaded >= 10


@pytest.mark.parametrize("version", SUPPORTED)
def test_upstream_dumps_load_with_their_construct_and_stacks(upstream_dump, version):
    root = upstream_dump(version)
    ranks = find_rank_dirs(root)
    assert [(r.step, r.rank) for r in ranks] == [(0, 0), (1, 0)]
    for rank in ranks:
        dump = load_dump(rank.path / "dump.json")
        assert dump.framework == "pytorch" and (dump.task, dump.level) == ("statistics", "mix")
        assert len(dump.data) == len(json.loads((rank.path / "dump.json").read_text())["data"]) > 100
        assert any(k.startswith("Distributed.all_reduce.") for k in dump.data)
        construct = load_construct(rank.path / "construct.json")
        assert construct["Functional.embedding.0.forward"] == "Module.embed.Embedding.forward.0"
        parents = {parent for parent in construct.values() if parent}
        assert {p for p in parents if p.startswith("Module.")} <= set(construct), parents - set(construct)
        stacks = load_stack(rank.path / "stack.json")
        assert all(isinstance(frames, list) and frames for frames in stacks.values())
        forward = {k for k in dump.data if k.endswith(".forward") and not k.startswith("Module.")}
        assert forward and forward <= set(stacks), sorted(forward - set(stacks))[:5]
        loaded = rank.load()
        assert set(loaded.dump.data) == set(dump.data) and loaded.construct == construct


@pytest.mark.parametrize("version", SUPPORTED)
def test_shipped_config_loads(upstream_package, version):
    shipped = load_config(upstream_package(version) / "config.json")
    assert (shipped.task, shipped.level, shipped.task_config.summary_mode) == ("statistics", "L1", "statistics")
    assert shipped.dump_path == "./dump_path"


def test_mindspore_dumps_and_old_shapes_load(peer_fixtures):
    base = peer_fixtures / "test/msprobe_test/mindspore_ut/compare/dump_file"
    assert load_dump(base / "mindspore_data/dump.json").framework == "mindspore"
    tensor = load_dump(peer_fixtures / "test/msprobe_test/mindspore_ut/api_accuracy_checker/files/api_info_tensor.json")
    assert tensor.framework == "mindspore"
    constructs = _json_files(peer_fixtures, "construct*.json")
    stacks = _json_files(peer_fixtures, "stack.json")
    assert len(constructs) >= 8 and len(stacks) >= 6
    for path in constructs:
        load_construct(path)
    old_shape = load_stack(peer_fixtures / "test/msprobe_test/resources/layer_mapping/pytorch/stack.json")
    assert all(isinstance(frames, list) for frames in old_shape.values()) and old_shape
    for path in stacks:
        load_stack(path)
    legacy = load_config(peer_fixtures / "test/msprobe_test/resources/config.json")
    assert legacy.seed == 1234
    assert {"acl_config", "run_ut", "grad_probe", "free_benchmark"} <= set(legacy.unused)


def test_malformed_tree_is_reported(peer_fixtures):
    with pytest.raises(SchemaError, match="step directory inside a step directory"):
        find_rank_dirs(peer_fixtures / "test/msprobe_test/visualization_ut/input")
    ranks = find_rank_dirs(peer_fixtures / "test/msprobe_test/visualization_ut/input_format_correct")
    assert [(r.step, r.rank) for r in ranks] == [(0, 0), (0, 1), (1, 0), (2, 0)]


def test_steps_that_recorded_nothing_are_passed_over(tmp_path):
    """A rank directory holding only a journal opened ahead that holds no record (or nothing at all) was
    never recorded; any other rank directory without dump.json is an error, as before."""
    recorded = tmp_path / "step0" / "rank"
    writer = RankWriter(recorded, {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None})
    writer.entry("Torch.sin.0.forward", {"input_args": [], "output": []})
    (tmp_path / "step1" / "rank" / "dump_tensor_data").mkdir(parents=True)
    (tmp_path / "step1" / "rank" / JOURNAL_NAME).write_bytes(b'["h", {}]\n' + b"\0" * 4096)  # reserved space
    (tmp_path / "step2" / "rank").mkdir(parents=True)
    assert [r.step for r in find_rank_dirs(tmp_path)] == [0]
    with pytest.raises(SchemaError, match="this step recorded nothing"):
        find_rank_dirs(tmp_path / "step1")
    (tmp_path / "step2" / "rank" / "notes.txt").write_text("not a dump")
    with pytest.raises(SchemaError, match="dump.json: missing"):
        find_rank_dirs(tmp_path)


def test_a_journal_is_recorded_once_a_record_follows_its_header(tmp_path):
    path = tmp_path / JOURNAL_NAME
    header = b'["h", {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null}]\n'
    record = b'["d", "Torch.sin.0.forward", {"input_args": [], "output": []}]\n'
    for raw, recorded in ((b"", False), (header, False), (header + b"\0" * 70000, False),
                          (header + record, True), (header + record[:9], True), (header + record + b"\0" * 9, True)):
        path.write_bytes(raw)
        assert journal_recorded(path) is recorded, raw[:120]
    assert not journal_recorded(tmp_path / "absent")
    path.write_bytes(header + b"\0" * 16)  # beside a finished step's dump.json (a run started again): that is read
    (tmp_path / "dump.json").write_text('{"task": "statistics", "level": "L1", "framework": "pytorch", '
                                        '"dump_data_dir": null, "data": {"Torch.cos.0.forward": {}}}')
    (rank,) = find_rank_dirs(tmp_path)
    assert not rank.interrupted and list(rank.load().dump.data) == ["Torch.cos.0.forward"]
    assert list(load_dump(tmp_path / "dump.json").data) == ["Torch.cos.0.forward"]
    path.write_bytes(header + record)  # its step started: the journal is what the run has recorded
    assert rank.interrupted and list(rank.load().dump.data) == ["Torch.sin.0.forward"]


def test_shared_imports_no_framework():
    code = ("import sys, msprobe.schema, msprobe.cli.main; "
            "bad = [m for m in ('torch', 'mindspore', 'numpy') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
