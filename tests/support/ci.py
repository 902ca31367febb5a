"""Tests that need something of the machine (root, a daemon, a browser) skip without it, except in CI.

``.ci/run`` exports ``CI=true``: there every such test guards a promise and must run, so a missing
prerequisite fails the test with its reason instead of skipping it.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def unavailable(reason: str, module: bool = False) -> None:
    """Skip the test (with ``module``, the whole test file) for ``reason``; under CI, fail it."""
    if in_ci():
        pytest.fail(f"required in CI: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=module)


def imported(name: str, module: bool = True) -> ModuleType:
    """``import name`` (a test requirement, requirements-test.txt); missing, the test (with ``module``, the
    whole test file) is ``unavailable``: pytest.importorskip would skip it even in CI."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        unavailable(f"{name} is not installed ({exc})", module=module)
        raise  # (unavailable skips or fails: never reached)
