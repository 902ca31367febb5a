from __future__ import annotations

import sys
from pathlib import Path

import pytest

from msprobe.dump import native

sys.path.insert(0, str(Path(__file__).resolve().parent))  # dumphelpers, dist_worker


@pytest.fixture
def dump_dir(tmp_path) -> Path:
    return tmp_path / "dump"


@pytest.fixture(params=["compiled", "python"])
def helpers_or_not(request, monkeypatch) -> str:
    """The test once with the compiled helpers (skipped where they cannot be built) and once with the
    Python paths, as on a machine without a C compiler; the value is which."""
    if request.param == "python":
        monkeypatch.setattr(native, "helpers", lambda: None)
    elif native.helpers() is None:
        pytest.skip("no C compiler or Python headers here")
    return request.param
