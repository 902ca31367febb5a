"""Every command tools/op_generate/README.md shows is run here, in order, on a real MindSpore dump."""
from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.cli import MSPROBE

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "tools" / "op_generate" / "README.md").read_text()
PROGRAMS = {"python": sys.executable, "msprobe": str(MSPROBE)}


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    program, *rest = shlex.split(command)
    done = subprocess.run([PROGRAMS[program], *rest], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    return done


@pytest.mark.slow
def test_readme_commands(tmp_path, ms_dump, torch_apis_module):
    (shell,) = re.findall(r"```shell\n(.*?)```", README, re.DOTALL)
    install, generate, run, standalone, from_overflow, bench = shell.strip().splitlines()
    # installing into the environment under test would swap the code being tested; the install line is
    # the package's folder, checked to exist as a distribution (tests/packaging/test_readme_installs.py
    # installs it as written into a fresh venv)
    assert install == "pip install ./shared ./tools/dump ./tools/overflow ./tools/op_generate"
    assert 'name = "msprobe-op-generate"' in (REPO / "tools/op_generate/pyproject.toml").read_text()
    (config,) = re.findall(r"```json\n(.*?)```", README, re.DOTALL)
    (tmp_path / "config_op.json").write_text(config)
    (tmp_path / "dump").symlink_to(ms_dump.parents[2])
    assert "wrote msprobe_out/op_scripts/MintFunctional.softmax.0.backward.py" in _run(generate, tmp_path).stdout
    extracted = json.loads((tmp_path / "msprobe_out/MintFunctional.softmax.0.json").read_text())
    assert sorted(extracted["data"]) == ["MintFunctional.softmax.0.backward", "MintFunctional.softmax.0.forward"]
    printed = _run(run, tmp_path).stdout
    assert "MintFunctional.softmax.0.backward.output.0: pass" in printed
    assert not (tmp_path / "op_result_output").exists()  # -o given: the reports go there only
    (result,) = (tmp_path / "msprobe_out/op_result_output").glob("accuracy_checking_result_*.csv")
    with open(result, newline="") as handle:
        assert list(csv.DictReader(handle)) == [{"API Name": "MintFunctional.softmax.0", "Forward Test Success": "pass",
                                                  "Backward Test Success": "pass", "Message": ""}]
    _run(standalone, tmp_path)
    assert "from msprobe" not in (tmp_path / "msprobe_out/op_scripts/MintFunctional.softmax.0.backward.py").read_text()
    torch_apis_module.overflow(tmp_path / "overflow_dump")
    assert "first overflow: Torch.log.0" in _run(from_overflow, tmp_path).stdout
    assert (tmp_path / "msprobe_out/op_scripts/Torch.log.0.forward.py").is_file()
    report = _run(bench, REPO).stdout
    assert re.search(r"time ratio generation/json.load: \d+\.\d+; memory ratio: \d+\.\d+", report), report
