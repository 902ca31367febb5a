"""Dump files are byte-identical to those the code before the dump-core redesign wrote for the same run
(golden/data, made by golden/run.py and golden/files.py with torch 2.13).

One allowance: a float32 tensor that no kernel pass reads in place (a transposed view) gets its sum from
numpy's BLAS dot, whose kernel, and so the order of the float32 additions, depends on the CPU (AVX2 or
AVX-512): its Mean or Norm may differ in the last bits from the golden machine's. Those two values are
compared as numbers (relative 1e-5) and must still be written as Python writes a float; every other byte
is compared as it is."""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest
import torch

from golden.files import collected
from golden.run import MODES
from tests.support.ci import unavailable

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("mode", sorted(MODES))
def test_dump_files_are_byte_identical_to_the_golden_run(tmp_path: Path, mode: str) -> None:
    if not torch.__version__.startswith("2.13."):
        unavailable(f"the golden files were made with torch 2.13, this is {torch.__version__}")
    subprocess.run([sys.executable, str(GOLDEN / "run.py"), str(tmp_path), mode], check=True, timeout=300)
    expected = collected(GOLDEN / "data" / mode)
    got = collected(tmp_path / mode)
    assert sorted(got) == sorted(expected)
    for name in expected:
        got_bytes, got_sums = _sums_masked(got[name])
        expected_bytes, expected_sums = _sums_masked(expected[name])
        assert got_bytes == expected_bytes, f"{mode}/{name} differs from the golden file"
        for (key, value), (_, golden) in zip(got_sums, expected_sums):
            assert value == golden or _close(value, golden), f"{mode}/{name}: {key} {value!r}, golden {golden!r}"


SUMS = re.compile(rb'("(?:Mean|Norm)": )(-?[0-9][0-9.e+-]*)')


def _sums_masked(data: bytes) -> Tuple[bytes, List[Tuple[bytes, bytes]]]:
    """``data`` with each finite Mean/Norm value replaced by a mark, and those values in order."""
    sums = [(match.group(1), match.group(2)) for match in SUMS.finditer(data)]
    return SUMS.sub(rb"\1<sum>", data), sums


def _close(value: bytes, golden: bytes) -> bool:
    number = float(value)
    return repr(number).encode() == value and math.isclose(number, float(golden), rel_tol=1e-5)
