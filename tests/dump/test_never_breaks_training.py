"""The dump never breaks the training (issue 29): a failure injected at each write and statistics call, on
each level, forward and backward, stops the dump with one line; the losses and weights equal an undumped
run's, and what was written before stays readable."""
from __future__ import annotations

import errno
import json
import os

import pytest
import torch
import torch.nn as nn

from msprobe.dump import stack
from msprobe.schema import rank_writer
from msprobe.pytorch import PrecisionDebugger, stats
from msprobe.pytorch.adapter import TorchAdapter
from msprobe.schema import SchemaError, find_rank_dirs
from tests.support.ci import unavailable

STEPS = 2
PHASE = {"now": "forward"}


def make_model(layers: int = 2, width: int = 16) -> nn.Module:
    torch.manual_seed(0)
    parts = []
    for i in range(layers):
        parts += [nn.Linear(8 if i == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*parts, nn.Linear(width, 4))


def train(debugger=None, layers: int = 2, width: int = 16, steps: int = STEPS):
    """Losses and final weights of a few SGD steps; inputs from their own generator."""
    model = make_model(layers, width)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        x = torch.randn(4, 8, generator=inputs)
        if debugger is not None:
            debugger.start(model=model)
        PHASE["now"] = "forward"
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        PHASE["now"] = "backward"
        loss.backward()
        PHASE["now"] = "forward"
        optimizer.step()
        if debugger is not None:
            debugger.stop()
            PHASE["now"] = "step"
            debugger.step()
            PHASE["now"] = "forward"
        losses.append(loss.item())
    return losses, [p.detach().clone() for p in model.parameters()]


@pytest.fixture(scope="module")
def undumped():
    return train()


def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def armed(target, phase: str, raised: list):
    """``target`` raising ENOSPC in ``phase``; tensor files by the direction in their name."""
    by_name = target is TorchAdapter.save_tensor  # (on the writer thread, whenever it gets to them)

    def wrapper(*args, **kwargs):
        now = PHASE["now"]
        if by_name:
            now = "backward" if ".backward." in str(args[2]) or "parameters_grad" in str(args[2]) else "forward"
        if now == phase:
            raised.append(now)
            disk_full()
        return target(*args, **kwargs)
    return wrapper


POINTS = {  # what fails: (module or class, attribute), the tasks and the phases it is called in
    "journal write": ((rank_writer, "_write_all"), "statistics", ("forward", "backward")),
    "step files": ((rank_writer, "write_bytes_atomic"), "statistics", ("step",)),
    "tensor files": ((TorchAdapter, "save_tensor"), "tensor", ("forward", "backward")),
    "statistics": ((stats, "reduce"), "statistics", ("forward", "backward")),
    "stack capture": ((stack, "capture"), "statistics", ("forward",)),
}
CASES = [(point, phase, level) for point, (_, _, phases) in POINTS.items() for phase in phases
         for level in ("L0", "L1", "mix")]


def one_error_line(err: str) -> str:
    """The one line: what (the error), where (the call or file), which step (or the file's step folder)."""
    lines = [line for line in err.splitlines() if line.startswith("msprobe:")]
    assert len(lines) == 1, err
    assert "No space left on device" in lines[0] and lines[0].endswith("(files written before stay readable)")
    assert lines[0].startswith("msprobe: error: dump stopped at step 0 while ") or (
        lines[0].startswith("msprobe: error: dump stopped while writing ") and "/step0/" in lines[0]), lines[0]
    return lines[0]


def readable_entries(dump_dir) -> int:
    """Entries readers find under ``dump_dir`` (the journal of a step cut short counts)."""
    try:
        ranks = find_rank_dirs(dump_dir)
    except SchemaError as exc:
        assert "no dump found" in str(exc) or "no such file" in str(exc)
        return 0
    return sum(len(rank.load().dump.data) for rank in ranks)


@pytest.mark.parametrize("point, phase, level", CASES)
def test_a_failure_stops_the_dump_and_the_training_goes_on(point, phase, level, monkeypatch, tmp_path, capfd,
                                                           undumped):
    (owner, name), task, _ = POINTS[point]
    raised: list = []
    monkeypatch.setattr(owner, name, armed(getattr(owner, name), phase, raised))
    debugger = PrecisionDebugger(task=task, level=level, dump_path=str(tmp_path / "dump"))
    losses, weights = train(debugger)
    debugger.flush()
    assert raised, "the failure was never injected"
    assert losses == undumped[0]
    assert all(torch.equal(a, b) for a, b in zip(weights, undumped[1]))
    line = one_error_line(capfd.readouterr().err)
    entries = readable_entries(tmp_path / "dump")
    if phase != "forward":  # the forward entries were written before the failure
        assert entries > 0, line
    assert not (tmp_path / "dump" / "step1").exists()  # stopped for the run


def test_a_failure_on_the_background_thread_with_async_dump(monkeypatch, tmp_path, capfd, undumped):
    raised: list = []
    monkeypatch.setattr(rank_writer, "write_bytes_atomic", lambda *args, **kwargs: raised.append(1) or disk_full())
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "level": "mix", "dump_path": str(tmp_path / "dump"),
                                  "async_dump": True}))
    debugger = PrecisionDebugger(config_path=str(config))
    losses, weights = train(debugger)
    debugger.flush()
    assert raised and losses == undumped[0]
    assert all(torch.equal(a, b) for a, b in zip(weights, undumped[1]))
    one_error_line(capfd.readouterr().err)
    assert readable_entries(tmp_path / "dump") > 0  # from the journal


def test_a_bug_in_a_gradient_observer_never_reaches_backward(monkeypatch, tmp_path, capfd, undumped):
    from msprobe.pytorch import gates

    def broken(*args, **kwargs):
        raise RuntimeError("a bug of ours")
    monkeypatch.setattr(gates, "_consumers", broken)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(tmp_path / "dump"))
    losses, weights = train(debugger)
    assert losses == undumped[0] and all(torch.equal(a, b) for a, b in zip(weights, undumped[1]))
    err = capfd.readouterr().err
    assert err.count("msprobe: error: dump stopped at step 0 while observing the gradients of Module.1.ReLU") == 1
    assert "RuntimeError: a bug of ours" in err


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (we are root in CI), mostly filled already so the dump fills the rest in a step."""
    path = tmp_path / "small"
    path.mkdir()
    done = os.system(f"mount -t tmpfs -o size=1m tmpfs {path} 2>/dev/null")
    if done != 0:
        unavailable("cannot mount a tmpfs here (needs root)")
    (path / "filler").write_bytes(b"\0" * (1024 - 96) * 1024)
    yield path
    os.system(f"umount -l {path}")  # (lazy: a journal of the dump may still be open)


@pytest.mark.parametrize("task", ["statistics", "tensor"])
def test_a_real_full_disk(small_disk, task, capfd):
    reference = train(layers=8, width=64, steps=4)
    debugger = PrecisionDebugger(task=task, level="mix", dump_path=str(small_disk / "dump"))
    losses, weights = train(debugger, layers=8, width=64, steps=4)
    debugger.flush()
    assert losses == reference[0] and all(torch.equal(a, b) for a, b in zip(weights, reference[1]))
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("msprobe:")]
    assert len(lines) == 1 and "No space left on device" in lines[0], err
    assert readable_entries(small_disk / "dump") > 0
