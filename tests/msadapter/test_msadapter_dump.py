"""PyTorch-style code on MindSpore through MSAdapter 0.1.0 + MindSpore 2.0.0 (Python 3.9 rootfs, chroot):
doc 29's example and scenarios run there; every file is checked here on the host."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support import msadapter_env as mae

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mindspore"))
from ms_dump_checks import check_dump_against_npy, entries, grad_array, inspect_ok, names  # noqa: E402

pytestmark = pytest.mark.msadapter
SCRIPTS = Path(__file__).resolve().parent / "scripts"


@pytest.fixture(scope="module")
def py39():
    mae.require_rootfs()
    mae.ensure_rootfs()
    env = {"PYTHONPATH": mae.repo_pythonpath(["shared", "tools/dump"])}

    def run(args, cwd):
        done = mae.run_py39([str(a) for a in args], cwd=cwd, env=env, timeout=600)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        return done.stdout
    return run


def test_doc_example_runs_and_writes_the_documented_tree(py39, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"task": "tensor", "dump_path": "./dump_path",
                                                      "level": "mix"}))
    py39([SCRIPTS / "doc_example.py"], tmp_path)
    dump = tmp_path / "dump_path"
    for step in range(3):
        rank = dump / f"step{step}" / "rank"
        # (the statistics index beside dump.json, where the py39 venv has pyarrow, is checked in tests/dump)
        assert sorted(p.name for p in rank.iterdir() if p.name != "dump.index.parquet") == [
            "construct.json", "dump.json", "dump_tensor_data",
                                                          "stack.json"]
    doc = json.loads((dump / "step0" / "rank" / "dump.json").read_text())
    assert doc["framework"] == "mindtorch"
    data = doc["data"]
    for name in ("Module.linear1.Linear.forward.0", "Module.linear1.Linear.backward.0",
                 "Functional.linear.0.forward", "Functional.linear.0.backward", "Functional.relu.0.forward",
                 "Functional.relu.0.backward"):
        assert name in data, name
    record = data["Module.linear1.Linear.forward.0"]["input_args"][0]
    assert record["type"] == "mindspore.Tensor" and record["dtype"] == "Float32"
    files = set(p.name for p in (dump / "step0" / "rank" / "dump_tensor_data").iterdir())
    assert "Module.linear1.Linear.forward.0.parameters.weight.npy" in files
    assert "Functional.linear.0.backward.output.0.npy" in files
    assert check_dump_against_npy(dump) == 84
    inspect_ok(dump)


def test_mix_backward_equals_value_and_grad(py39, tmp_path):
    dump = tmp_path / "d"
    py39([SCRIPTS / "scenarios.py", "mix", dump], tmp_path)
    expected = np.load(dump / "expected.npz")
    for step in range(2):
        data = entries(dump, step)
        assert "Torch.matmul.0.forward" in data and "Tensor.permute.1.backward" in data
        assert "Primitive.Mul.0.forward" in data
        assert "Tensor.__add__.0.backward" in data and "Tensor.__mul__.0.forward" in data
        first = data["Module.linear1.Linear.backward.0"]
        np.testing.assert_allclose(grad_array(dump, first, "output", 0, step), expected[f"grad{step}"], rtol=1e-5)
        linear = data["Functional.linear.0.backward"]
        np.testing.assert_allclose(grad_array(dump, linear, "output", 0, step), expected[f"grad{step}"], rtol=1e-5)
    assert check_dump_against_npy(dump) > 80
    inspect_ok(dump)


def test_parameter_gradients_from_value_and_grad_weights(py39, tmp_path):
    """MindSpore 2.0 cannot hook Parameters: the weight gradients value_and_grad returns are the entries."""
    dump = tmp_path / "d"
    py39([SCRIPTS / "scenarios.py", "weights", dump], tmp_path)
    expected = np.load(dump / "expected.npz")
    for step in range(2):
        data = entries(dump, step)
        for module in ("linear1", "linear2"):
            grads = data[f"Module.{module}.Linear.parameters_grad"]
            assert set(grads) == {"weight", "bias"}
            for name in ("weight", "bias"):
                [record] = grads[name] if isinstance(grads[name], list) else [grads[name]]
                saved = np.load(dump / f"step{step}" / "rank" / "dump_tensor_data" / record["data_name"])
                np.testing.assert_allclose(saved, expected[f"{module}.{name}.{step}"], rtol=1e-6)
    assert check_dump_against_npy(dump) > 20
    inspect_ok(dump)


def test_l1_primitives_only_with_model(py39, tmp_path):
    py39([SCRIPTS / "scenarios.py", "l1_no_model", tmp_path / "a"], tmp_path)
    py39([SCRIPTS / "scenarios.py", "l1_model", tmp_path / "b"], tmp_path)
    without, with_model = names(tmp_path / "a"), names(tmp_path / "b")
    assert "Functional.relu.0.forward" in without and not any(n.startswith("Primitive.") for n in without)
    assert "Primitive.Mul.0.forward" in with_model and "Primitive.Mul.0.backward" in with_model
    assert not any(n.startswith("Module.") for n in without + with_model)


def test_user_api_list(py39, tmp_path):
    (tmp_path / "run").mkdir()
    py39([SCRIPTS / "scenarios.py", "api_list", tmp_path / "run" / "d"], tmp_path)
    assert sorted(names(tmp_path / "run" / "d")) == sorted([
        "Functional.relu.0.forward", "Functional.relu.0.backward", "Tensor.permute.0.forward",
        "Tensor.permute.0.backward", "Tensor.permute.1.forward", "Tensor.permute.1.backward"])


def test_jit_function_on_mindspore_2_0(py39, tmp_path):
    dump = tmp_path / "d"
    py39([SCRIPTS / "scenarios.py", "jit", dump], tmp_path)
    expected = np.load(dump / "expected.npz")
    data = entries(dump)
    assert "Jit.block.0.forward" in data and "Functional.relu.0.backward" in data
    backward = data["Jit.block.0.backward"]
    np.testing.assert_allclose(grad_array(dump, backward, "output", 0), expected["gx"], rtol=1e-5)
    np.testing.assert_allclose(grad_array(dump, backward, "output", 1), expected["gw"], rtol=1e-5)
    check_dump_against_npy(dump)


def test_seed_all_on_mindspore_2_0(py39, tmp_path):
    out = py39([SCRIPTS / "scenarios.py", "seed", tmp_path / "x"], tmp_path)
    result = json.loads([l for l in out.splitlines() if l.startswith("RESULT")][0][len("RESULT"):])
    assert result == {"numpy": pytest.approx(np.random.RandomState(42).rand()), "ops.Dropout": True,
                      "torch.nn.Dropout": True, "F.dropout": True}


def test_readme_api_list_check_command(py39):
    repo = Path(__file__).resolve().parents[2]
    text = (repo / "tools" / "dump" / "README.md").read_text(encoding="utf-8")
    line = [l for l in text.splitlines() if l.startswith("python3.9 tools/dump/scripts/gen_mindspore_api_list.py")][0]
    out = py39(line.split()[1:], repo)
    assert "up to date" in out
