"""Dumps of one run made here and by msprobe 26.2.0 pair entry for entry: one AdamW step of a tiny HF Llama
(GQA) and of a tiny Mixtral (MoE), built from configs (``hf_one_step.py``), dumped by both tools at L0, L1
and mix with the default configuration. The six dumps are made once for the module, concurrently.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List

import pytest
import torch
import torch.nn.functional as F

from tests.support.ci import imported
from tests.support.upstream_msprobe import make_upstream_dump

SCRIPT = Path(__file__).with_name("hf_one_step.py")
LEVELS = ("L0", "L1", "mix")
MODELS = {"llama": 0, "mixtral": 1}  # the step each model is dumped in
GAPS = re.compile(r"^Module\.model\.(Llama|Mixtral)Model\.backward\.|^Functional\.dropout\.\d+\.backward$")
"""Entries of issue #37 (how gradients are observed), checked apart by ``test_gradient_entries_of_issue_37``:
the backward of a module returning a ModelOutput and of a dropout with p = 0, which returns its argument."""


def _ours(level: str, out: Path, script: Path = SCRIPT) -> Path:
    out.mkdir(parents=True)
    env = dict(os.environ, MSPROBE_OUT=str(out), DUMP_LEVEL=level, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(script)], cwd=str(out), env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return out


def _upstream(level: str, out: Path) -> Path:
    return make_upstream_dump("26.2.0", SCRIPT, out, env={"DUMP_LEVEL": level, "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> Dict[tuple, Path]:
    """(tool, level) -> the dump root of that run (``step0`` Llama, ``step1`` Mixtral)."""
    imported("transformers", module=False)
    root = tmp_path_factory.mktemp("parity")
    with ThreadPoolExecutor(max_workers=6) as pool:
        jobs = {(tool, level): pool.submit(make, level, root / tool / level)
                for level in LEVELS for tool, make in (("ours", _ours), ("msprobe", _upstream))}
        return {key: job.result() for key, job in jobs.items()}


def _data(root: Path, model: str) -> Dict[str, dict]:
    found = sorted(root.glob(f"step{MODELS[model]}/*/dump.json"))  # ours: rank/, msprobe without a group: proc<pid>/
    assert len(found) == 1, f"expected one dump.json under {root}/step{MODELS[model]}, found {found}"
    return json.loads(found[0].read_text())["data"]


def _names(data: Dict[str, dict]) -> List[str]:
    # this suite writes the seed's 8.x layout (parameters_grad without a call number); msprobe 26.x adds ".0"
    return sorted(re.sub(r"\.parameters_grad$", ".parameters_grad.0", name) for name in data)


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("level", LEVELS)
def test_the_same_entries_as_msprobe(dumps, level: str, model: str) -> None:
    ours = [n for n in _names(_data(dumps["ours", level], model)) if not GAPS.match(n)]
    theirs = [n for n in _names(_data(dumps["msprobe", level], model)) if not GAPS.match(n)]
    only_ours, only_theirs = sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours))
    assert not only_ours and not only_theirs, f"{model} {level}: only ours {only_ours[:10]}, only msprobe's " \
                                              f"{only_theirs[:10]}"
    assert len(ours) == len(theirs) > 0
    if level != "L0":  # Python's operators under msprobe's names, each with its own counter
        assert {"Tensor.__add__.0.forward", "Tensor.__mul__.0.forward", "Tensor.__truediv__.0.forward",
                "Tensor.__iadd__.0.forward"} <= set(ours)
        assert not [n for n in ours if n.startswith(("Tensor.add.", "Tensor.__getitem__.", "Tensor.view."))]


@pytest.mark.parametrize("level", ("L0", "L1"))
def test_gradient_entries_of_issue_37(dumps, level: str) -> None:
    ours = [n for n in _names(_data(dumps["ours", level], "llama")) if GAPS.match(n)]
    theirs = [n for n in _names(_data(dumps["msprobe", level], "llama")) if GAPS.match(n)]
    assert ours == theirs


def test_integer_statistics_as_msprobe_writes_them(dumps) -> None:
    """The token ids (int64): Max and Min as integers, Mean and Norm null, as msprobe writes them."""
    ours = _data(dumps["ours", "L1"], "llama")["Functional.embedding.0.forward"]["input_args"][0]
    theirs = _data(dumps["msprobe", "L1"], "llama")["Functional.embedding.0.forward"]["input_args"][0]
    assert ours["dtype"] == theirs["dtype"] == "torch.int64"
    stats = {key: ours[key] for key in ("Max", "Min", "Mean", "Norm")}
    assert stats == {key: theirs[key] for key in stats}
    assert type(stats["Max"]) is int and stats["Mean"] is None and stats["Norm"] is None


def test_cross_entropy_backward_is_the_gradient_of_the_logits(dumps) -> None:
    """``Functional.cross_entropy.0.backward``'s output is the gradient w.r.t. cross_entropy's input (the
    logits): (softmax - one-hot) / N, whose rows sum to 0. msprobe 26.2.0 writes the gradient w.r.t.
    nll_loss's input (log_softmax's output) instead: -1/N at each target, 0 elsewhere."""
    ours = _data(dumps["ours", "L1"], "llama")["Functional.cross_entropy.0.backward"]["output"]
    theirs = _data(dumps["msprobe", "L1"], "llama")["Functional.cross_entropy.0.backward"]["output"]
    forward = _data(dumps["ours", "L1"], "llama")["Functional.cross_entropy.0.forward"]["input_args"]
    rows, classes = forward[0]["shape"]
    assert len(theirs) == 1 and len(ours) == 2 and ours[1] is None  # ours: one per positional argument
    assert ours[0]["shape"] == theirs[0]["shape"] == [rows, classes]
    valid = round(-1 / theirs[0]["Min"])  # msprobe's: -1/N at the targets that are not ignored (-100)
    assert theirs[0]["Max"] == 0 and theirs[0]["Mean"] == pytest.approx(-1 / (rows * classes))
    assert abs(ours[0]["Mean"]) < 1e-9 and ours[0]["Max"] > 0 and ours[0]["Min"] > -1 / valid


def test_cross_entropy_backward_on_a_tiny_example(tmp_path) -> None:
    """Worked out on 2 x 3 logits: the recorded gradient is autograd's d loss / d logits, not the
    gradient of nll_loss's input."""
    from msprobe.pytorch import PrecisionDebugger

    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0]], requires_grad=True)
    target = torch.tensor([0, 2])
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"dump_path": str(tmp_path / "d"), "level": "L1"}))
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start()
    F.cross_entropy(logits, target).backward()
    debugger.stop()
    debugger.step()
    recorded = json.loads(next((tmp_path / "d").glob("step0/*/dump.json")).read_text())["data"]
    grad = recorded["Functional.cross_entropy.0.backward"]["output"][0]
    expected = (torch.softmax(logits.detach(), 1) - F.one_hot(target, 3)) / 2
    assert torch.allclose(logits.grad, expected)
    assert grad["Max"] == pytest.approx(expected.max().item()) and grad["Min"] == pytest.approx(expected.min().item())
    assert grad["Norm"] == pytest.approx(expected.norm().item(), rel=1e-6)
    nll_input_grad = -F.one_hot(target, 3) / 2  # what msprobe 26.2.0 writes for this row
    assert grad["Max"] != pytest.approx(nll_input_grad.max().item())


