"""stack.capture: the frames of the caller, remembered per running frame and instruction; walked in C
when the helpers are built, in Python otherwise (every test runs both ways)."""
from __future__ import annotations

import pytest

from msprobe.dump import native, stack


@pytest.fixture(autouse=True, params=["C", "Python"])
def walker(request, monkeypatch):
    if request.param == "C" and native.helpers() is None:
        pytest.skip("no C compiler or Python headers here")
    if request.param == "Python":
        monkeypatch.setattr(native, "_loaded", None)
    stack.forget()
    yield request.param
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


def test_both_walks_give_the_same_lines(monkeypatch):
    def both():
        stack.forget()
        walked_in_c = stack.capture()
        stack.forget()
        with monkeypatch.context() as patch:
            patch.setattr(native, "_loaded", None)
            walked_in_python = stack.capture()
        return walked_in_c, walked_in_python

    # one call site for both walks: the same (code, instruction) pairs all the way up
    walked_in_c, walked_in_python = _deep(5, both)
    assert walked_in_c[1:] == walked_in_python[1:] and len(walked_in_c) == len(walked_in_python)


def test_the_package_own_frames_are_left_out():
    """The engine calls capture() from its hooks: the stack starts at the user's code."""
    from msprobe.dump import engine

    frames = engine.stack.capture()
    assert not any("msprobe/dump" in line or "msprobe/pytorch" in line for line in frames)
    assert "test_the_package_own_frames_are_left_out" in frames[0]


def _api_call_via(capture):
    return capture()


def _generator_via(capture):
    while True:
        yield capture()


def test_the_c_paths_capturer_gives_what_capture_gives(walker):
    """stack.capturer(): the C paths' capture, with remembered call sites answered in C."""
    capture = stack.capturer()
    if walker == "C":
        assert capture is not stack.capture
    in_loop = [_api_call_via(capture) for _ in range(3)]
    assert in_loop[0] is in_loop[1] is in_loop[2]  # remembered: the same list, found in C
    assert in_loop[0][0].startswith("File ") and "_api_call_via" in in_loop[0][0]
    via_c, via_python = _both(capture)
    assert via_c == via_python  # one line, the same callers
    a, b = _from_a_via(capture), _from_b_via(capture)
    assert a != b and "_from_a_via" in a[1] and "_from_b_via" in b[1]
    gen = _generator_via(capture)
    first = next(gen)
    second = _other_caller(gen)  # a generator frame is never remembered: its new caller is seen
    assert any("_other_caller" in line for line in second) and not any("_other_caller" in line for line in first)
    stack.forget()
    assert _from_a_via(capture)[:2] == a[:2]  # walked again after forget(), the same text


def _from_a_via(capture):
    return _api_call_via(capture)


def _from_b_via(capture):
    return _api_call_via(capture)


def _both(capture):
    return capture(), stack.capture()


def _loop_with(captures):
    out = []
    for capture in captures:
        out.append(capture())  # one call instruction for all of them
    return out


def test_remembered_call_sites_are_answered_in_c(walker):
    if walker != "C":
        pytest.skip("the C paths' capturer")
    import functools

    fallbacks = []

    def fallback():
        fallbacks.append(1)
        return ["walked"]

    in_c = functools.partial(native.helpers().recent_stack, stack._SKIP, stack._skipped, stack._RECENT,
                             stack._SUSPENDABLE, fallback)
    assert _loop_with([in_c]) == [["walked"]] and len(fallbacks) == 1  # nothing remembered yet
    # remembered by capture, then found in C (capture called through a C partial, as the C paths call it:
    # a frame calling a C function stands at another instruction than one calling a Python function)
    from_python = functools.partial(stack.capture)
    first, again, third = _loop_with([from_python, in_c, in_c])
    assert again is first and third is first and len(fallbacks) == 1
    assert next(_generator_via(in_c)) == ["walked"] and len(fallbacks) == 2  # generators are never remembered
    stack.forget()
    remembered, found = _loop_with([from_python, in_c])  # another frame, remembered again
    assert found is remembered and len(fallbacks) == 2
    assert _loop_with([in_c])[0] == ["walked"] and len(fallbacks) == 3  # a new frame: not remembered
