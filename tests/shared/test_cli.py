"""The `msprobe` command as users run it: help, version, -f, inspect, errors and exit codes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from msprobe.schema import RankWriter

MSPROBE = str(Path(sys.executable).parent / "msprobe")


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([MSPROBE, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_help_version_and_framework_styles(peer_fixtures):
    helped = run("--help")
    assert helped.returncode == 0 and "inspect" in helped.stdout and "config_check" in helped.stdout
    assert run("--version").stdout.strip().startswith("msprobe ")
    sample = str(peer_fixtures / "test/msprobe_test/visualization_ut/input_format_correct")
    old_style, new_style = run("-f", "pytorch", "inspect", sample), run("inspect", sample)
    assert old_style.returncode == new_style.returncode == 0 and old_style.stdout == new_style.stdout
    bad = run("-f", "jax", "inspect", sample)
    assert bad.returncode == 2 and "framework" in bad.stderr and "Traceback" not in bad.stderr


def test_inspect_summarises_upstream_dump(peer_fixtures):
    path = peer_fixtures / "test/msprobe_test/mindspore_ut/compare/dump_file/pytorch_data/dump.json"
    result = run("inspect", str(path))
    assert result.returncode == 0, result.stderr
    assert "framework: pytorch" in result.stdout and "Distributed=" in result.stdout
    summary = json.loads(run("inspect", "--json", str(path)).stdout)
    assert summary[0]["entries"] == len(json.loads(path.read_text())["data"])


def test_inspect_reports_malformed_input_in_one_line(peer_fixtures, tmp_path):
    for target, reason in [
        (peer_fixtures / "test/msprobe_test/visualization_ut/input", "step directory inside a step directory"),
        (peer_fixtures / "test/msprobe_test/resources/common/test_backward.json", "field 'data.Module'"),
        (tmp_path / "nothing", "no such file or directory"),
    ]:
        result = run("inspect", str(target))
        assert result.returncode == 2 and reason in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_inspect_reads_an_interrupted_run_and_counts_inf_nan(tmp_path):
    writer = RankWriter(tmp_path / "dump" / "step0" / "rank0", {"task": "statistics", "level": "L1",
                                                               "framework": "pytorch", "dump_data_dir": None})
    tensor = {"type": "torch.Tensor", "dtype": "torch.float16", "shape": [2], "Max": float("inf"), "Min": 1.0,
              "Mean": float("nan"), "Norm": float("inf"), "requires_grad": False}
    writer.entry("Torch.exp.0.forward", {"input_args": [dict(tensor, Max=12.0, Mean=1.0, Norm=2.0)],
                                         "input_kwargs": {}, "output": [tensor]})
    result = run("inspect", str(tmp_path / "dump"))  # never finalized: as after a SIGKILL
    assert result.returncode == 0, result.stderr
    assert "recovered from the journal" in result.stdout and "Torch.exp.0.forward: output.0" in result.stdout
    assert "1 with inf/nan" in result.stdout


def test_missing_tool_names_the_package():
    result = run("op_generate", "-i", "config_op.json", "-o", "out")
    assert result.returncode == 2
    assert "msprobe-op-generate" in result.stderr and "pip install ./tools/op_generate" in result.stderr


def test_config_check_needs_one_mode(tmp_path):
    result = run("config_check")
    assert result.returncode == 2 and "exactly one of -d" in result.stderr
    result = run("config_check", "-c", str(tmp_path / "a.zip"), str(tmp_path / "b.zip"))
    assert result.returncode == 2 and "no such file or directory" in result.stderr


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    result = run("demo", "-o", str(tmp_path / "mine"))
    assert result.returncode == 2 and "not made by msprobe demo" in result.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
