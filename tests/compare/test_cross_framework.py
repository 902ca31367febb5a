"""torch 2.13 against MindSpore 2.10: the same network and weights, entries paired across frameworks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compare.compare_helpers import SCRIPTS, msprobe
from tests.support.cli import assert_one_line_error

SCRIPT = SCRIPTS / "dump_cross.py"


def _dump(framework: str, out: Path, **env: str) -> Path:
    done = subprocess.run([sys.executable, str(SCRIPT), framework, str(out)], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, OMP_NUM_THREADS="1", **env))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def cross_dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("cross")
    return {"torch": _dump("torch", root / "torch"), "mindspore": _dump("mindspore", root / "ms"),
            "mindspore_eps": _dump("mindspore", root / "ms_eps", MS_LN_EPS="1e-3")}


def _pairs(out: Path) -> dict:
    import csv

    csv_path = json.loads((out / "compare_summary.json").read_text())["ranks"][0]["files"]["csv"]
    with open(csv_path, newline="") as handle:
        return {r["NPU Name"]: r for r in csv.DictReader(handle)}


def test_torch_and_mindspore_are_paired_and_agree(cross_dumps, tmp_path):
    out = tmp_path / "out"
    done = msprobe("compare", "-tp", cross_dumps["torch"], "-gp", cross_dumps["mindspore"], "-o", out, "--no-xlsx")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _pairs(out)
    expected = {
        "Module.fc1.Linear.forward.0.output.0": "Cell.fc1.Dense.forward.0.output.0",
        "Functional.relu.0.forward.output.0": "MintFunctional.relu.0.forward.output.0",
        "Tensor.__add__.0.forward.output.0": "Tensor.__add__.0.forward.output.0",
        "Functional.layer_norm.0.forward.output.0": "Primitive.LayerNorm.0.forward.output.0",
        "Module.fc2.Linear.parameters_grad.weight": "Cell.fc2.Dense.parameters_grad.weight",
        "Functional.gelu.0.backward.output.0": "Functional.gelu.0.backward.output.0",
    }
    for ours, theirs in expected.items():
        assert rows[ours]["Bench Name"] == theirs
        assert rows[ours]["Result"] == "pass", rows[ours]
    assert (rows["Functional.gelu.0.forward.output.0"]["NPU Dtype"],
            rows["Functional.gelu.0.forward.output.0"]["Bench Dtype"]) == ("torch.float32", "Float32")
    summary = json.loads((out / "compare_summary.json").read_text())["ranks"][0]
    assert "Functional.linear.0.forward" in summary["unmatched_target"]
    assert "Primitive.MatMul.0.forward" in summary["unmatched_golden"]
    assert summary["matched_entries"] >= 20


def test_a_different_layernorm_epsilon_is_found_across_frameworks(cross_dumps, tmp_path):
    out = tmp_path / "out"
    done = msprobe("compare", "-tp", cross_dumps["torch"], "-gp", cross_dumps["mindspore_eps"], "-o", out,
                   "--json", "--no-xlsx")
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)["first_divergence"]
    assert (found["entry"], found["golden_entry"]) == ("Functional.layer_norm.0.forward", "Primitive.LayerNorm.0.forward")
    assert found["module_chain"] == ["Module.norm.LayerNorm.forward.0"]


def _compare_with_mapping(cross_dumps, out: Path, mapping: Path) -> subprocess.CompletedProcess:
    return msprobe("compare", "-tp", cross_dumps["torch"], "-gp", cross_dumps["mindspore"], "-o", out, "--no-xlsx",
                   "--mapping", mapping)


def test_msprobe_layer_mapping_file_is_accepted(cross_dumps, tmp_path, peer_fixtures):
    layer_mapping = peer_fixtures / "test/msprobe_test/resources/layer_mapping/layer_mapping.yaml"
    done = _compare_with_mapping(cross_dumps, tmp_path / "o", layer_mapping)
    assert done.returncode == 0, done.stderr


def test_msprobe_shipped_api_mapping_is_accepted_and_bad_ones_refused(cross_dumps, tmp_path, upstream_package):
    api_mapping = upstream_package("26.2.0") / "core/compare/ms_to_pt_api.yaml"
    done = _compare_with_mapping(cross_dumps, tmp_path / "o", api_mapping)
    assert done.returncode == 0, done.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("api: [1, 2]\n")
    done = msprobe("compare", "-tp", cross_dumps["torch"], "-gp", cross_dumps["mindspore"], "-o", tmp_path / "b",
                   "--mapping", bad)
    assert_one_line_error(done, str(bad), "'api'")
