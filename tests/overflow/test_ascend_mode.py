"""Ascend INF/NAN versus saturation mode. No NPU here: the device is faked (ascend=True / sys.modules)."""
from __future__ import annotations

import subprocess
import sys
import types

import pytest

from msprobe.overflow import ascend


@pytest.mark.parametrize("env, mode", [
    ({"INF_NAN_MODE_ENABLE": "1", "MS_ASCEND_CHECK_OVERFLOW_MODE": "INFNAN_MODE"}, ascend.INFNAN),
    ({"INF_NAN_MODE_ENABLE": "1"}, ascend.INFNAN),
    ({"INF_NAN_MODE_ENABLE": "0"}, ascend.SATURATION),
    ({"INF_NAN_MODE_ENABLE": "1", "MS_ASCEND_CHECK_OVERFLOW_MODE": "SATURATION_MODE"}, ascend.SATURATION),
    ({}, ascend.UNKNOWN),
])
def test_mode_from_the_documented_variables_on_a_faked_npu(env, mode):
    assert ascend.overflow_mode(env, ascend=True) == mode
    assert ascend.overflow_mode(env, ascend=False) == ascend.NOT_ASCEND


def test_saturation_mode_says_detection_is_impossible(capsys):
    with pytest.warns(RuntimeWarning, match="cannot be detected"):
        assert ascend.warn_if_undetectable({"INF_NAN_MODE_ENABLE": "0"}, ascend=True) == ascend.SATURATION
    assert "saturation mode: overflows saturate to +-max and cannot be detected" in capsys.readouterr().err


def test_fake_torch_npu_module_counts_as_ascend(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    assert ascend.on_ascend()


def test_readme_exports_select_infnan_mode():
    """The two `export` lines of the README, run in a shell, give INF/NAN mode (faked NPU)."""
    script = ('export INF_NAN_MODE_ENABLE=1\nexport MS_ASCEND_CHECK_OVERFLOW_MODE="INFNAN_MODE"\n'
              f'{sys.executable} -c "from msprobe.overflow import ascend; print(ascend.overflow_mode(ascend=True))"')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == ascend.INFNAN, out.stderr
