"""Hypothesis strategies for the fuzz tests: JSON values, dump.json documents and whole dump trees as a
user's disk may hold them (odd names, FIFOs, folders where files belong, damaged files)."""
from __future__ import annotations

import json
import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Tuple

from hypothesis import strategies as st


# (integers beyond a double's range, e.g. 401 digits, are written by hand-made or hostile files: issue 40)
number = st.one_of(st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([10 ** 400, -10 ** 400, 2 ** 1024]))
scalar = st.one_of(st.none(), st.booleans(), number, st.text(max_size=12))
json_value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=20)
stat = st.one_of(st.none(), number, st.sampled_from(["inf", "-inf", "nan", "1e3", "x", ""]))
tensor = st.fixed_dictionaries({"type": st.sampled_from(["torch.Tensor", "mindspore.Tensor", "numpy.ndarray"]),
                                "dtype": st.one_of(st.sampled_from(["torch.float16", "Float32"]), scalar),
                                "shape": st.one_of(st.lists(st.integers(0, 8), max_size=3), scalar)},
                               optional={"Max": stat, "Min": stat, "Mean": stat, "Norm": stat,
                                         "requires_grad": scalar,
                                         "md5": st.one_of(st.sampled_from(["0x832304e8808f4155", "832304e8",
                                                                           "0x1", 1.2276097536087036]), scalar),
                                         "data_name": scalar})
literal = st.fixed_dictionaries({"type": st.sampled_from(["float", "int", "str"]), "value": scalar})
arg = st.recursive(st.one_of(tensor, literal, st.none()), lambda inner: st.lists(inner, max_size=3), max_leaves=6)
entry_name = st.one_of(
    st.builds(lambda p, a, i, d: f"{p}.{a}.{i}.{d}",
              st.sampled_from(["Torch", "Tensor", "Functional", "Distributed", "Module.layer.Linear", "Cell.a.B"]),
              st.sampled_from(["exp", "masked_fill", "all_reduce", "recv", "empty", "forward", "softmax"]),
              st.integers(0, 3), st.sampled_from(["forward", "backward", "parameters_grad"])),
    st.text(max_size=20))
entry = st.one_of(st.fixed_dictionaries({}, optional={"input_args": st.lists(arg, max_size=3),
                                                      "input_kwargs": st.dictionaries(st.text(max_size=5), arg,
                                                                                      max_size=2),
                                                      "output": st.lists(arg, max_size=2),
                                                      "input": st.lists(arg, max_size=2),
                                                      "parameters": st.dictionaries(st.text(max_size=5), arg,
                                                                                    max_size=2)}),
                  json_value)
dump_doc = st.fixed_dictionaries({"data": st.one_of(st.dictionaries(entry_name, entry, max_size=5), json_value)},
                                 optional={"task": st.one_of(st.sampled_from(["statistics", "tensor",
                                                                              "overflow_check"]), scalar),
                                           "level": scalar, "framework": scalar, "dump_data_dir": scalar})


def encode(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8")


file_bytes = st.one_of(dump_doc.map(encode), json_value.map(encode), st.binary(max_size=64),
                       st.just(b"[" * 100000), st.just(b"\xff\xfe"),
                       st.lists(st.one_of(json_value, st.just(["d", "Torch.exp.0.forward", {}])),
                                max_size=4).map(lambda items: b"\n".join(encode(i) for i in items)))
NAMES = ("step0", "step1", "step01", "step-1", "stepX", "rank", "rank0", "rank1", "rank-1", "proc7", "dump.json",
         "construct.json", "stack.json", "dump.journal", "dump_tensor_data", "notes")
node = st.tuples(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
                 st.sampled_from(["file", "dir", "fifo"]), file_bytes)
trees = st.lists(node, max_size=8)


def build_tree(root: Path, nodes: List[Tuple[List[str], str, bytes]]) -> None:
    """Make what ``nodes`` describe under ``root``; a node whose place is already taken is left out."""
    for parts, kind, content in nodes:
        path = root.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "dir":
                path.mkdir()
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                with open(path, "xb") as handle:
                    handle.write(content)
        except OSError:
            continue


@contextmanager
def hang_guard(seconds: int = 20) -> Iterator[None]:
    """Turn a hang (a FIFO opened for reading waits for a writer forever) into a test failure."""
    def fail(signum, frame):
        raise AssertionError(f"no answer within {seconds} s: something waits forever")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_command(main, capsys, args: List[str], codes=(0, 2), seconds: int = 20) -> Tuple[int, str]:
    """``msprobe ARGS`` in process: (exit code, stderr); the code one of ``codes``, no traceback, and an exit 2
    ends in the suite's one error line."""
    import pytest

    with hang_guard(seconds), pytest.raises(SystemExit) as exited:
        main(args)
    err = capsys.readouterr().err
    assert exited.value.code in codes, err
    assert "Traceback" not in err, err
    if exited.value.code == 2:
        assert err.splitlines()[-1].startswith("msprobe: error: "), err
    return exited.value.code, err
