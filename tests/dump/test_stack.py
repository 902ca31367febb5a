"""stack.capture: the frames of the caller, remembered per running frame and instruction."""
from __future__ import annotations

from msprobe.dump import stack


def _api_call():
    return stack.capture()


def _from_a():
    return _api_call()


def _from_b():
    return _api_call()


def test_a_loop_shares_one_stack_and_other_callers_get_theirs():
    in_loop = [_api_call() for _ in range(3)]
    assert in_loop[0] is in_loop[1] is in_loop[2]
    a, b = _from_a(), _from_b()
    assert a != b and "_from_a" in a[1] and "_from_b" in b[1]
    assert a[0].startswith("File ") and "_api_call" in a[0]
    stack.forget()
    assert _from_a()[:2] == a[:2]  # recomputed after forget(), same text


def _generator():
    while True:
        yield stack.capture()  # the generator's own frame is the innermost one kept


def _other_caller(gen):
    return next(gen)


def test_a_resumed_generator_gets_its_new_caller():
    gen = _generator()
    first = next(gen)
    second = _other_caller(gen)  # same generator frame and instruction, another caller
    assert any("_other_caller" in line for line in second)
    assert not any("_other_caller" in line for line in first)
