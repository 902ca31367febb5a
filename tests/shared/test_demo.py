"""`msprobe demo` where parts cannot run: every part skips the same way and the summary counts only what ran."""
from __future__ import annotations

import subprocess
import sys

from tests.support.ci import unavailable
from tests.support.cli import msprobe

# The command as installed, with torch made unimportable: a machine where only torch-free tools work.
_NO_TORCH = "import sys; sys.modules['torch'] = None; from msprobe.cli.main import main; main(sys.argv[1:])"


def parts_said(stdout: str) -> dict:
    """part name -> the lines it printed (indented under its [name] line)."""
    said: dict = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = said.setdefault(line[1:-1], [])
        elif current is not None and line.startswith("  "):
            current.append(line.strip())
    return said


def test_demo_without_torch_skips_each_torch_part_in_one_line(tmp_path):
    """Before: the overflow part ended the demo in a traceback (No module named 'torch'), the dump part was left
    out with a warning, and ckpt_compare alone said "skipped"."""
    done = subprocess.run([sys.executable, "-c", _NO_TORCH, "-f", "pytorch", "demo", "-o", "out"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    said = parts_said(done.stdout)
    no_torch = ["skipped: torch is not installed (pip install torch)"]
    assert list(said) == ["dump", "dump_mindspore", "overflow", "op_generate", "config_check", "ckpt_compare"], said
    assert said["dump"] == said["overflow"] == said["ckpt_compare"] == no_torch, said
    assert said["dump_mindspore"] == ["skipped: framework pytorch"], said
    assert said["op_generate"] == ["skipped: the overflow part found no dump to reproduce from"], said
    assert said["config_check"][-1].startswith("done in "), said
    assert done.stdout.splitlines()[-1] == (
        "summary: 1/6 parts ran, 5 skipped (dump, dump_mindspore, overflow, op_generate, ckpt_compare); "
        f"outputs in {(tmp_path / 'out').resolve()}"), done.stdout
    assert not (tmp_path / "out" / "overflow").exists()  # skipped before it wrote anything


def test_mindspore_demo_counts_the_parts_it_skipped(tmp_path):
    """`msprobe -f mindspore demo` counts the parts it skipped apart from those that ran."""
    try:
        import mindspore  # noqa: F401
    except ImportError:
        unavailable("mindspore is not installed")
    done = msprobe("-f", "mindspore", "demo", "-o", "out", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = parts_said(done.stdout)
    assert said["dump"] == said["overflow"] == ["skipped: framework mindspore"], said
    assert said["dump_mindspore"][-1].startswith("done in "), said
    assert done.stdout.splitlines()[-1].startswith(
        "summary: 3/6 parts ran, 3 skipped (dump, overflow, op_generate); outputs in "), done.stdout
