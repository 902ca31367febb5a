"""Ascend NPU overflow modes: detection needs INF/NAN mode; saturation mode hides overflows.

In saturation mode an overflowing NPU kernel returns ±max of the dtype instead of inf, so no
statistic can show it: the check cannot work and says so once, loudly, instead of reporting
"no overflow". On CPU/GPU (IEEE 754 everywhere) there is nothing to configure.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Mapping, Optional

INFNAN = "infnan"
SATURATION = "saturation"
NOT_ASCEND = "not-ascend"
UNKNOWN = "unknown"
UNKNOWN_MESSAGE = (
    "overflow_check: INF_NAN_MODE_ENABLE is not set: on Atlas A2 the default INF/NAN mode lets overflows be "
    "detected, on Atlas training products (saturation mode only) they cannot be; export INF_NAN_MODE_ENABLE=1")

SATURATION_MESSAGE = (
    "overflow_check: the Ascend NPU runs in saturation mode: overflows saturate to +-max and cannot be "
    "detected; run with INF_NAN_MODE_ENABLE=1 (CANN) and MS_ASCEND_CHECK_OVERFLOW_MODE=INFNAN_MODE "
    "(MindSpore) on Atlas A2 training products (Atlas training products support only saturation mode)")


def on_ascend() -> bool:
    """True when the run uses an Ascend NPU (torch_npu loaded, or MindSpore targeting Ascend)."""
    if "torch_npu" in sys.modules:
        return True
    mindspore = sys.modules.get("mindspore")
    if mindspore is not None:
        try:
            return mindspore.get_context("device_target") == "Ascend"
        except Exception:  # an old MindSpore without get_context: not Ascend for our purpose
            return False
    return False


def overflow_mode(environ: Optional[Mapping[str, str]] = None, ascend: Optional[bool] = None) -> str:
    """``infnan``, ``saturation``, ``unknown`` or ``not-ascend``, from the two documented variables.

    CANN's ``INF_NAN_MODE_ENABLE=1`` selects INF/NAN mode; MindSpore's ``MS_ASCEND_CHECK_OVERFLOW_MODE``
    must agree with it (``INFNAN_MODE``) when set. Neither set = the product's default, which we
    cannot see (``unknown``).
    """
    environ = os.environ if environ is None else environ
    if not (on_ascend() if ascend is None else ascend):
        return NOT_ASCEND
    cann = environ.get("INF_NAN_MODE_ENABLE")
    framework = environ.get("MS_ASCEND_CHECK_OVERFLOW_MODE")
    if cann == "0" or (framework is not None and framework != "INFNAN_MODE"):
        return SATURATION
    if cann == "1" or framework == "INFNAN_MODE":
        return INFNAN
    return UNKNOWN


def warn_if_undetectable(environ: Optional[Mapping[str, str]] = None, ascend: Optional[bool] = None) -> str:
    """Warn once when overflows cannot be seen; returns the mode."""
    mode = overflow_mode(environ, ascend)
    if mode == SATURATION:
        warnings.warn(SATURATION_MESSAGE, RuntimeWarning, stacklevel=3)
        print(f"msprobe: warning: {SATURATION_MESSAGE}", file=sys.stderr)
    elif mode == UNKNOWN:
        print(f"msprobe: warning: {UNKNOWN_MESSAGE}", file=sys.stderr)
    return mode
