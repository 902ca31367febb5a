from __future__ import annotations

import importlib.util

import pytest

# MindSpore-native tests need mindspore with mint (2.3+, the host venv has 2.10); MindSpore 2.0 (the
# MSAdapter rootfs) is covered by tests/msadapter, which drives it through chroot.
collect_ignore_glob = [] if importlib.util.find_spec("mindspore") is not None and \
    importlib.util.find_spec("mindspore.mint") is not None else ["test_*.py"]


@pytest.fixture(autouse=True)
def _pynative():
    import mindspore as ms
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
