from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "peer-fixtures" / "msprobe"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def peer_fixtures() -> Path:
    if not PEER.is_dir():
        pytest.fail(f"reference fixtures missing: {PEER} (the repository expects ../shared beside it)")
    return PEER
