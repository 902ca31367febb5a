"""StepWriter (the engine's fast path) writes the same bytes as the schema library's RankWriter."""
from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe.dump import stepfiles
from msprobe.dump.stepfiles import StepWriter
from msprobe.schema import RankWriter
from msprobe.schema.journal import decimal_floats, read_journal


class JsonLinesWriter(RankWriter):
    pickled = False

HEADER = {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None}
RECORD = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": float("inf"),
          "Min": float("-inf"), "Mean": float("nan"), "Norm": 1e-300, "requires_grad": True, "md5": "0a1b2c3d"}


def _write(writer):
    writer.entry("Functional.linear.0.forward", {"input_args": [RECORD, None, {"type": "int", "value": 3}],
                                                 "input_kwargs": {"bias": {"type": "bool", "value": False}},
                                                 "output": [[RECORD, -0.0]]})
    writer.entry("Module.é层.Linear.forward.0", {"input_args": [], "input_kwargs": {}, "output": []})
    writer.entry("Functional.linear.0.forward", {"parameters": {"weight": RECORD}})  # later keys merge
    writer.entry("Debug.odd.0.forward", {"data": {1: "an int key: the compiled encoder refuses, json converts"}})
    writer.construct("Module.é层.Linear.forward.0", None)
    writer.stack("Functional.linear.0.forward", ["File a.py, line 1, in f, \n x = 1"])
    writer.shared_stack(["Module.é层.Linear.forward.0", "Torch.cos.0.forward"], ["File b.py, line 2, in g, \n y"])


