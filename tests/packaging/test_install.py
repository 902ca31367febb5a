"""Installs from a checkout: `./shared` alone, the light tools without frameworks, every tool in one venv."""
from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import Dict, List

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE_PACKAGES_WITH_EXTRAS = subprocess.run([sys.executable, str(REPO / ".ci/suite.py"), "packages", "--extras"],
                                            capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def shared_only(tmp_path_factory) -> Path:
    """A fresh virtual environment with nothing but `pip install ./shared` (and what it pulls in)."""
    root = tmp_path_factory.mktemp("venv-shared")
    venv.create(root, with_pip=True)
    pip = subprocess.run([str(root / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          str(REPO / "shared")], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-2000:]
    return root


def test_shared_alone_gives_help_and_inspect(shared_only, upstream_dump):
    msprobe = str(shared_only / "bin/msprobe")
    helped = subprocess.run([msprobe, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "inspect" in helped.stdout
    listed = subprocess.run([str(shared_only / "bin/python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True)
    names = {item["name"].lower() for item in json.loads(listed.stdout)}
    assert "msprobe-shared" in names and not names & {"torch", "mindspore", "numpy"}
    root = upstream_dump()  # made live by msprobe 26.2.0
    _inspect_all(msprobe, [root, root / "step1" / "rank0" / "dump.json", root / "step0" / "rank0" / "construct.json"])


def test_shared_alone_inspects_msprobe_test_files(shared_only, peer_fixtures):
    """msprobe's own test files: MindSpore dumps and API-info files upstream cannot make on CPU."""
    _inspect_all(str(shared_only / "bin/msprobe"), [
        peer_fixtures / "test/msprobe_test/visualization_ut/input_format_correct",
        peer_fixtures / "test/msprobe_test/mindspore_ut/compare/dump_file/pytorch_data",
        peer_fixtures / "test/msprobe_test/mindspore_ut/compare/dump_file/mindspore_data",
        peer_fixtures / "test/msprobe_test/resources/layer_mapping/pytorch",
        peer_fixtures / "test/msprobe_test/resources/layer_mapping/mindspore",
        peer_fixtures / "test/msprobe_test/visualization_ut/builder/construct.json",
        peer_fixtures / "test/msprobe_test/pytorch_ut/api_accuracy_checker/run_ut/dump.json",
        peer_fixtures / "test/msprobe_test/mindspore_ut/api_accuracy_checker/files/api_info_statistics.json",
        peer_fixtures / "test/msprobe_test/mindspore_ut/api_accuracy_checker/files/api_info_tensor.json"])


def _inspect_all(msprobe: str, paths: List[Path]) -> None:
    for path in paths:
        result = subprocess.run([msprobe, "inspect", str(path)], capture_output=True, text=True)
        if path.name == "construct.json":  # a construct.json is not a dump: one clean line
            assert result.returncode == 2 and "field 'data'" in result.stderr, result.stderr
            continue
        if path.name.startswith("api_info_"):  # they name .npy files upstream does not ship: reported, exit 2
            assert result.returncode == 2 and "tensor files missing or unreadable: " in result.stdout, result.stdout
            assert result.stderr.startswith("msprobe: error: ") and "tensor file(s)" in result.stderr, result.stderr
            continue
        assert result.returncode == 0, (path, result.stderr)
        assert "total:" in result.stdout


def _resolve(tmp_path: Path, specs: List[str]) -> Dict[str, str]:
    """What `pip install SPECS` would install into an empty environment: name -> version (pip's own resolver)."""
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                             "--disable-pip-version-check", "--report", str(report), *specs],
                            capture_output=True, text=True, timeout=900, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    return {item["metadata"]["name"].lower(): item["metadata"]["version"]
            for item in json.loads(report.read_text())["install"]}


def test_light_tools_install_without_frameworks_or_pandas(tmp_path):
    names = _resolve(tmp_path, ["./shared", "./tools/config_check", "./tools/ckpt_compare", "./tools/dump",
                                "./tools/overflow"])
    assert {"msprobe-shared", "msprobe-config-check", "msprobe-ckpt-compare", "msprobe-overflow"} <= set(names)
    assert not set(names) & {"torch", "mindspore", "pandas"}, sorted(names)


def test_every_tool_with_every_extra_resolves_in_one_venv_with_numpy_1(tmp_path):
    """MindSpore 2.x breaks with numpy 2: the dump's mindspore extra must keep numpy<2 beside every other tool."""
    specs = SUITE_PACKAGES_WITH_EXTRAS.split()
    names = _resolve(tmp_path, specs)
    assert {"torch", "mindspore"} <= set(names)
    assert {"msprobe-" + Path(s.split("[")[0]).name.replace("_", "-") for s in specs} <= set(names)
    assert int(names["numpy"].split(".")[0]) < 2, names["numpy"]


def test_the_dev_venv_holds_every_tool_and_mindspore_computes():
    """The venv `just setup-demo` made (every tool, every extra, one venv) works: MindSpore arithmetic on numpy 1."""
    code = ("import numpy, mindspore, torch, msprobe.dump, msprobe.overflow, msprobe.ckpt_compare, "
            "msprobe.core.config_check; t = mindspore.Tensor(numpy.ones((2, 3), numpy.float32)); "
            "print(numpy.__version__, float((t * 2 + 1).sum().asnumpy()))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    version, total = result.stdout.split()[-2:]
    assert version.startswith("1.") and float(total) == 18.0