def test_reflected_operators_record_what_msprobe_records(tmp_path) -> None:
    """``1 / x`` (torch's ``Tensor.__rtruediv__``, Python code msprobe does not wrap) is recorded as msprobe
    26.2.0 records it, by the APIs its body calls: ``Tensor.reciprocal`` then ``Tensor.__mul__``; ``5 // x``
    as ``Torch.floor_divide``, ``x.__rmatmul__(m)`` as ``Torch.matmul``; the shifts as nothing."""
    script = Path(__file__).with_name("reflected_ops.py")
    ours = _ours("L1", tmp_path / "ours", script)
    theirs = make_upstream_dump("26.2.0", script, tmp_path / "msprobe", env={"OMP_NUM_THREADS": "1"})
    recorded = {tool: json.loads(next(root.glob("step0/*/dump.json")).read_text())["data"]
                for tool, root in (("ours", ours), ("msprobe", theirs))}
    assert sorted(recorded["ours"]) == sorted(recorded["msprobe"])
    assert {"Tensor.reciprocal.0.forward", "Tensor.__mul__.0.backward", "Torch.floor_divide.0.forward",
            "Torch.matmul.0.backward"} <= set(recorded["ours"])
    for name in ("Tensor.reciprocal.0.forward", "Tensor.__mul__.0.forward", "Torch.matmul.0.forward"):
        ours_args, their_args = (recorded[tool][name]["input_args"] for tool in ("ours", "msprobe"))
        assert [(a.get("shape"), a.get("Max"), a.get("Min"), a.get("value")) for a in ours_args] == \
            [(a.get("shape"), a.get("Max"), a.get("Min"), a.get("value")) for a in their_args], name


