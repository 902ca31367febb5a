"""Every command tools/dump/README.md shows is run here; `msprobe demo` dumps its model."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe.schema import find_rank_dirs
from tests.support.cli import MSPROBE

REPO = Path(__file__).resolve().parents[2]
README = REPO / "tools" / "dump" / "README.md"


def _pytorch_part():
    """The PyTorch part; the MindSpore section's commands run in tests/mindspore/test_readme.py."""
    text = README.read_text(encoding="utf-8")
    end = text.find("## MindSpore and PyTorch code on MindSpore")
    return text if end < 0 else text[:end]


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", _pytorch_part(), flags=re.S)


TOP_README = REPO / "README.md"


def _commands():
    return [line.strip() for block in _blocks("bash") for line in block.splitlines() if line.strip()]


def _argv(command):
    argv = shlex.split(command)
    if argv[0] == "python":
        argv[0] = sys.executable
    elif argv[0] in ("pip", "msprobe"):
        argv = [sys.executable, "-m", "pip"] + argv[1:] if argv[0] == "pip" else [str(MSPROBE)] + argv[1:]
    return argv


def _run(argv, cwd, timeout=600):
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def test_readme_python_example_then_inspect(tmp_path):
    (example,) = _blocks("python")
    (tmp_path / "example.py").write_text(example)
    _run([sys.executable, "example.py"], tmp_path)
    _run([sys.executable, "example.py"], tmp_path)  # a second run starts afresh, as a newcomer's would
    ranks = find_rank_dirs(tmp_path / "msprobe_out" / "dump_path")
    assert [r.step for r in ranks] == [0, 1] and all(not r.interrupted for r in ranks)
    inspect = [c for c in _commands() if c.startswith("msprobe inspect")]
    assert inspect
    out = _run(_argv(inspect[0]), tmp_path)
    assert "steps: 0, 1" in out and "framework: pytorch" in out


@pytest.mark.parametrize("command", [
    pytest.param(c, marks=[pytest.mark.slow] if c.startswith("msprobe demo") else [])  # runs every tool's part
    for c in _commands() if not c.startswith(("msprobe inspect", "python bench"))])
def test_readme_command(tmp_path, command):
    # repository-relative commands run from the repository root; the demo writes under tmp_path
    if command.startswith("msprobe demo"):
        out = _run(_argv(command), tmp_path)
        assert "[dump]" in out
        dump = tmp_path / "msprobe_demo" / "dump"
        assert [(r.step, r.label) for r in find_rank_dirs(dump)] == [(0, "rank"), (1, "rank"), (2, "rank")]
        return
    if command.startswith("pip install "):
        # installing into the environment under test would swap the code being tested:
        # tests/packaging/test_readme_installs.py runs every README's install line in a fresh venv
        from tests.packaging.test_readme_installs import install_lines
        assert command in [line for _, line in install_lines()], command
        return
    _run(_argv(command), REPO)


@pytest.mark.slow
@pytest.mark.msadapter  # bench/dump_overhead.py measures MSAdapter too where `just services` built its rootfs
def test_readme_bench_commands():
    overhead, breakdown = [c for c in _commands() if c.startswith("python bench") and "--model" not in c]
    out = _run(_argv(overhead), REPO, timeout=1200)
    assert "statistics L1" in out and "tensor L1" in out
    assert re.search(r"^dump directory: /\S* \(\w+\); a file create there: \d+ us before the workers, \d+ us "
                     r"after \(medians of 200\)$", out, re.M), out
    lines = _run(_argv(breakdown), REPO, timeout=600).splitlines()
    variants = {line[:16].strip(): float(line[16:].split("x")[0]) for line in lines[2:]}
    assert list(variants) == ["full", "no statistics", "no stacks", "no journal", "no gates", "all off"]
    assert all(ratio > 0.5 for ratio in variants.values())


@pytest.mark.slow
def test_readme_llama_bench_command():
    """The realistic-model row's command, run at ``llama-small`` for one step of one mode (the README's figures
    come from the full size): ours and msprobe 26.2.0 measured in the same run, on the same entries."""
    (command,) = [c for c in _commands() if c.startswith("python bench") and "--model llama" in c]
    argv = _argv(command)
    argv[argv.index("--model") + 1] = "llama-small"
    argv[argv.index("--steps") + 1] = "1"
    lines = _run(argv + ["--modes", "statistics L1"], REPO, timeout=900).splitlines()
    assert lines[0].startswith("llama-small transformer, CPU, 1 thread; no-dump step ")
    assert "msprobe 26.2.0" in lines[1] and not [line for line in lines if "not measured" in line]
    # ours: ratio, stats, cpu, all-in, b2b, entries/step, bytes/step; msprobe's: ratio, faster, less add, cpu...
    words = next(line for line in lines if line.startswith("statistics L1")).split()[2:]
    ours, theirs = float(words[0].rstrip("x")), float(words[7].rstrip("x"))
    assert ours > 0.5 and theirs > 0.5 and float(words[5]) == float(words[12]) > 0  # the same entries a step


def test_demo_part_returns_the_dump_path(tmp_path):
    from msprobe.cli.demo import DemoContext
    from msprobe.pytorch.demo import run

    ctx = DemoContext(out_dir=tmp_path, framework=None)
    path = run(ctx)
    assert path == str(tmp_path / "dump") and run.order == 10
    data = find_rank_dirs(path)[0].load().dump.data
    assert any(n.startswith("Module.") for n in data) and any(n.startswith("Functional.") for n in data)


def test_bench_refuses_a_dump_dir_that_is_not_a_directory(tmp_path):
    bench = REPO / "bench" / "dump_overhead.py"
    done = subprocess.run([sys.executable, str(bench), "--dump-dir", str(tmp_path / "no")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == f"dump_overhead.py: error: --dump-dir: {tmp_path / 'no'} is not a directory"
