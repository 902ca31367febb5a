"""Trainings of a tiny HF Llama (random weights, built from a config) for the flight recorder's tests, with a
fault planted at one step: a NaN module output, a loss spike or a gradient-norm spike."""
from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

from msprobe.pytorch import PrecisionDebugger

SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=32)
NAN_MODULE = "Module.model.layers.1.mlp.LlamaMLP.forward.0"
"""Where the planted NaN appears: layer 1's MLP output (its own Linear layers' outputs stay finite)."""


def make_model(dropout: float = 0.0, seed: int = 1234) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = LlamaConfig(attention_dropout=dropout, **SIZES)
    config._attn_implementation = "eager"
    return AutoModelForCausalLM.from_config(config).train()


def batch(step: int) -> torch.Tensor:
    return torch.randint(0, SIZES["vocab_size"], (2, 8), generator=torch.Generator().manual_seed(step))


@dataclass
class Run:
    losses: List[float]
    params: Dict[str, torch.Tensor]
    kept: Dict[str, Any] = field(default_factory=dict)
    """``keep_at``: the model's state before that step, and the debugger."""


def planter(model: torch.nn.Module, fault: Optional[str], at: int, current: Dict[str, int]) -> Callable:
    """Plants ``fault`` at step ``at`` (``current["step"]`` says which step runs); returns the loss scale."""
    def nan_output(module, args, output):
        return output * float("nan") if current["step"] == at else None

    def big_logits(module, args, output):
        return output * 1e4 if current["step"] == at else None

    if fault == "nan":
        model.model.layers[1].mlp.register_forward_hook(nan_output)
    elif fault == "loss":
        model.lm_head.register_forward_hook(big_logits)
    # a gradient-norm spike: the backward of a scaled loss (the loss itself, and the forward, unchanged)
    return lambda step: 1e4 if fault == "grad" and step == at else 1.0


def train(out: Optional[Path], steps: int, fault: Optional[str] = None, at: int = -1,
          options: Optional[Dict[str, Any]] = None, dropout: float = 0.0, keep_at: Optional[int] = None,
          give_loss: bool = False, debugger_class: type = PrecisionDebugger,
          sync: Optional[Callable[[torch.nn.Module], None]] = None, give_grad_norm: bool = True) -> Run:
    """AdamW steps with the recorder on (``out``: its dump_path, ``options``: its block) or off (None);
    ``sync(model)`` after each backward (data parallelism: the gradients' all-reduce)."""
    torch.set_num_threads(1)
    model = make_model(dropout)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    current = {"step": 0}
    scale = planter(model, fault, at, current)
    debugger = None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else None
        config = out.parent / (f"{out.name}.config.json" if rank is None else f"{out.name}.config{rank}.json")
        config.write_text(json.dumps({"task": "flight_recorder", "dump_path": str(out),
                                      "flight_recorder": options or {}}))
        debugger = debugger_class(config_path=str(config))
    run = Run([], {})
    for step in range(steps):
        current["step"] = step
        if step == keep_at:
            run.kept["state"] = copy.deepcopy(model.state_dict())
        if debugger is not None:
            debugger.start(model=model)
        loss = model(input_ids=batch(step), labels=batch(step)).loss
        (loss * scale(step)).backward()
        if sync is not None:
            sync(model)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        optimizer.step()
        optimizer.zero_grad()
        if debugger is not None:
            debugger.stop()
            debugger.step(loss=loss if give_loss else None, grad_norm=grad_norm if give_grad_norm else None)
        run.losses.append(loss.item())
    if debugger is not None:
        debugger.flush()
        run.kept["debugger"] = debugger
    run.params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return run


@functools.lru_cache(maxsize=None)
def _reference(steps: int, fault: Optional[str] = None, at: int = -1) -> Run:
    return train(None, steps, fault, at)


@pytest.fixture(scope="session")
def reference() -> Callable[..., Run]:
    """``reference(steps, fault, at)``: that training without the recorder, trained once per configuration for the
    session (the cache beneath the fixture is what the test modules importing it share); read only: a test must
    not change its losses or params."""
    return _reference


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit (NaN weights included, which ``torch.equal`` calls unequal)."""
    return a.dtype == b.dtype and a.shape == b.shape and \
        torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def same_params(on: Run, off: Run) -> bool:
    """The final weights of two runs, bit for bit."""
    return sorted(on.params) == sorted(off.params) and all(same_bits(on.params[k], v) for k, v in off.params.items())


def triggers(out: Path) -> List[Dict[str, Any]]:
    """Every trigger.json under ``out``, in trigger order."""
    found = sorted(out.glob("trigger*/trigger.json"), key=lambda p: int(p.parent.name[len("trigger"):]))
    return [json.loads(p.read_text()) for p in found]


def ring_steps(trigger_dir: Path, rank: str = "rank") -> List[int]:
    """The ring steps written under ``trigger_dir`` for ``rank`` (its folder's name: ``rank``, ``rank<R>``)."""
    return sorted(int(p.name[len("step"):]) for p in trigger_dir.glob("step*") if (p / rank / "dump.json").is_file())
