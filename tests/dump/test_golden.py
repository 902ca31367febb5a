"""Dump files are byte-identical to those the code before the dump-core redesign wrote for the same run
(golden/data, made by golden/run.py and golden/files.py with torch 2.13)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from golden.files import collected
from golden.run import MODES

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.skipif(not torch.__version__.startswith("2.13."), reason="golden files were made with torch 2.13")
@pytest.mark.parametrize("mode", sorted(MODES))
def test_dump_files_are_byte_identical_to_the_golden_run(tmp_path: Path, mode: str) -> None:
    subprocess.run([sys.executable, str(GOLDEN / "run.py"), str(tmp_path), mode], check=True, timeout=300)
    expected = collected(GOLDEN / "data" / mode)
    got = collected(tmp_path / mode)
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name] == expected[name], f"{mode}/{name} differs from the golden file"
