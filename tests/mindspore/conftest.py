from __future__ import annotations

import pytest

pytest.importorskip("mindspore", reason="the MindSpore-native tests need mindspore (host venv)")


@pytest.fixture(autouse=True)
def _pynative():
    import mindspore as ms
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