def _families(tmp_path, **options) -> set:
    """The API families one small computation records with ``options`` in config.json."""
    from msprobe.pytorch import PrecisionDebugger

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"dump_path": str(tmp_path / "d"), "level": "L1", **options}))
    debugger = PrecisionDebugger(config_path=str(config))
    x = torch.randn(2, 3, requires_grad=True)
    debugger.start()
    try:
        y = (x + 1).view(3, 2).to(torch.float64)
        torch.matmul(y.t(), -y[0:3]).add(1).sum().backward()
    finally:
        debugger.stop()
        debugger.step()
    data = json.loads(next((tmp_path / "d").glob("step0/*/dump.json")).read_text())["data"]
    return {re.sub(r"\.\d+\.(forward|backward)$", "", name) for name in data}


@pytest.mark.parametrize("options, recorded, left_out", [
    ({}, {"Tensor.__add__", "Tensor.t", "Torch.matmul", "Tensor.add", "Tensor.sum"},
     {"Tensor.view", "Tensor.to", "Tensor.__getitem__", "Tensor.__neg__", "Tensor.neg"}),
    ({"risk_level": "ALL"}, {"Tensor.__add__", "Tensor.to", "Torch.matmul"}, {"Tensor.view", "Tensor.__getitem__"}),
    ({"risk_level": None}, {"Tensor.to"}, {"Tensor.view"}),
    ({"risk_level": "CORE"}, {"Torch.matmul"}, {"Tensor.__add__", "Tensor.add", "Tensor.sum", "Tensor.t"}),
    ({"statistics": {"list": ["Tensor.to", "Tensor.__add__"]}}, {"Tensor.to", "Tensor.__add__"}, {"Tensor.view"}),
    ({"record_all_apis": True}, {"Tensor.__add__", "Tensor.view", "Tensor.to", "Tensor.__getitem__", "Tensor.__neg__",
                                 "Torch.matmul"}, {"Tensor.neg"}),
])
def test_which_apis_each_option_records(tmp_path, options, recorded, left_out) -> None:
    families = _families(tmp_path, **options)
    assert recorded <= families and not left_out & families, sorted(families)


def test_operators_are_put_back_after_the_window(tmp_path) -> None:
    before = {name: torch.Tensor.__dict__.get(name) for name in ("__add__", "__neg__", "__iadd__", "__pow__",
                                                             "__rtruediv__", "__rfloordiv__")}
    _families(tmp_path)
    assert {name: torch.Tensor.__dict__.get(name) for name in before} == before
    assert (torch.ones(2) + 1).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("value", ["low", "Focus", 1])
def test_bad_risk_level_is_one_line_naming_the_field(tmp_path, value) -> None:
    from msprobe.pytorch import PrecisionDebugger
    from msprobe.schema import SchemaError

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"risk_level": value}))
    with pytest.raises(SchemaError, match="field 'risk_level'") as info:
        PrecisionDebugger(config_path=str(config))
    assert "\n" not in str(info.value) and str(config) in str(info.value)
