"""MindSpore-native dump on mindspore 2.x PyNative CPU: names, statistics vs numpy, backward vs ms.grad."""
from __future__ import annotations

import json
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from mindspore import mint, nn, ops

from msprobe.mindspore import PrecisionDebugger
from msprobe.schema import MsprobeError, SchemaError
from msprobe.schema.index import INDEX_NAME, have_pyarrow

from ms_dump_checks import check_dump_against_npy, entries, finish, grad_array, inspect_ok, names

INDEXED = [INDEX_NAME] if have_pyarrow() else []  # the dump's index, where its extra is installed


class Net(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Dense(8, 4)
        self.fc2 = nn.Dense(4, 2)

    def construct(self, x):
        h = mint.nn.functional.relu(self.fc1(x))
        return ops.tanh(self.fc2(h)).sum()


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    return ms.Tensor(rng.standard_normal((3, 8)).astype(np.float32))


def _run(dump_path: Path, level: str, task: str = "tensor", steps: int = 1, model=True, config=None):
    net = Net()
    debugger = PrecisionDebugger(config_path=config, dump_path=str(dump_path), level=level, task=task)
    grad_fn = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())
    results = []
    for step in range(steps):
        debugger.start(model=net if model else None)
        results.append(grad_fn(_data(step)))
        debugger.stop()
        debugger.step()
    finish(debugger)
    return net, results


def test_api_backward_lines_up_with_arguments_and_ms_grad(tmp_path):
    rng = np.random.default_rng(1)
    x = ms.Tensor(rng.standard_normal((2, 3, 4)).astype(np.float32))
    w = ms.Tensor(rng.standard_normal((5, 4)).astype(np.float32))
    b = ms.Tensor(rng.standard_normal((5,)).astype(np.float32))

    def f(x, w, b):
        y = mint.nn.functional.linear(x, w, b)
        return ops.tanh(mint.matmul(y, y.swapaxes(-1, -2)) + y.sum() * 0.5).mean()

    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="L1", task="tensor")
    debugger.start()
    gx, gw, gb = ms.grad(f, grad_position=(0, 1, 2))(x, w, b)
    debugger.stop()
    debugger.step()
    finish(debugger)
    data = entries(tmp_path)
    linear = data["MintFunctional.linear.0.backward"]
    assert [r["shape"] for r in linear["output"]] == [[2, 3, 4], [5, 4], [5]]
    for index, want in enumerate((gx, gw, gb)):
        np.testing.assert_allclose(grad_array(tmp_path, linear, "output", index), want.asnumpy(), rtol=1e-5, atol=1e-7)
    forward = data["MintFunctional.linear.0.forward"]
    assert [a["shape"] for a in forward["input_args"]] == [[2, 3, 4], [5, 4], [5]]
    assert data["Mint.matmul.0.backward"]["input"][0]["shape"] == [2, 3, 3]
    assert check_dump_against_npy(tmp_path) > 10
    assert data["Mint.matmul.0.forward"]["input_args"][0]["dtype"] == "Float32"
    assert data["Tensor.__mul__.0.forward"]["input_args"][1] == {"type": "float", "value": 0.5}
    assert "Tensor.__add__.0.backward" in data
    inspect_ok(tmp_path)


def test_mix_level_cells_parameters_and_construct(tmp_path):
    net, results = _run(tmp_path, "mix", steps=2)
    data = entries(tmp_path)
    for name in ("Cell.fc1.Dense.forward.0", "Cell.fc1.Dense.backward.0", "Cell.fc2.Dense.parameters_grad",
                 "MintFunctional.relu.0.forward", "MintFunctional.relu.0.backward", "Functional.tanh.0.forward",
                 "Primitive.MatMul.0.forward", "Primitive.MatMul.0.backward"):
        assert name in data, name
    assert set(data["Cell.fc1.Dense.forward.0"]["parameters"]) == {"weight", "bias"}
    construct = json.loads((tmp_path / "step0" / "rank" / "construct.json").read_text())
    assert construct["Cell.fc1.Dense.forward.0"] is None
    assert construct["Primitive.MatMul.0.forward"] == "Cell.fc1.Dense.forward.0"
    assert construct["Primitive.MatMul.0.backward"] == "Cell.fc1.Dense.backward.0"
    # the root model is not recorded
    assert not any(n.startswith("Cell.Net") for n in data)
    assert (tmp_path / "step1" / "rank" / "dump.json").is_file()
    assert check_dump_against_npy(tmp_path) > 40
    inspect_ok(tmp_path)


