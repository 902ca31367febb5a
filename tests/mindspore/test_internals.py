"""What the MindSpore adapter reads and writes of MindSpore beyond its documented API
(``msprobe.mindspore.internals``), on the MindSpore this runs with: tests/mindspore/test_oldest_mindspore.py
runs this file on MindSpore 2.0.0 (Python 3.9, the MSAdapter rootfs) too, so it keeps to what 2.0 has (no mint).
"""
from __future__ import annotations

import json

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn, ops

from msprobe.mindspore import PrecisionDebugger, internals

WARNING = "msprobe: warning: no "


@pytest.fixture(autouse=True)
def _pynative():  # (also where tests/mindspore/conftest.py is not loaded: the run on MindSpore 2.0)
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Warnings said once per process are said again in this test."""
    monkeypatch.setattr(internals, "_warned", set())


def _x(*shape):
    return ms.Tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


def test_building_grad_is_true_only_while_ms_grad_records():
    seen = []

    def f(x):
        seen.append(internals.building_grad())
        return (x * x).sum()

    f(_x(3))
    ms.grad(f)(_x(3))
    assert seen == [False, True]
    assert internals.building_grad() is False


def test_tensor_types_hold_what_pynative_ops_return():
    x = _x(2, 3)
    for value in (x, ops.relu(x), x + 1, ops.matmul(x, x.T)):
        assert isinstance(value, internals.tensor_types()), type(value)
    assert not isinstance(np.ones(2), internals.tensor_types())


def test_as_tensor_turns_what_hook_backward_hands_over_into_a_tensor():
    got = []

    def hook(grads):
        got.append(grads[0] if isinstance(grads, tuple) else grads)

    def f(x):
        return (ops.HookBackward(hook)(x) * 3.0).sum()

    ms.grad(f)(_x(4))
    grad = internals.as_tensor(got[0])
    np.testing.assert_array_equal(grad.asnumpy(), np.full(4, 3.0, np.float32))
    assert internals.as_tensor(7) == 7 and internals.as_tensor(None) is None


def test_own_parameters_are_a_cells_own_by_attribute_name():
    dense = nn.Dense(3, 2)
    net = nn.SequentialCell([dense, nn.ReLU()])
    assert sorted(internals.own_parameters(dense)) == ["bias", "weight"]
    assert internals.own_parameters(dense)["weight"] is dense.weight
    assert internals.own_parameters(net) == {}  # the children's are not its own
    assert sorted(internals.own_parameters(nn.Dense(3, 2, has_bias=False))) == ["weight"]


def test_jit_executor_runs_each_jit_call_and_knows_its_function_and_cell():
    class Scale(nn.Cell):
        @ms.jit
        def construct(self, x):
            return x * 2.0

    @ms.jit
    def double(x):
        return x + x

    cls = internals.jit_executor()
    assert isinstance(cls, type)
    calls = []
    original = vars(cls)["__call__"]

    def spy(executor, *args, **kwargs):
        fn, obj = internals.jit_target(executor)
        calls.append((fn.__name__, type(obj).__name__ if obj is not None else None))
        return original(executor, *args, **kwargs)

    assert internals.set_call(cls, spy) is original
    try:
        np.testing.assert_allclose(double(_x(3)).asnumpy(), 2 * _x(3).asnumpy())
        np.testing.assert_allclose(Scale()(_x(3)).asnumpy(), 2 * _x(3).asnumpy())
    finally:
        assert internals.set_call(cls, original) is spy
    assert calls == [("double", None), ("construct", "Scale")]
    double(_x(3))
    assert len(calls) == 2  # given back


def test_set_class_swaps_a_primitives_class_and_back():
    matmul = ops.MatMul()
    original = type(matmul)
    seen = []

    def __call__(self, *args):
        seen.append(len(args))
        return original.__call__(self, *args)

    recording = type(original.__name__, (original,), {"__call__": __call__})
    assert internals.set_class(matmul, recording) is True
    out = matmul(_x(2, 3), _x(3, 2))
    assert seen == [2] and list(out.shape) == [2, 2]
    assert internals.set_class(matmul, original) is True and type(matmul) is original


def test_rank_is_none_before_communication_and_the_device_is_the_cpu(capfd):
    assert internals.rank() is None
    assert internals.device_target() == "CPU"
    assert WARNING not in capfd.readouterr().err


def _grad_dump(tmp_path, jit=False):
    net = nn.Dense(4, 3)

    @ms.jit
    def scale(x):
        return x * 2.0

    def f(x):
        y = net(ops.relu(x))
        return (scale(y) if jit else y).sum()

    debugger = PrecisionDebugger(dump_path=str(tmp_path), level="L1", task="statistics")
    debugger.start()
    grads = ms.grad(f)(_x(2, 4))
    debugger.stop()
    debugger.step()
    debugger.engine.close()
    data = json.loads((tmp_path / "step0" / "rank" / "dump.json").read_text())["data"]
    return data, grads


def _warnings(err, word):
    return [line for line in err.splitlines() if line.startswith(WARNING) and word in line]


def test_without_the_grad_flag_one_line_says_so_and_forward_data_is_dumped(tmp_path, monkeypatch, capfd,
                                                                           fresh_warnings):
    monkeypatch.setattr(internals, "_GRAD_FLAG", None)
    data, grads = _grad_dump(tmp_path)
    err = capfd.readouterr().err
    assert _warnings(err, "grad_flag") == [
        f"{WARNING}_pynative_executor.grad_flag (mindspore.graph.api) in MindSpore {ms.__version__}: backward "
        "data (backward entries, parameters_grad) is not dumped, forward data is"]
    assert "Traceback" not in err and "dump stopped" not in err
    assert "Functional.relu.0.forward" in data and not [name for name in data if ".backward" in name]
    assert grads.shape == (2, 4)  # the training's own gradients are untouched


def test_without_the_jit_executor_one_line_says_so_and_other_calls_are_dumped(tmp_path, monkeypatch, capfd,
                                                                              fresh_warnings):
    monkeypatch.setattr(internals, "_JIT_EXECUTORS", (("mindspore.no_such_module", "_JitExecutor"),))
    monkeypatch.setattr(internals, "_jit", {})
    data, _ = _grad_dump(tmp_path, jit=True)
    err = capfd.readouterr().err
    assert len(_warnings(err, "jit executor class")) == 1, err
    assert "calls of @ms.jit functions and Cells are not dumped" in err
    assert not [name for name in data if name.startswith("Jit.")]
    assert "Functional.relu.0.forward" in data and "Functional.relu.0.backward" in data


def test_with_the_jit_executor_jit_calls_are_dumped(tmp_path, capfd):
    data, _ = _grad_dump(tmp_path, jit=True)
    assert "Jit.scale.0.forward" in data
    assert not _warnings(capfd.readouterr().err, "jit")


def test_without_global_comm_inited_the_rank_comes_from_get_rank(monkeypatch, capfd, fresh_warnings):
    from mindspore.communication import management

    try:
        expected = int(management.get_rank())  # recent MindSpore answers 0 before communication is set up
    except RuntimeError:  # 2.0 refuses
        expected = None
    # as a MindSpore whose GlobalComm has no INITED shows it (its own helpers keep theirs)
    kept = {key: value for key, value in vars(management.GlobalComm).items()
            if key != "INITED" and not key.startswith("__")}
    monkeypatch.setattr(management, "GlobalComm", type("GlobalComm", (), kept))
    assert internals.rank() == expected
    assert internals.rank() == expected
    lines = _warnings(capfd.readouterr().err, "GlobalComm.INITED")
    assert lines == [f"{WARNING}GlobalComm.INITED (mindspore.communication.management) in MindSpore "
                     f"{ms.__version__}: the rank folder is named after get_rank(), rank0 in a run without "
                     "communication"]


def test_a_primitive_whose_class_cannot_change_is_one_warning(monkeypatch, capfd, fresh_warnings):
    class Fixed:
        __slots__ = ()

    class Other:
        pass

    fixed = Fixed()
    assert internals.set_class(fixed, Other) is False and type(fixed) is Fixed
    assert internals.set_class(Fixed(), Other) is False
    assert len(_warnings(capfd.readouterr().err, "class swap for Fixed")) == 1
