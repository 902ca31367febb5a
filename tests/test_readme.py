"""Every command the top-level README shows is executed here (``./dev test`` is what CI runs)."""
from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.support.checkout import copy_of_the_tree, untracked
from tests.support.cli import MSPROBE

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def readme_commands() -> list:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_shows_the_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert commands[:2] == ["./dev demo", "./dev test"]
    ci = (REPO / ".ci" / "run").read_text()
    assert "./dev test" in ci.splitlines()[-1]


@pytest.mark.slow
@pytest.mark.checkout
def test_demo_command_and_the_commands_after_it():
    """Run in the checkout, as a newcomer runs them: they work, and leave nothing git would show (their outputs go
    to ignored folders; a copy of the tree would not do, the point is this checkout's .gitignore)."""
    before = untracked()
    env = dict(os.environ, MSPROBE_VENV=sys.prefix)
    demo = subprocess.run(["./dev", "demo"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "summary:" in demo.stdout and "parts ran" in demo.stdout
    assert (REPO / "msprobe_demo" / "dump").is_dir()
    said = {}
    for command in readme_commands():
        if not command.startswith(".venv/bin/msprobe"):
            continue
        args = command.split()
        args[0] = str(MSPROBE)
        result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.strip(), command
        said[args[1]] = result.stdout
    # the overflow the demo made, not a dump whose only inf values are masks
    assert "overflow started on the single" in said["overflow_check"] or "overflow started on rank" in said[
        "overflow_check"], said["overflow_check"]
    assert "Torch.exp.0.forward" in said["overflow_check"], said["overflow_check"]
    assert untracked() == before


# READMEs of this area whose examples must write only under ignored folders (tools/compare/README.md: its owner's)
EXAMPLE_READMES = ("README.md", "tools/overflow/README.md", "tools/config_check/README.md",
                   "tools/ckpt_compare/README.md", "tools/dump/README.md", "tools/compare/README.md",
                   "tools/op_generate/README.md", "dockerfiles/README.md")


def test_every_output_a_readme_example_writes_is_ignored_by_git():
    """`-o`/`--output` of every command shown (and the positional pack of the torchrun line) in an ignored folder:
    outputs like tp1_vs_tp2pp2.json or demo_out/ in the repository root showed up in `git status`."""
    outputs = []
    for name in EXAMPLE_READMES:
        text = (REPO / name).read_text()
        for block in re.findall(r"```(?:bash|shell)\n(.*?)```", text, flags=re.S):
            for line in block.splitlines():
                words = shlex.split(line.split(" #", 1)[0]) if line.strip() else []
                outputs += [(name, words[i + 1]) for i, word in enumerate(words[:-1])
                            if word in ("-o", "--output", "-O")]
                outputs += [(name, word) for word in words if word.endswith(".zip") and "-c" not in words]
    assert len(outputs) >= 12, outputs
    shown = [path for _, path in outputs]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *shown], cwd=REPO, capture_output=True,
                             text=True).stdout.split()
    assert [(readme, path) for readme, path in outputs if path not in ignored] == []


@pytest.mark.slow
def test_per_tool_install_commands(tmp_path):
    root = tmp_path / "venv"
    venv.create(root, with_pip=True)
    pip_lines = [c for c in readme_commands() if c.startswith("pip install ")]
    assert len(pip_lines) == 7
    for line in pip_lines:
        args = [str(root / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        result = subprocess.run(args + line.split()[2:], cwd=REPO, capture_output=True, text=True, timeout=1200)
        assert result.returncode == 0, (line, result.stderr[-2000:])
        helped = subprocess.run([str(root / "bin/msprobe"), "--help"], capture_output=True, text=True)
        assert helped.returncode == 0, line
    helped = subprocess.run([str(root / "bin/msprobe"), "--help"], capture_output=True, text=True).stdout
    assert "overflow_check" in helped and "not installed" not in helped.split("overflow_check")[1][:80]


def fast_test_command() -> list:
    """The pytest line of the `test-fast` recipe the README names (`./dev test-fast`), for this interpreter."""
    assert "`test-fast`" in README.read_text()
    recipe = (REPO / "justfile").read_text().split("\ntest-fast:", 1)[1]
    line = next(line for line in recipe.splitlines() if "pytest" in line)
    return [sys.executable if word == "{{python}}" else word for word in shlex.split(line)]


@pytest.mark.slow
def test_a_fresh_clone_without_shared_beside_it_passes(tmp_path):
    """The README's fast test command in a copy of the tree placed where no ../shared exists, with this
    venv (MSPROBE_VENV). To stay affordable it collects every test but runs only tests/shared's tests on
    msprobe's files: those on its outputs make them live with the upstream package and pass, those on
    its own test files skip with one line saying why (elsewhere these use the same fixtures)."""
    clone = copy_of_the_tree(tmp_path / "clone")
    assert not (tmp_path / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k != "MSPROBE_REQUIRE_PEER"}
    env["MSPROBE_VENV"] = sys.prefix
    command = fast_test_command() + ["-p", "no:cacheprovider"]
    collected = subprocess.run(command + ["--collect-only"], cwd=clone, env=env, capture_output=True, text=True,
                               timeout=900)
    assert collected.returncode == 0 and " error" not in collected.stdout.splitlines()[-1], collected.stdout[-3000:]
    ran = subprocess.run(command + ["tests/shared/test_peer_fixtures.py", "tests/shared/test_cli.py"], cwd=clone,
                         env=env, capture_output=True, text=True, timeout=1800)
    summary = ran.stdout.splitlines()[-1]
    assert ran.returncode == 0 and "failed" not in summary and "error" not in summary, ran.stdout[-3000:]
    skipped = [line for line in ran.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) >= 3 and all("is not beside this clone" in line for line in skipped), skipped
    assert int(summary.split(" passed")[0].split()[-1]) >= 8, summary


def test_every_bench_option_says_what_it_does():
    """`python bench/X.py --help` explains each option (the README sends readers to bench/)."""
    silent = []
    for path in sorted((REPO / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                if not any(k.arg == "help" for k in node.keywords):
                    silent.append(f"{path.name}:{node.lineno}")
    assert not silent, silent
