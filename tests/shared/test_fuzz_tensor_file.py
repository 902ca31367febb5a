"""Fuzz tests of the one tensor-file reader (``schema/tensor_file.py``): a file from someone else's dump, cut,
flipped, spliced or made up, is accepted and read as an array, or refused with a ``TensorFileError`` naming it;
never another exception, and never code run from its pickle. Seeds: real ``torch.save`` and ``numpy.save``
files and a pickle that calls ``os.system``."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msprobe.schema.tensor_file import TensorFileError, load_tensor, tensor_file_problem
from tests.support.ci import imported

torch = imported("torch")
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])


class _RunsCode:
    def __reduce__(self):
        return os.system, ("touch PWNED",)


def _saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


SEEDS = {".pt": [_saved(torch.arange(6.0).reshape(2, 3)), _saved(torch.ones(3, dtype=torch.bfloat16)),
                 _saved(_RunsCode()), _saved({"a": torch.zeros(1)})],
         ".npy": [_npy(np.arange(4, dtype=np.float32)), _npy(np.array([{"a": 1}], dtype=object))]}


@st.composite
def damaged(draw):
    """A seed file with bytes cut, overwritten or inserted, or bytes made up, under a tensor file's suffix."""
    suffix = draw(st.sampled_from(sorted(SEEDS)))
    data = bytearray(draw(st.sampled_from(SEEDS[suffix])))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["cut", "flip", "insert"]))
        if how == "cut":
            del data[at:]
        elif how == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        else:
            data[at:at] = draw(st.binary(max_size=64))
    if draw(st.booleans()) and draw(st.booleans()):
        data = bytearray(draw(st.binary(max_size=512)))
    return suffix, bytes(data)


@FUZZ
@given(case=damaged())
@example(case=(".pt", SEEDS[".pt"][2]))
@example(case=(".pt", SEEDS[".pt"][0][:-30]))
@example(case=(".npy", SEEDS[".npy"][1]))
def test_tensor_file_reader(tmp_path_factory, case):
    suffix, data = case
    rank = tmp_path_factory.mktemp("rank")
    folder = rank / "dump_tensor_data"
    folder.mkdir()
    name = "Torch.add.0.forward.output.0" + suffix
    (folder / name).write_bytes(data)
    cwd = os.getcwd()
    os.chdir(rank)  # where the planted command would touch its file
    try:
        problem = tensor_file_problem(folder, name)
        try:
            array = load_tensor(folder, name)
        except TensorFileError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(folder / name))
        else:
            assert problem is None and isinstance(array, np.ndarray)
        if problem is not None:
            with pytest.raises(TensorFileError):
                load_tensor(folder, name)
    finally:
        os.chdir(cwd)
    assert not (rank / "PWNED").exists()


def test_the_seeds_are_what_the_fuzzing_starts_from(tmp_path):
    """The real files read; the pickle that runs code and the object array are refused before they are read."""
    folder = tmp_path / "dump_tensor_data"
    folder.mkdir()
    said = {}
    for suffix, seeds in SEEDS.items():
        for index, data in enumerate(seeds):
            (folder / f"t{index}{suffix}").write_bytes(data)
            said[f"t{index}{suffix}"] = tensor_file_problem(folder, f"t{index}{suffix}")
    assert said["t0.pt"] is None and said["t1.pt"] is None and said["t0.npy"] is None
    assert said["t2.pt"] == "cannot be read as a tensor (its pickle calls posix.system, not a tensor's parts)"
    assert load_tensor(folder, "t1.pt").dtype == np.float32
    assert said["t3.pt"] == "cannot be read as a tensor (it holds something other than one tensor)"
    with pytest.raises(TensorFileError, match="holds something other than one tensor"):
        load_tensor(folder, "t3.pt")
    with pytest.raises(TensorFileError, match="cannot be read as a tensor"):
        load_tensor(folder, "t1.npy")
