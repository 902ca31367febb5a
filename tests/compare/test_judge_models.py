"""compare names where a divergence enters on a tiny HuggingFace Llama (from a config, random weights): a planted
bf16 autocast (origin) and a planted weight change (parameter) at L0, L1 and mix; ours against msprobe 26.2.0's
dump of the same run: no divergence."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compare.compare_helpers import SCRIPTS, msprobe, read_csv

DUMP_LLAMA = SCRIPTS / "dump_llama.py"
LEVELS = ("L0", "L1", "mix")
PARAMETER = "model.layers.1.mlp.down_proj.weight"
# where each plant enters, per level: (entry, kind)
EXPECTED = {
    ("bf16", "L0"): ("Module.model.layers.1.mlp.gate_proj.Linear.forward.0", "origin"),
    ("bf16", "L1"): ("Functional.linear.11.forward", "origin"),
    ("bf16", "mix"): ("Functional.linear.11.forward", "origin"),
    ("weight", "L0"): ("Module.model.layers.1.mlp.down_proj.Linear.forward.0", "parameter"),
    ("weight", "L1"): ("Functional.linear.13.forward", "parameter"),
    ("weight", "mix"): ("Functional.linear.13.forward", "parameter"),
}


def _env(out: Path, level: str, plants: str) -> dict:
    return {"MSPROBE_OUT": str(out), "DUMP_LEVEL": level, "PLANTS": plants, "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def llama_dumps(tmp_path_factory):
    """Per level one dump of four steps: step0 the reference, step1 the weight change, step2 bf16 autocast,
    step3 other initial weights."""
    root = tmp_path_factory.mktemp("llama")
    out = {}
    for level in LEVELS:
        out[level] = root / level
        done = subprocess.run([sys.executable, str(DUMP_LLAMA)], env=dict(os.environ, **_env(out[level], level,
                              "none,weight,bf16,seed")), cwd=str(root), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    return out


def _compare(target: Path, golden: Path, out: Path):
    done = msprobe("compare", "-tp", target, "-gp", golden, "-o", out, "--no-xlsx")
    summary = json.loads((out / "compare_summary.json").read_text())
    return done, summary


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("plant, step", [("weight", 1), ("bf16", 2)])
def test_planted_change_is_named_where_it_enters(llama_dumps, tmp_path, level, plant, step):
    dump = llama_dumps[level]
    done, summary = _compare(dump / f"step{step}", dump / "step0", tmp_path / "out")
    assert done.returncode == 1, done.stdout + done.stderr
    found = summary["first_divergence"]
    assert (found["entry"], found["kind"]) == EXPECTED[(plant, level)]
    assert summary["result"] == "diverged" and summary["diverged_ranks"] == [found["where"]]
    assert f"first divergence at {found['entry']}" in done.stdout
    if plant == "weight":
        # L1 knows no parameter names: the weight is the linear's second input
        name = "Functional.linear.13.forward.input.1" if level == "L1" else PARAMETER
        assert found["parameter"] == name and f"parameter {name} differs" in done.stdout
    else:
        assert found["input_error"] == 0.0 and found["output_error"] > 1e-3
        assert any("autocast_forward" in frame for frame in found["stack"])
    if level == "mix":
        assert found["module_chain"][1] == "Module.model.layers.1.mlp.LlamaMLP.forward.0"
    rows = read_csv(Path(summary["ranks"][0]["files"]["csv"]))
    first_bad = next(r["NPU Name"] for r in rows if r["Result"] not in ("pass", "N/A"))
    assert first_bad.startswith(found["entry"] + ".")  # nothing before it disagrees


@pytest.mark.parametrize("level", ["L1", "L0"])
def test_weights_differing_from_the_first_api_are_named_there_not_at_the_loss_backward(llama_dumps, tmp_path, level):
    dump = llama_dumps[level]
    done, summary = _compare(dump / "step3", dump / "step0", tmp_path / "a")
    found = summary["first_divergence"]
    assert done.returncode == 1 and (found["kind"], found["direction"]) == ("parameter", "forward"), found
    assert found["entry"] == ("Functional.embedding.0.forward" if level == "L1"
                              else "Module.model.embed_tokens.Embedding.forward.0")
    assert found["execution_index"] == 0
    assert "cross_entropy" not in done.stdout


def test_identical_steps_agree_and_the_verdict_is_consistent(llama_dumps, tmp_path):
    dump = llama_dumps["L0"]
    done, summary = _compare(dump / "step0", dump / "step0", tmp_path / "same")
    assert done.returncode == 0 and "No divergence" in done.stdout
    assert summary["result"] == "pass" and summary["first_divergence"] is None and summary["diverged_ranks"] == []


@pytest.fixture(scope="module")
def upstream_llama_dumps(llama_dumps, tmp_path_factory):
    """msprobe 26.2.0's dumps of the reference run, one per level."""
    from tests.support.upstream_msprobe import make_upstream_dump

    root = tmp_path_factory.mktemp("llama_upstream")
    return {level: make_upstream_dump("26.2.0", DUMP_LLAMA, root / level, env=_env(root / level, level, "none"))
            for level in LEVELS}


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_ours_against_msprobe_262_of_the_same_run_agrees(llama_dumps, upstream_llama_dumps, tmp_path, level):
    done, summary = _compare(llama_dumps[level] / "step0", upstream_llama_dumps[level], tmp_path / "out")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "No divergence" in done.stdout and summary["result"] == "pass" and summary["first_divergence"] is None
    rank = summary["ranks"][0]
    assert rank["matched_entries"] == rank["entries"], rank["unmatched_target"][:10]
    # every row outside tolerance says why it is no divergence
    for row in read_csv(Path(rank["files"]["csv"])):
        if row["Result"] in ("warning", "error"):
            assert "record" in row["Err_message"] or "not recorded" in row["Err_message"], row
