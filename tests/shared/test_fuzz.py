"""Fuzz tests (issue 29): every reader and the ``inspect`` command, fed anything, either succeed or fail with
the suite's one-line error; never another exception, a hang, or unbounded work. Seeds: the issue's cases."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msprobe.cli.main import main
from msprobe.schema import (SchemaError, load_construct, load_dump, load_stack, parse_config, read_journal,
                            validate_construct, validate_dump, validate_stack)
from msprobe.schema import stream
from msprobe.schema.dump import record_is_finite, stat_value
from tests.shared.dump_trees import build_tree, dump_doc, file_bytes, hang_guard, json_value, trees

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
XOR_RECORD = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "md5": "0x832304e8808f4155"}
DEEP = b"[" * 100000 + b"]" * 100000


def _only_schema_errors(call, *args) -> None:
    try:
        call(*args)
    except SchemaError as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(doc=st.one_of(dump_doc, json_value))
@example(doc={"data": {"Functional.linear.0.forward": {"input_args": [XOR_RECORD], "output": [XOR_RECORD]}}})
@example(doc={"data": {"Torch.exp.0.forward": {"output": [{"type": "torch.Tensor", "md5": "0x83"}]}}})
@example(doc={"data": {"Torch.exp.0.forward": {"output": [{"type": "torch.Tensor", "Max": 10 ** 400,
                                                             "Min": -10 ** 400, "Mean": "1" + "0" * 400}]}}})
def test_dump_json_reader(doc):
    _only_schema_errors(validate_dump, doc)


def test_big_statistics_saturate_and_a_float_md5_is_read():
    """A 401-digit statistic reads as +-inf (as 1e400 does); msprobe 26.2.0's xor mode writes a 0-d tensor's
    value as its md5 (issue 40)."""
    big = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 10 ** 400, "Min": -10 ** 400,
           "Mean": 0.0, "Norm": 10 ** 400}
    scalar = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [], "md5": 1.2276097536087036}
    dump = validate_dump({"data": {"Torch.exp.0.forward": {"input_args": [scalar], "output": [big]}}})
    assert [stat_value(big[k]) for k in ("Max", "Min")] == [float("inf"), float("-inf")]
    assert not record_is_finite(big) and dump.data["Torch.exp.0.forward"]["input_args"][0]["md5"] == scalar["md5"]
    with pytest.raises(SchemaError, match="md5"):
        validate_dump({"data": {"Torch.exp.0.forward": {"output": [dict(scalar, md5=True)]}}})


def test_inspect_reads_a_401_digit_statistic_and_a_float_md5(tmp_path, capsys):
    """The same two records as whole dumps on the command line: inspect reads them (exit 0), the big statistic
    counted as inf, where both once gave a traceback or a refusal (issue 40)."""
    rank = tmp_path / "dump" / "step0" / "rank0"
    rank.mkdir(parents=True)
    big = '{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1' + "0" * 400 + \
        ', "Min": 0.0, "Mean": 0.5, "Norm": 1.0}'
    scalar = '{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [], "md5": 1.2276097536087036}'
    (rank / "dump.json").write_text('{"task": "statistics", "level": "L1", "framework": "pytorch", "data": '
                                    '{"Torch.exp.0.forward": {"input_args": [%s], "output": [%s]}}}' % (scalar, big))
    with pytest.raises(SystemExit) as exited:
        main(["inspect", "--quiet", str(tmp_path / "dump")])
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err
    assert "2 tensors, 1 with inf/nan" in out and "Torch.exp.0.forward: output.0" in out, out


@FUZZ
@given(raw=file_bytes)
@example(raw=DEEP)
@example(raw=b'{"data": {"A.b.0.forward": {"output": ' + b"[" * 3000 + b"]" * 3000 + b"}}}")
@example(raw=b'{"data": {"A.b.0.forward": {"output": [{"type": "torch.Tensor", "Max": 1' + b"0" * 5000 + b"}]}}}")
def test_dump_json_file_reader(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("dump") / "dump.json"
    path.write_bytes(raw)
    _only_schema_errors(load_dump, path)


def _read(call):
    """What a reader gives, as canonical JSON text (NaN compares equal to itself there); None when it refuses."""
    try:
        return json.dumps(call(), sort_keys=True, allow_nan=True)
    except SchemaError as exc:
        assert "\n" not in str(exc)
        return None


@FUZZ
@given(doc=dump_doc, cut=st.one_of(st.none(), st.floats(0, 1)), chunk=st.sampled_from([7, 97, 1 << 20]))
@example(doc={"data": {"Torch.exp.0.forward": {"output": [{"type": "torch.Tensor", "Max": 10 ** 400}]}}}, cut=None,
         chunk=7)
@example(doc={"data": {"Torch.exp.0.forward": {"input_args": [XOR_RECORD]}, "Torch.add.0.forward": {"output": 5}}},
         cut=None, chunk=97)
@example(doc={"data": {"Torch.exp.0.forward": {"output": []}, "Torch.add.0.forward": {}}}, cut=0.8, chunk=7)
@example(doc={"level": None, "task": None, "framework": False, "dump_data_dir": None, "data": {}}, cut=None, chunk=7)
def test_the_streamed_entry_reader_decides_as_the_whole_file_reader(tmp_path_factory, doc, cut, chunk):
    """op_generate streams the entries it wants; inspect, compare and overflow_check read the whole file: both
    accept and refuse the same files, and an entry read either way is the same (issue 40)."""
    text = json.dumps(doc, allow_nan=True)
    if cut is not None:
        text = text[:int(len(text) * cut)]
    path = tmp_path_factory.mktemp("stream") / "dump.json"
    path.write_text(text, encoding="utf-8")
    names = tuple(doc["data"])[:2] if isinstance(doc["data"], dict) else ()
    names += ("Torch.exp.0.forward",)
    chunk_chars, stream.CHUNK_CHARS = stream.CHUNK_CHARS, chunk  # values straddle chunk ends
    try:
        whole = _read(lambda: {n: v for n, v in load_dump(path).data.items() if n in names})
        streamed = _read(lambda: stream.stream_entries(path, names)[1])
    finally:
        stream.CHUNK_CHARS = chunk_chars
    assert whole == streamed


@FUZZ
@given(doc=json_value, raw=file_bytes)
@example(doc={"Module.a.A.forward.0": ["Module.b.B.forward.0", 1]}, raw=b'{"a": [[], ["f"]]}')
def test_construct_and_stack_readers(tmp_path_factory, doc, raw):
    _only_schema_errors(validate_construct, doc)
    _only_schema_errors(validate_stack, doc)
    folder = tmp_path_factory.mktemp("cs")
    (folder / "construct.json").write_bytes(raw)
    (folder / "stack.json").write_bytes(raw)
    _only_schema_errors(load_construct, folder / "construct.json")
    _only_schema_errors(load_stack, folder / "stack.json")


@FUZZ
@given(raw=file_bytes)
@example(raw=b"\x80\x04\x95" + b"\x00" * 16)  # a pickle (what journals once held): not JSON lines
@example(raw=b'["h", {}]\n["d", "Torch.exp.0.forward", ' + b"[" * 100000 + b"\n[]\n")
@example(raw=b'["h", {}]\n["d", "Torch.exp.0.forward", {"output": [{"type": "torch.Tensor", "Max": #7ff0000000000000}]}]\n')
def test_journal_reader(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("journal") / "dump.journal"
    path.write_bytes(raw)
    _only_schema_errors(read_journal, path)


@FUZZ
@given(doc=st.one_of(json_value, st.dictionaries(st.sampled_from(["task", "dump_path", "step", "rank", "level",
                                                                  "statistics", "seed", "async_dump"]),
                                                 json_value, max_size=5)),
       overrides=st.fixed_dictionaries({}, optional={"dump_path": json_value, "step": json_value,
                                                     "task": json_value, "level": json_value}))
@example(doc={"step": ["0-1000000000"], "rank": ["0-1000000000"]}, overrides={})
@example(doc={"dump_path": ""}, overrides={"dump_path": "./x"})
@example(doc={"statistics": {"summary_mode": "xor"}}, overrides={})
@example(doc={"step": ["0-99999999999999999999"]}, overrides={"step": [10 ** 30]})
def test_config_reader(doc, overrides):
    _only_schema_errors(lambda: parse_config(doc, "config.json", overrides))


@FUZZ
@given(nodes=trees, target=st.sampled_from(["", "step0", "step1/rank0", "step0/rank/dump.json", "rank"]))
@example(nodes=[(["step-1", "rank0", "dump.json"], "file", b"{}"), (["step01", "rank0"], "dir", b"")], target="")
@example(nodes=[(["step0", "rank0", "dump.json"], "fifo", b"")], target="")
@example(nodes=[(["step0", "rank0", "dump.json"], "dir", b"")], target="step0/rank0")
def test_inspect_command(tmp_path_factory, capsys, nodes, target):
    root = tmp_path_factory.mktemp("tree")
    build_tree(root, nodes)
    with hang_guard(), pytest.raises(SystemExit) as exited:
        main(["inspect", "--quiet", str(root / target)])
    err = capsys.readouterr().err
    assert exited.value.code in (0, 2), err
    if exited.value.code == 2:
        assert err.splitlines()[-1].startswith("msprobe: error: ") and "Traceback" not in err, err
