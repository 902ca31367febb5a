"""Dumps made with the suite's own dump tool, and helpers that generate scripts and run them in this process."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from tests.support.ci import unavailable

from msprobe.cli.main import main as msprobe_main
from msprobe.op_generate import generate, parse_op_config

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"op_generate_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def ms_apis():
    """scripts/ms_apis.py: the MindSpore step and the names of its API calls (``APIS``)."""
    return _load("ms_apis")


@pytest.fixture(scope="session")
def ms_dump(tmp_path_factory, ms_apis) -> Path:
    """dump.json (task tensor, L1) of 22 MindSpore APIs run forward and backward by ms.grad."""
    if importlib.util.find_spec("mindspore") is None:
        unavailable("mindspore is not installed")
    root = tmp_path_factory.mktemp("ms_dump")
    ms_apis.dump(root)
    return root / "step0" / "rank" / "dump.json"


@pytest.fixture(scope="session")
def torch_apis_module():
    """scripts/torch_apis.py: a torch step to dump, and one whose first overflow is a log of zero."""
    return _load("torch_apis")


@pytest.fixture(scope="session")
def torch_dump(tmp_path_factory, torch_apis_module) -> Path:
    """dump.json (task tensor, L1) of a few torch APIs in float32 and float16, forward and backward."""
    root = tmp_path_factory.mktemp("torch_dump")
    torch_apis_module.dump(root)
    return root / "step0" / "rank" / "dump.json"


@pytest.fixture
def make_scripts(tmp_path) -> Callable[..., List[Path]]:
    """make_scripts(dump, [api...], propagation, data_mode, **config) → the generated scripts."""

    def make(dump: Path, apis: List[str], propagation: str = "forward", data_mode: str = "random_data",
             out: str = "scripts", **extra) -> List[Path]:
        paths = []
        for api in apis:
            doc = dict({"dump_json_path": str(dump), "api_name": api, "propagation": propagation,
                        "data_mode": data_mode}, **extra)
            paths.append(generate(parse_op_config(doc), tmp_path / out / data_mode, force=True))
        return paths
    return make


@pytest.fixture
def run_scripts(tmp_path, monkeypatch) -> Callable[[List[Path]], List[Dict]]:
    """Run scripts here (frameworks imported once) in tmp_path; per script: code, printed text, CSV rows."""
    runner = _load("run_scripts")
    monkeypatch.chdir(tmp_path)

    def run(scripts: List[Path]) -> List[Dict]:
        return [runner.run(script, tmp_path / "op_result_output") for script in scripts]
    return run


@pytest.fixture
def cli() -> Callable[[List[str]], int]:
    """Run the ``msprobe`` command in this process; its exit status."""

    def run(argv: List[str]) -> int:
        try:
            msprobe_main(argv)
        except SystemExit as exc:
            return exc.code
        return 0
    return run
