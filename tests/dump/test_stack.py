"""stack.capture: the frames of the caller, remembered per running frame and instruction."""
from __future__ import annotations

import pytest

from msprobe.dump import stack


@pytest.fixture(autouse=True)
def walker():
    stack.forget()
    yield
    stack.forget()


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


def _deep(depth, then):
    return then() if depth == 0 else _deep(depth - 1, then)


def test_deep_stacks_keep_the_innermost_frames_up_to_the_limit():
    frames = _deep(80, lambda: stack.capture(limit=64))
    assert len(frames) == 64 and "<lambda>" in frames[0] and all("_deep" in line for line in frames[1:])
    assert len(_deep(3, lambda: stack.capture(limit=2))) == 2


def test_the_package_own_frames_are_left_out():
    """The engine calls capture() from its hooks: the stack starts at the user's code."""
    from msprobe.dump import engine

    frames = engine.stack.capture()
    assert not any("msprobe/dump" in line or "msprobe/pytorch" in line for line in frames)
    assert "test_the_package_own_frames_are_left_out" in frames[0]


def _loop_with(captures):
    out = []
    for capture in captures:
        out.append(capture())  # one call instruction for all of them
    return out


def test_the_caches_stay_bounded_and_right_when_code_keeps_coming(monkeypatch):
    """Generated code (a new code object per step, as exec'd or compiled code makes) never grows the caches
    much past LIMIT, and a stack captured after they were cleared still names its own frames."""
    monkeypatch.setattr(stack, "LIMIT", 8)
    seen = []
    for step in range(40):
        scope = {"capture": stack.capture}
        exec(compile(f"def generated_{step}():\n    return capture()\n", f"<generated {step}>", "exec"), scope)
        frames = scope[f"generated_{step}"]()
        assert f"in generated_{step}," in frames[0] and f"<generated {step}>" in frames[0]
        seen.append(frames)
        # checked before each new stack: at most LIMIT, plus the code objects of the one stack just added
        assert len(stack._STACKS) <= 8 and len(stack._CODES) <= 8 + len(frames)
    assert len({id(frames) for frames in seen}) == len(seen)  # never another stack's list
