from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # dumphelpers, dist_worker


@pytest.fixture
def dump_dir(tmp_path) -> Path:
    return tmp_path / "dump"
