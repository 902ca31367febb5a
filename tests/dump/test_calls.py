"""``Call`` in C (``_calltype.c``) against the Python class it stands in for."""
from __future__ import annotations

import gc
import weakref

import pytest

from msprobe.dump import native
from msprobe.dump.calls import Call, PythonCall

kernel = native.helpers()
pytestmark = pytest.mark.skipif(kernel is None, reason="no C compiler or Python headers here")

SLOTS = PythonCall.__slots__


def test_the_c_call_is_the_one_used_and_starts_as_the_python_one():
    assert Call is kernel.Call and Call.__module__ == "msprobe.dump.calls"
    parent = Call("p.forward", "p.backward", True, True, None, 0)
    made = [kind("Module.fc.Linear.forward.0", "Module.fc.Linear.backward.0", True, False, parent, 7)
            for kind in (Call, PythonCall)]
    for name in SLOTS:
        assert getattr(made[0], name) == getattr(made[1], name), name
    assert made[0].parent is parent and made[0].tensors is not made[0].grad_in  # lists of its own


def test_the_c_call_takes_any_value_and_says_what_it_needs():
    call = Call("f", "b", True, True, None, 0)
    call.expect_in, call.inputs, call.grad_in = 3, {"input_args": []}, [None, None]
    assert (call.expect_in, call.inputs, call.grad_in) == (3, {"input_args": []}, [None, None])
    with pytest.raises(AttributeError):
        call.unknown = 1  # as __slots__ refuse it
    del call.inputs
    with pytest.raises(AttributeError):
        call.inputs
    with pytest.raises(TypeError, match="Call\\(forward, backward"):
        Call("f", "b")
    with pytest.raises(TypeError):
        Call("f", "b", True, True, None, generation=0)


class Held:
    pass


def test_a_cycle_of_c_calls_is_collected():
    call = Call("f", "b", True, True, None, 0)
    call.parent = call
    call.tensors.append(Held())
    gone = weakref.ref(call.tensors[0])
    del call
    gc.collect()
    assert gone() is None
