"""`pip install ./shared ./tools/dump` with the pip Debian bullseye ships (20.3.4, Python 3.9), in the MSAdapter
rootfs: in a copy of the checkout, offline (the build backends from a cached wheelhouse), into the system Python
seen through an overlay, so the shared cached rootfs stays as built. That pip once failed with
`pkg_resources.RequirementParseError: Invalid URL given` on the siblings' `@ file://` references."""
from __future__ import annotations

import tomllib
from typing import List

import pytest

from ms_dump_checks import check_dump_against_npy
from msprobe.schema import find_rank_dirs, load_dump
from tests.support import msadapter_env as mae
from tests.support.checkout import copy_of_the_tree

pytestmark = [pytest.mark.msadapter, pytest.mark.slow]
REPO = mae.REPO_ROOT
VERSION = (REPO / "VERSION").read_text().strip()
PACKAGES = ["shared", "tools/dump"]
EXAMPLE = REPO / "tests" / "msadapter" / "scripts" / "doc_example.py"
KERNEL_WARNING = "msprobe: warning: msprobe.dump._kernels is not built"


def build_requirements() -> List[str]:
    """What the packages' pyprojects need to build, and what pip on the host cannot see Python 3.9 needs."""
    needed = []
    for package in PACKAGES:
        needed += tomllib.loads((REPO / package / "pyproject.toml").read_text())["build-system"]["requires"]
    return sorted(set(needed)) + ["tomli", "wheel"]  # hatchling's backport below 3.11; setuptools' old hook


@pytest.fixture(scope="module")
def bullseye(tmp_path_factory):
    mae.require_rootfs()
    mae.ensure_rootfs()
    work = tmp_path_factory.mktemp("bullseye")
    return {"checkout": copy_of_the_tree(work / "checkout", *PACKAGES), "wheelhouse": mae.py39_wheelhouse(
        "build", build_requirements()), "run": work / "run"}


def test_system_pip_installs_shared_and_dump_without_a_compiler(bullseye, tmp_path_factory):
    checkout, wheelhouse = bullseye["checkout"], bullseye["wheelhouse"]
    layer = tmp_path_factory.mktemp("overlay")
    compiler = mae.run_in_rootfs(["sh", "-c", "command -v cc gcc x86_64-linux-gnu-gcc"], cwd=checkout)
    assert compiler.returncode != 0 and not compiler.stdout.strip(), compiler.stdout  # the case this test is for
    pip = mae.run_in_rootfs(["pip", "--version"], cwd=checkout, overlay=layer)
    assert pip.stdout.startswith("pip 20.3.4 from /usr/lib/python3/dist-packages/pip (python 3.9)"), pip.stdout
    installed = mae.run_in_rootfs(["pip", "install", "--no-index", "--find-links", wheelhouse, "./shared",
                                   "./tools/dump"], cwd=checkout, binds=[wheelhouse], overlay=layer, timeout=900)
    said = installed.stdout + installed.stderr
    assert installed.returncode == 0 and "RequirementParseError" not in said, said[-3000:]
    assert f"Successfully installed msprobe-dump-{VERSION} msprobe-shared-{VERSION}" in installed.stdout, said[-3000:]

    run_dir = bullseye["run"]
    run_dir.mkdir()
    version = mae.run_in_rootfs(["msprobe", "--version"], cwd=run_dir, overlay=layer)
    assert version.returncode == 0 and version.stdout.strip() == f"msprobe {VERSION}", version.stderr
    # the kernels were left out: their first use says so, once
    probe = mae.run_py39(["-c", "from msprobe.mindspore import PrecisionDebugger; from msprobe.dump import kernels; "
                          "print(PrecisionDebugger.__module__, kernels.loaded(), kernels.loaded())"],
                         cwd=run_dir, overlay=layer)
    assert probe.returncode == 0 and probe.stdout.split() == ["msprobe.mindspore.debugger", "None", "None"], probe
    warned = probe.stderr.strip().splitlines()
    assert len(warned) == 1 and warned[0].startswith(KERNEL_WARNING), probe.stderr

    # doc 29's example, from the installed packages (nothing of the checkout on the path)
    (run_dir / "config.json").write_text('{"task": "tensor", "dump_path": "./dump_path", "level": "mix"}')
    (run_dir / "train.py").write_text(EXAMPLE.read_text())
    trained = mae.run_py39(["train.py"], cwd=run_dir, overlay=layer, timeout=600)
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert [r.step for r in find_rank_dirs(run_dir / "dump_path")] == [0, 1, 2]
    assert load_dump(run_dir / "dump_path" / "step0" / "rank" / "dump.json").framework == "mindtorch"
    assert check_dump_against_npy(run_dir / "dump_path") == 84

    assert (layer / "upper" / "usr" / "local" / "bin" / "msprobe").is_file()  # the shared rootfs was not touched


def test_a_system_site_venv_needs_a_newer_pip_to_build_the_dump(bullseye, tmp_path_factory):
    """pip 20.3.4's build isolation in a venv with --system-site-packages lets Debian's setuptools 52 in: the
    dump (setuptools>=77) does not build; `pip install -U pip` first, as dockerfiles/README.md says."""
    checkout, wheelhouse = bullseye["checkout"], mae.py39_wheelhouse("pip", ["pip"])
    venv = tmp_path_factory.mktemp("venv") / "venv"
    made = mae.run_py39(["-m", "venv", "--system-site-packages", str(venv)], cwd=venv.parent)
    assert made.returncode == 0, made.stderr
    install = [venv / "bin" / "pip", "install", "--no-index", "--find-links", bullseye["wheelhouse"],
               "./shared", "./tools/dump"]
    binds = [bullseye["wheelhouse"], wheelhouse, venv.parent]
    failed = mae.run_in_rootfs(install, cwd=checkout, binds=binds, timeout=900)
    assert failed.returncode != 0 and "AttributeError: install_layout" in failed.stdout + failed.stderr, failed
    upgraded = mae.run_in_rootfs([venv / "bin" / "pip", "install", "--no-index", "--find-links", wheelhouse,
                                  "-U", "pip"], cwd=checkout, binds=binds)
    assert upgraded.returncode == 0, upgraded.stderr[-2000:]
    installed = mae.run_in_rootfs(install, cwd=checkout, binds=binds, timeout=900)
    assert installed.returncode == 0, (installed.stdout + installed.stderr)[-3000:]
    version = mae.run_in_rootfs([venv / "bin" / "msprobe", "--version"], cwd=checkout, binds=binds)
    assert version.stdout.strip() == f"msprobe {VERSION}", version.stderr