def test_parameter_gradients_equal_value_and_grad(tmp_path):
    net, results = _run(tmp_path, "L0")
    _, (_, weight_grads) = results[0]
    by_name = dict(zip([p.name for p in net.trainable_params()], weight_grads))
    data = entries(tmp_path)
    assert not any(n.startswith(("Primitive.", "Functional.", "Mint")) for n in data)
    grad_entry = data["Cell.fc1.Dense.parameters_grad"]
    got = grad_array(tmp_path, grad_entry, "weight", 0)
    want = [g for n, g in by_name.items() if n.endswith("fc1.weight")][0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    cell_back = data["Cell.fc1.Dense.backward.0"]
    assert cell_back["output"][0]["shape"] == [3, 8]
    np.testing.assert_allclose(grad_array(tmp_path, cell_back, "output", 0), results[0][1][0].asnumpy(), rtol=1e-5)


def test_l1_without_model_records_no_primitives(tmp_path):
    _run(tmp_path, "L1", task="statistics", model=False)
    recorded = names(tmp_path)
    assert "MintFunctional.relu.0.forward" in recorded and "Functional.tanh.0.backward" in recorded
    assert not any(n.startswith(("Primitive.", "Cell.")) for n in recorded)
    _run(tmp_path / "with_model", "L1", task="statistics", model=True)
    assert any(n.startswith("Primitive.") for n in names(tmp_path / "with_model"))


def test_statistics_bf16_int_bool_empty_and_md5(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "tensor", "dump_path": str(tmp_path / "d"), "level": "L1",
                                  "tensor": {"summary_mode": "md5"}}))
    big = ms.Tensor(np.full((1000, 1000), 1000.0, np.float32)).astype(ms.bfloat16)
    ints = ms.Tensor(np.arange(12, dtype=np.int64).reshape(3, 4) * 1000003)
    flags = ms.Tensor(np.array([True, False, True]))
    empty = ms.Tensor(np.zeros((0, 3), np.float32))
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start()
    ops.cast(big, ms.float32)
    ops.neg(ints)
    ops.logical_not(flags)
    ops.abs(empty)
    debugger.stop()
    debugger.step()
    finish(debugger)
    data = entries(tmp_path / "d")
    record = data["Functional.cast.0.forward"]["input_args"][0]
    assert record["dtype"] == "BFloat16" and record["Norm"] == pytest.approx(1e6, rel=1e-6)
    assert data["Functional.neg.0.forward"]["input_args"][0]["dtype"] == "Int64"
    assert data["Functional.logical_not.0.forward"]["output"][0]["Max"] is True
    assert data["Functional.abs.0.forward"]["output"][0]["Max"] is None
    assert check_dump_against_npy(tmp_path / "d") == 8


def test_user_api_list_replaces_the_shipped_one(tmp_path):
    api_list = tmp_path / "my_ops.yaml"
    api_list.write_text("mint.nn.functional:\n  - relu\n")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "level": "L1", "api_list": str(api_list)}))
    _run(tmp_path / "d", "L1", task="statistics", model=False, config=str(config))
    assert names(tmp_path / "d") == ["MintFunctional.relu.0.forward", "MintFunctional.relu.0.backward"]
    api_list.write_text("functional:\n  - relu\n")
    with pytest.raises(SchemaError, match="functional"):
        _run(tmp_path / "e", "L1", task="statistics", model=False, config=str(config))


def test_wrapping_is_undone_after_stop(tmp_path):
    original = ops.tanh, mint.matmul, ms.Tensor.sum
    _run(tmp_path, "L1", task="statistics")
    assert (ops.tanh, mint.matmul, ms.Tensor.sum) == original


def test_levels_needing_a_model_say_so(tmp_path):
    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="L0")
    with pytest.raises(MsprobeError, match="model"):
        debugger.start()


@ms.jit
def _jit_block(x, w):
    return ops.tanh(ops.matmul(x, w))


