from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Dict

import pytest

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "peer-fixtures" / "msprobe"
PEER_ABSENT = ("../shared/peer-fixtures/msprobe is not beside this clone: these are msprobe's own unit-test files "
               "and MindSpore dumps, which upstream cannot make on CPU here (CI has them)")
REQUIRE_PEER = "MSPROBE_REQUIRE_PEER"
"""Set (to anything) where ../shared must be present, as in CI: its absence then fails instead of skipping."""


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def peer_fixtures() -> Path:
    """msprobe's own test files (../shared/peer-fixtures): files upstream cannot make live on this machine."""
    if not PEER.is_dir():
        if os.environ.get(REQUIRE_PEER):
            pytest.fail(f"{PEER}: missing, and {REQUIRE_PEER} says it must be there")
        pytest.skip(PEER_ABSENT)
    return PEER


@pytest.fixture(scope="session")
def upstream_dump(tmp_path_factory) -> Callable[[str], Path]:
    """``upstream_dump(version)``: a two-step dump of the tiny transformer made live by upstream msprobe
    ``version`` (tests/support/upstream_msprobe.py ``make_tiny_dump``), made once per session and version."""
    from tests.support.upstream_msprobe import make_tiny_dump

    made: Dict[str, Path] = {}

    def get(version: str = "26.2.0") -> Path:
        if version not in made:
            made[version] = make_tiny_dump(version, tmp_path_factory.mktemp(f"upstream-{version}"))
        return made[version]

    return get


@pytest.fixture(scope="session")
def upstream_package() -> Callable[[str], Path]:
    """``upstream_package(version)``: upstream msprobe's installed package, for the data files it ships."""
    from tests.support.upstream_msprobe import package_dir

    return package_dir


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config, items) -> None:
    """Under pytest-xdist (``./dev test`` runs ``-n 2 --dist loadgroup``): a test file runs whole on one worker,
    so its module fixtures are made once; all docker tests share one worker (one image build per run), and so
    do the MSAdapter chroot tests (one rootfs overlay at a time), and the tests that watch the checkout for what
    a command left there (one writing the checkout beside another would be seen)."""
    for item in items:
        if item.get_closest_marker("docker"):
            group = "docker"
        elif item.get_closest_marker("msadapter"):
            group = "msadapter"
        elif item.get_closest_marker("checkout"):
            group = "checkout"
        else:
            group = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))



def pytest_runtest_setup(item) -> None:
    """The grouping above works only through pytest-xdist rewriting node ids as ``<id>@<group>`` on each worker
    (pytest 9.2 computes ``nodeid`` from elsewhere, and the groups silently vanished: two workers then ran the
    docker tests side by side, and one image build broke the other's). An ungrouped test fails, saying so."""
    if getattr(item.config.option, "loadgroup", False) and "@" not in item.nodeid:
        pytest.fail("pytest-xdist --dist loadgroup did not group this test (the docker and chroot tests would run "
                    "side by side): pin the pytest of requirements-test.txt", pytrace=False)
