"""A model under torch.compile: training runs as without the dump, and one line says that what runs inside
compiled graphs is not dumped (dynamo traces past the hooks); what runs eagerly still is. (Where dynamo
declines to compile under the dump's torch function mode, the whole model runs eagerly and is dumped as
an eager model is.)"""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from msprobe.pytorch import PrecisionDebugger


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def _losses(model, debugger=None, steps=2):
    torch.manual_seed(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        if debugger is not None:
            debugger.start(model)
        loss = model(torch.randn(4, 8)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if debugger is not None:
            debugger.stop()
            debugger.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("how", ["torch.compile", "Module.compile"])
def test_compiled_model_trains_unchanged_and_one_line_says_what_is_not_dumped(tmp_path, capfd, how):
    torch._dynamo.reset()
    torch.manual_seed(0)
    reference = Net()
    plain = Net()
    plain.load_state_dict(reference.state_dict())
    if how == "torch.compile":
        model = torch.compile(plain, backend="eager")
    else:
        model = plain
        model.compile(backend="eager")
    debugger = PrecisionDebugger(task="statistics", level="mix", dump_path=str(tmp_path / "dump"))
    capfd.readouterr()
    dumped = _losses(model, debugger)
    debugger.flush()
    err = capfd.readouterr().err
    notes = [line for line in err.splitlines() if "torch.compile" in line]
    assert len(notes) == 1 and notes[0].startswith("msprobe: warning:") and "not dumped" in notes[0]
    assert "Traceback" not in err
    assert dumped == _losses(reference)  # the dump changed nothing in training
    eager = Net()
    eager.load_state_dict(reference.state_dict())
    _losses(eager, PrecisionDebugger(task="statistics", level="mix", dump_path=str(tmp_path / "eager")))
    for step in (0, 1):
        dump = tmp_path / "dump" / f"step{step}" / "rank" / "dump.json"
        names = list(json.loads(dump.read_text())["data"]) if dump.exists() else []
        expected = list(json.loads((tmp_path / "eager" / f"step{step}" / "rank" / "dump.json").read_text())["data"])
        # what ran eagerly (graph breaks, the loss, the optimizer's step) is there, as an eager dump names it
        assert {_kind(n) for n in names} <= {_kind(n) for n in expected}, names
        assert len(names) < len(expected) or [n.replace("_orig_mod.", "") for n in names] == expected


def _kind(entry: str) -> str:
    """An entry's name without its call counter."""
    return ".".join(part for part in entry.replace("_orig_mod.", "").split(".") if not part.isdigit())


def _notes(capfd) -> list:
    return [line for line in capfd.readouterr().err.splitlines() if "torch.compile" in line]


@pytest.mark.parametrize("level, give_model, warm", [("L0", True, False), ("mix", True, True), ("L0", True, True),
                                                     ("L1", False, False), ("L1", False, True)])
def test_compiled_code_run_in_a_window_is_said_once_whatever_start_was_given(tmp_path, capfd, level, give_model,
                                                                            warm):
    """The raw model given to start() while its torch.compile wrapper runs (``warm``: its graphs compiled
    before the first window, which none of our hooks is in), or L1 without a model: one warning line, at the
    first stop(), and training as without the dump."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    reference, plain = Net(), Net()
    plain.load_state_dict(reference.state_dict())
    wrapper = torch.compile(plain, backend="eager")
    if warm:
        wrapper(torch.randn(4, 8))
    debugger = PrecisionDebugger(task="statistics", level=level, dump_path=str(tmp_path / "dump"))
    capfd.readouterr()
    torch.manual_seed(1)
    optimizer = torch.optim.SGD(plain.parameters(), lr=0.1)
    losses = []
    for step in range(3):
        debugger.start(plain if give_model else None)
        loss = wrapper(torch.randn(4, 8)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        debugger.stop()
        if step == 0:
            notes = _notes(capfd)
            assert len(notes) == 1 and notes[0].startswith("msprobe: warning: compiled code (torch.compile) ran")
            assert "not dumped" in notes[0]
        debugger.step()
        losses.append(loss.item())
    assert not _notes(capfd)  # said once
    assert losses == _losses(reference, steps=3)


def test_no_warning_for_an_eager_model(tmp_path, capfd):
    model = Net()
    _losses(model, PrecisionDebugger(task="statistics", level="mix", dump_path=str(tmp_path / "dump")))
    assert not _notes(capfd)
