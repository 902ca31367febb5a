"""Every command tools/config_check/README.md shows is run here, in the order shown."""
from __future__ import annotations

import json
import zipfile

import pytest

from cc_helpers import HERE, clean_env, summary
from tests.support.readme import code_blocks, run_shown, shell_commands

README = HERE.parents[1] / "tools" / "config_check" / "README.md"


@pytest.mark.slow
def test_readme_commands(tmp_path):
    (tmp_path / "train.sh").write_text("torchrun --nproc_per_node 2 train.py --lr 0.1 --bf16 --train-iters 3\n")
    (tmp_path / "config.yaml").write_text("training:\n  lr: 0.1\n  seed: 1234\n")
    (python_block,) = code_blocks(README.read_text(encoding="utf-8"), "python")
    (tmp_path / "train.py").write_text(python_block)
    commands = shell_commands(README)
    assert len(commands) == 7
    for command in commands:
        done = run_shown(command, tmp_path, env=clean_env(HF_TOKEN="hf-readme-secret"), timeout=600)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    out = tmp_path / "msprobe_out"  # every output in the one folder .gitignore names
    masks = [json.loads(zipfile.ZipFile(out / name).read("env"))["HF_TOKEN"]
             for name in ("keyed_a.zip", "keyed_b.zip", "bench_pack.zip")]
    assert masks[0] == masks[1] != masks[2] and "hf-readme-secret" not in "".join(masks)
    assert summary(out / "config_check_result")["weights"] == "error"  # collected on one side only
    assert set(summary(out / "ci_result").values()) == {"pass", "none"}
    assert (tmp_path / "msprobe_demo" / "config_check" / "config_check_result" / "result.xlsx").is_file()
    demo = summary(tmp_path / "msprobe_demo" / "config_check" / "config_check_result")
    assert demo["env"] == demo["hyperparameters"] == "error" and demo["pip"] == "pass"
