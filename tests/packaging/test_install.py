"""Per-tool installs: `pip install ./shared` alone works; each tool's install pulls in shared."""
from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = ["dump", "overflow", "config_check", "ckpt_compare"]


@pytest.fixture(scope="module")
def shared_only(tmp_path_factory) -> Path:
    """A fresh virtual environment with nothing but `pip install ./shared` (and what it pulls in)."""
    root = tmp_path_factory.mktemp("venv-shared")
    venv.create(root, with_pip=True)
    pip = subprocess.run([str(root / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          str(REPO / "shared")], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-2000:]
    return root


def test_shared_alone_gives_help_and_inspect(shared_only, peer_fixtures):
    msprobe = str(shared_only / "bin/msprobe")
    helped = subprocess.run([msprobe, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "inspect" in helped.stdout
    listed = subprocess.run([str(shared_only / "bin/python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True)
    names = {item["name"].lower() for item in json.loads(listed.stdout)}
    assert "msprobe-shared" in names and not names & {"torch", "mindspore", "numpy"}
    good = [peer_fixtures / "test/msprobe_test/visualization_ut/input_format_correct",
            peer_fixtures / "test/msprobe_test/mindspore_ut/compare/dump_file/pytorch_data",
            peer_fixtures / "test/msprobe_test/mindspore_ut/compare/dump_file/mindspore_data",
            peer_fixtures / "test/msprobe_test/resources/layer_mapping/pytorch",
            peer_fixtures / "test/msprobe_test/resources/layer_mapping/mindspore",
            peer_fixtures / "test/msprobe_test/visualization_ut/builder/construct.json",
            peer_fixtures / "test/msprobe_test/pytorch_ut/api_accuracy_checker/run_ut/dump.json",
            peer_fixtures / "test/msprobe_test/mindspore_ut/api_accuracy_checker/files/api_info_statistics.json",
            peer_fixtures / "test/msprobe_test/mindspore_ut/api_accuracy_checker/files/api_info_tensor.json"]
    for path in good:
        result = subprocess.run([msprobe, "inspect", str(path)], capture_output=True, text=True)
        if path.name == "construct.json":  # a construct.json is not a dump: one clean line
            assert result.returncode == 2 and "field 'data'" in result.stderr, result.stderr
            continue
        assert result.returncode == 0, (path, result.stderr)
        assert "total:" in result.stdout


@pytest.mark.parametrize("tool", TOOLS)
def test_each_tool_install_pulls_in_shared(tool, tmp_path):
    if not (REPO / "tools" / tool / "pyproject.toml").exists():
        pytest.fail(f"tools/{tool} has no pyproject.toml")
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                             "--disable-pip-version-check", "--report", str(report), str(REPO / "tools" / tool)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    names = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert {"msprobe-shared", f"msprobe-{tool.replace('_', '-')}"} <= names
