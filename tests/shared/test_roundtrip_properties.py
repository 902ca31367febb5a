"""Property tests: what the writer writes the reader reads back; damaged files give SchemaError only."""
from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe.schema import RankWriter, SchemaError, find_rank_dirs, load_dump, read_journal
from msprobe.schema.journal import DUMP_NAME, JOURNAL_NAME

stat = st.one_of(st.none(), st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True, width=32))
record = st.fixed_dictionaries({
    "type": st.just("torch.Tensor"),
    "dtype": st.sampled_from(["torch.float32", "torch.bfloat16", "torch.int64", "Float32"]),
    "shape": st.lists(st.integers(0, 64), max_size=4),
    "Max": stat, "Min": stat, "Mean": stat, "Norm": stat,
    "requires_grad": st.booleans(),
})
scalar = st.one_of(st.none(), st.fixed_dictionaries({"type": st.just("int"), "value": st.integers()}),
                   st.fixed_dictionaries({"type": st.just("str"), "value": st.text(max_size=8)}))
value = st.recursive(st.one_of(record, scalar), lambda inner: st.lists(inner, max_size=3), max_leaves=6)
entry_name = st.builds(lambda p, a, i, d: f"{p}.{a}.{i}.{d}", st.sampled_from(["Functional", "Tensor", "Torch"]),
                       st.from_regex(r"[a-z_]{1,8}", fullmatch=True), st.integers(0, 99),
                       st.sampled_from(["forward", "backward"]))
entry = st.fixed_dictionaries({"input_args": st.lists(value, max_size=3),
                               "input_kwargs": st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), value,
                                                               max_size=2),
                               "output": st.lists(value, max_size=2)})
entries = st.dictionaries(entry_name, entry, max_size=6)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@SETTINGS
@given(data=entries)
def test_writer_reader_round_trip(tmp_path_factory, data):
    rank_dir = tmp_path_factory.mktemp("rt") / "step0" / "rank"
    writer = RankWriter(rank_dir, {"task": "statistics", "level": "L1", "framework": "pytorch",
                                   "dump_data_dir": None})
    for name, item in data.items():
        writer.entry(name, item)
        writer.stack(name, [f"File a.py, line 1, in f, \n {name}"])
    writer.shared_stack(list(data), ["File b.py, line 2, in g, \n shared"])  # replaces each entry's stack
    interrupted = read_journal(rank_dir / JOURNAL_NAME)
    assert _same(interrupted.dump.data, data) and interrupted.dump.recovered
    assert all(frames == ["File b.py, line 2, in g, \n shared"] for frames in interrupted.stacks.values())
    writer.finalize(remove_journal=True)
    assert not (rank_dir / JOURNAL_NAME).exists()
    [rank] = find_rank_dirs(rank_dir.parent.parent)
    files = rank.load()
    assert _same(files.dump.data, data) and files.dump.framework == "pytorch"
    assert set(files.stacks) == set(data)


@SETTINGS
@given(data=entries.filter(bool), cut=st.floats(0.0, 0.999))
def test_truncated_dump_json_gives_schema_error(tmp_path_factory, data, cut):
    path = tmp_path_factory.mktemp("cut") / DUMP_NAME
    text = json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch", "data": data})
    path.write_text(text[: int(len(text) * cut)])
    try:
        load_dump(path)
    except SchemaError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a truncated dump.json loaded")


@SETTINGS
@given(data=entries.filter(bool), position=st.integers(0, 10**6), junk=st.binary(min_size=1, max_size=4))
def test_corrupted_dump_json_never_raises_anything_else(tmp_path_factory, data, position, junk):
    path = tmp_path_factory.mktemp("bad") / DUMP_NAME
    raw = json.dumps({"task": "statistics", "data": data}).encode()
    at = position % len(raw)
    path.write_bytes(raw[:at] + junk + raw[at + len(junk):])
    try:
        load_dump(path)
    except SchemaError:
        pass


@SETTINGS
@given(data=entries.filter(bool), cut=st.floats(0.0, 1.0))
def test_killed_journal_keeps_every_complete_record(tmp_path_factory, data, cut):
    rank_dir = tmp_path_factory.mktemp("kill")
    writer = RankWriter(rank_dir, {"task": "statistics", "framework": "pytorch"})
    ends = []  # the journal's size after each entry record: where a kill may cut it
    for name, item in data.items():
        writer.entry(name, item)
        ends.append((rank_dir / JOURNAL_NAME).stat().st_size)
    raw = (rank_dir / JOURNAL_NAME).read_bytes()
    at = int(len(raw) * cut)
    (rank_dir / JOURNAL_NAME).write_bytes(raw[:at])
    files = read_journal(rank_dir / JOURNAL_NAME)  # a cut last record is what a kill leaves: not an error
    kept = [name for name, end in zip(data, ends) if end <= at]
    assert list(files.dump.data) == kept
    assert all(_same(files.dump.data[name], data[name]) for name in kept)


@SETTINGS
@given(data=entries.filter(bool), position=st.integers(0, 10**6), junk=st.binary(min_size=1, max_size=4))
def test_corrupted_journal_gives_schema_error_only(tmp_path_factory, data, position, junk):
    rank_dir = tmp_path_factory.mktemp("badj")
    writer = RankWriter(rank_dir, {"task": "statistics", "framework": "pytorch"})
    for name, item in data.items():
        writer.entry(name, item)
    path = rank_dir / JOURNAL_NAME
    raw = path.read_bytes()
    at = position % len(raw)
    path.write_bytes(raw[:at] + junk + raw[at + len(junk):])
    try:
        read_journal(path)
    except SchemaError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)


def test_journal_of_json_lines_is_read_and_a_cut_last_line_dropped(tmp_path):
    rank_dir = tmp_path / "rank"
    rank_dir.mkdir()
    lines = [["h", {"task": "statistics", "framework": "pytorch"}], ["d", "Torch.exp.0.forward", {"output": []}],
             ["s", ["Torch.exp.0.forward"], ["File a.py, line 1, in f, \n x"]]]
    (rank_dir / JOURNAL_NAME).write_text("\n".join(json.dumps(line) for line in lines) + '\n["d", "cut')
    files = read_journal(rank_dir / JOURNAL_NAME)
    assert list(files.dump.data) == ["Torch.exp.0.forward"] and files.stacks["Torch.exp.0.forward"]


def test_journal_ending_in_reserved_zeros_is_read(tmp_path):
    """What a crash may leave of a journal: its records, maybe a cut last one, then zero bytes."""
    rank_dir = tmp_path / "rank"
    rank_dir.mkdir()
    lines = [["h", {"task": "statistics", "framework": "pytorch"}], ["d", "Torch.exp.0.forward", {"output": []}]]
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    for tail in ("", '["d", "Torch.cut'):
        (rank_dir / JOURNAL_NAME).write_bytes((text + tail).encode() + b"\0" * 70000)
        files = read_journal(rank_dir / JOURNAL_NAME)
        assert list(files.dump.data) == ["Torch.exp.0.forward"] and files.dump.recovered