def test_step_writer_bytes_equal_rank_writer(tmp_path, helpers_or_not):
    step = StepWriter(tmp_path / "step", HEADER)
    _write(step)
    step.flush()
    reference = JsonLinesWriter(tmp_path / "reference", HEADER)
    _write(reference)
    reference.flush()
    journal = (tmp_path / "step" / "dump.journal").read_bytes()
    records = (tmp_path / "reference" / "dump.journal").read_bytes()
    # the same records, the compiled encoder's floats in hex; a mapped journal (compiled helpers) then
    # holds the zeros reserved after them
    compiled = helpers_or_not == "compiled"
    used = journal.rstrip(b"\0")
    assert decimal_floats(used) == records and not journal[len(used):].strip(b"\0")
    assert (b", #" in used, len(journal) > len(used)) == (compiled, compiled)
    if compiled:
        assert stepfiles.native.helpers().decimal_floats(used) == records
    pickled = RankWriter(tmp_path / "pickled", HEADER)  # the other spelling of the same records
    _write(pickled)
    pickled.flush()
    ours, theirs = (read_journal(tmp_path / name / "dump.journal") for name in ("step", "pickled"))
    assert json.dumps(ours.dump.to_json()) == json.dumps(theirs.dump.to_json())  # text: NaN != NaN
    assert (ours.construct, ours.stacks) == (theirs.construct, theirs.stacks)
    step.finish()
    reference.finalize(remove_journal=True, indent=None)
    for name in ("dump.json", "stack.json", "construct.json"):
        assert (tmp_path / "step" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name
    assert not (tmp_path / "step" / "dump.journal").exists()
    stacks = json.loads((tmp_path / "step" / "stack.json").read_text())
    assert stacks["1"] == [["Module.é层.Linear.forward.0", "Torch.cos.0.forward"], ["File b.py, line 2, in g, \n y"]]


@pytest.fixture
def helpers():
    """The compiled helpers (the test is skipped without them)."""
    built = stepfiles.native.helpers()
    if built is None:
        pytest.skip("no C compiler or Python headers here")
    return built


def _members_by_json(entries):
    """What the json module makes of the same lines: StepWriter._members without the helpers."""
    parts = []
    for name, line in entries.items():
        merged = {}
        for part in line if isinstance(line, list) else [line]:
            merged.update(json.loads(part)[2])
        parts.append(json.dumps(name, ensure_ascii=False) + ": " + json.dumps(merged, ensure_ascii=False))
    return ", ".join(parts).encode("utf-8")


def test_dump_members_merges_parts_on_the_bytes_as_dict_update_does(helpers):
    line = helpers.json_line
    odd = 'Module.a "quoted" \\ name, {x}: [y].parameters_grad'
    entries = {
        "Functional.linear.0.forward": line(["d", "Functional.linear.0.forward", {
            "input_args": [RECORD, {"type": "str", "value": 'a ", } ] { , string'}], "output": [[RECORD, None]]}]),
        odd: [line(["d", odd, {"weight": [RECORD], "bias": [None]}]),
              line(["d", odd, {"extra": {"nested": [1, [2, {"k": "}"}]]}}]),
              line(["d", odd, {"bias": [RECORD]}])],  # an earlier key: its place kept, its value the last
        "Module.层.Linear.parameters_grad": [line(["d", "Module.层.Linear.parameters_grad", {}]),
                                            line(["d", "Module.层.Linear.parameters_grad", {"weight": [1.5]}])],
        "Debug.x.0.forward": (json.dumps(["d", "Debug.x.0.forward", {"data": {"1": float("nan")}}]) + "\n").encode(),
    }
    made = helpers.dump_members(entries)
    assert made == _members_by_json(entries)
    merged = json.loads(b"{" + made + b"}")[odd]
    assert list(merged) == ["weight", "bias", "extra"] and merged["bias"][0]["md5"] == RECORD["md5"]
    assert helpers.dump_members({}) == b""


@pytest.mark.parametrize("line, framing", [(b'["d", "x", {"a": 1}]', True), (b'["h", "x", {"a": 1}]\n', True),
                                           (b'["d", "x, {"a": 1}]\n', True), ("a str", True),
                                           (b'["d", "x", [1, 2]]\n', False), (b'["d", "x", {"a" 1}]\n', False)])
def test_dump_members_refuses_what_is_not_a_journal_line(helpers, line, framing):
    with pytest.raises(ValueError):  # a part: its value is read as an object
        helpers.dump_members({"x": [line, b'["d", "x", {"b": 2}]\n']})
    if framing:  # a whole line: only its framing is read (its value is copied as it is)
        with pytest.raises(ValueError):
            helpers.dump_members({"x": line})


def _journal(directory):
    journal = directory / "dump.journal"
    journal.write_bytes(b"records")
    return journal


def test_write_files_writes_each_file_whole_then_removes_the_journal(helpers, tmp_path):
    journal = _journal(tmp_path)
    (tmp_path / "dump.json").write_text("an older file, replaced whole")
    files = [(str(tmp_path / name), str(tmp_path / f".{name}.tmp1"), text) for name, text in
             (("dump.json", b'{"data": {}}'), ("stack.json", b""), ("construct.json", "é".encode() * 70000))]
    helpers.write_files(files, str(journal))
    assert [(tmp_path / name).read_bytes() for name in ("dump.json", "stack.json", "construct.json")] == \
        [text for _, _, text in files]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["construct.json", "dump.json", "stack.json"]
    helpers.write_files([], str(journal))  # a journal removed already: nothing to do


def test_write_files_names_the_file_it_cannot_write_and_leaves_no_temporary(helpers, tmp_path):
    journal = _journal(tmp_path)
    missing = tmp_path / "gone" / "stack.json"
    files = [(str(tmp_path / "dump.json"), str(tmp_path / ".dump.json.tmp1"), b"{}"),
             (str(missing), str(missing.parent / ".stack.json.tmp1"), b"[]"),
             (str(tmp_path / "construct.json"), str(tmp_path / ".construct.json.tmp1"), b"{}")]
    with pytest.raises(FileNotFoundError) as raised:
        helpers.write_files(files, str(journal))
    assert raised.value.filename == str(missing)
    # the files before it are written, those after it are not, and the journal (the step's data) stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.journal", "dump.json"]
    with pytest.raises(TypeError):
        helpers.write_files([(str(tmp_path / "x"), str(tmp_path / ".x.tmp"), "not bytes")], None)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.one_of(st.floats(), st.floats(width=32), st.text(max_size=6),
                                st.sampled_from(['#3ff0000000000000', '\\"#4000000000000000', '#', '\\']),
                                st.integers(), st.none()), max_size=12))
def test_journal_lines_hex_floats_read_back_as_json_spells_them(helpers, tmp_path, items):
    """journal_entry spells finite floats in hex; decimal_floats (C, on the writer thread) and the schema
    library's reader (Python) give json.dumps's text back, byte for byte."""
    lines = {}
    fd = os.open(tmp_path / "journal", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        helpers.journal_entry(fd, lines, "Torch.x#.0.forward", {"output": items})
    finally:
        os.close(fd)
    line = lines["Torch.x#.0.forward"]
    expected = (json.dumps(["d", "Torch.x#.0.forward", {"output": items}], ensure_ascii=False) + "\n").encode()
    assert helpers.decimal_floats(line) == decimal_floats(line) == expected
    assert line.count(b"#") - expected.count(b"#") == sum(isinstance(v, float) and math.isfinite(v) for v in items)


def test_decimal_floats_leaves_what_is_not_a_hex_float(helpers):
    for text in (b"", b"[1.5, NaN]", b"[#12]", b'["#3ff0000000000000"]', b"[#3ff000000000000g]"):
        assert helpers.decimal_floats(text) == decimal_floats(text) == text
    infinity = b"[#3ff0000000000000, #7ff0000000000000]"  # (never written: journal_entry writes Infinity)
    assert helpers.decimal_floats(infinity) == decimal_floats(infinity) == b"[1.0, #7ff0000000000000]"
    with pytest.raises(TypeError):
        helpers.decimal_floats("[#3ff0000000000000]")