def test_jit_function_is_one_entry_with_backward(tmp_path):
    rng = np.random.default_rng(2)
    x = ms.Tensor(rng.standard_normal((3, 4)).astype(np.float32))
    w = ms.Tensor(rng.standard_normal((4, 5)).astype(np.float32))
    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="L1", task="tensor")
    debugger.start()
    gx, gw = ms.grad(lambda x, w: ops.relu(_jit_block(x, w)).sum(), grad_position=(0, 1))(x, w)
    debugger.stop()
    debugger.step()
    finish(debugger)
    data = entries(tmp_path)
    assert "Functional.matmul.0.forward" not in data  # inside the compiled graph
    backward = data["Jit._jit_block.0.backward"]
    np.testing.assert_allclose(grad_array(tmp_path, backward, "output", 0), gx.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(grad_array(tmp_path, backward, "output", 1), gw.asnumpy(), rtol=1e-5)
    check_dump_against_npy(tmp_path)


def test_save_records_variable_and_its_gradient(tmp_path):
    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="L1", task="tensor")

    def f(x):
        y = ops.tanh(x)
        debugger.save(y, "act")
        return (y * 2).sum()

    debugger.start()
    ms.grad(f)(ms.Tensor(np.array([0.5, -1.0, 2.0], np.float32)))
    debugger.stop()
    debugger.step()
    finish(debugger)
    data = entries(tmp_path)
    assert data["Debug.act.0.forward"]["data"]["Max"] == pytest.approx(np.tanh(2.0), rel=1e-6)
    assert data["Debug.act.0.backward"]["data"]["Mean"] == 2
    with pytest.raises(MsprobeError, match="variable"):
        debugger.save(object(), "bad")


CRASH = r"""
import os, signal, sys
import mindspore as ms, numpy as np
from mindspore import ops
from msprobe.mindspore import PrecisionDebugger
debugger = PrecisionDebugger(dump_path=sys.argv[1], level="L1", task="statistics")
debugger.start()
x = ms.Tensor(np.ones((2, 3), np.float32))
for _ in range(5):
    x = ops.tanh(x)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_killed_run_keeps_recorded_entries(tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", CRASH, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == -9
    assert sorted(names(tmp_path)) == [f"Functional.tanh.{i}.forward" for i in range(5)]
    inspect_ok(tmp_path)  # reads the journal of the killed run


def test_list_and_data_mode_filters(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "level": "mix",
                                  "statistics": {"list": ["relu", "fc2"], "data_mode": ["forward"]}}))
    _run(tmp_path / "d", "mix", task="statistics", config=str(config))
    recorded = names(tmp_path / "d")
    assert "MintFunctional.relu.0.forward" in recorded and "Cell.fc2.Dense.forward.0" in recorded
    assert all(("relu" in n or "fc2" in n) and n.endswith((".forward", ".forward.0")) for n in recorded), recorded


def test_forward_data_only_hooks_no_parameter(tmp_path):
    """data_mode ["forward"]: no parameters_grad entry is wanted, so no parameter gradient hook is made."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "level": "L0", "statistics": {"data_mode": ["forward"]}}))
    net = Net()
    debugger = PrecisionDebugger(config_path=str(config), dump_path=str(tmp_path / "d"))
    grad_fn = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())
    debugger.start(model=net)
    grad_fn(_data())
    debugger.stop()
    debugger.step()
    finish(debugger)
    assert debugger.adapter._param_grads is None
    assert names(tmp_path / "d") == ["Cell.fc1.Dense.forward.0", "Cell.fc2.Dense.forward.0"]


class InPlace(nn.Cell):
    def construct(self, x):
        x[0] = 5.0  # changes the cell's own input
        return x * 2


class Outer(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.inner = InPlace()

    def construct(self, x):
        return self.inner(x)


def test_inputs_changed_in_place_keep_their_values_before_the_call(tmp_path):
    net = Outer()
    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="mix", task="statistics")
    debugger.start(model=net)
    net(ms.Tensor(np.ones((2, 2), np.float32)))
    debugger.stop()
    debugger.step()
    finish(debugger)
    data = entries(tmp_path)
    assert data["Tensor.__setitem__.0.forward"]["input_args"][0]["Max"] == 1
    assert data["Tensor.__mul__.0.forward"]["input_args"][0]["Max"] == 5
    assert data["Cell.inner.InPlace.forward.0"]["input_args"][0]["Max"] == 1
    assert data["Cell.inner.InPlace.forward.0"]["output"][0]["Max"] == 10


def test_files_are_on_disk_when_step_returns(tmp_path):
    """``async_dump: false`` (the default): dump.json and its two companions exist when ``step()`` returns."""
    net = Net()
    debugger = PrecisionDebugger(dump_path=str(tmp_path / "dump"), level="mix", task="statistics")
    grad_fn = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())
    debugger.start(model=net)
    grad_fn(_data())
    debugger.stop()
    debugger.step()
    rank = tmp_path / "dump" / "step0" / "rank"
    assert {"construct.json", "dump.json", "stack.json"} <= {p.name for p in rank.iterdir()}
    assert json.loads((rank / "dump.json").read_text())["data"]
    debugger.flush()  # the index is the writer thread's, written after dump.json
    assert sorted(p.name for p in rank.iterdir()) == sorted(["construct.json", "dump.json", "stack.json"] + INDEXED)
