"""Real dumps of the suite's tiny transformer, made once per test session by the dump tool itself."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from tests.compare.compare_helpers import make_dump


@pytest.fixture(scope="session")
def tiny_dumps(tmp_path_factory) -> Dict[str, Path]:
    """Statistics and tensor dumps (mix level, one step) of the model, without and with the planted change."""
    root = tmp_path_factory.mktemp("tiny_dumps")
    out = {}
    for task in ("statistics", "tensor", "md5"):
        out[task] = make_dump(root / f"{task}_golden", task)
        out[task + "_planted"] = make_dump(root / f"{task}_planted", task, plant=True)
    return out
