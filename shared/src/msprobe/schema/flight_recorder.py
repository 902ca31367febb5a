"""The options of ``task: "flight_recorder"`` (the block ``"flight_recorder": {...}`` of config.json).

Kept apart from ``TaskConfig``'s other fields, which every task shares: these mean something to the flight
recorder only, and ``TaskConfig.recorder`` holds them (None for every other task).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Tuple

from .errors import SchemaError
from .kinds import LEVELS
from .values import boolean, choice, optional_int

DETECTORS: Tuple[str, ...] = ("inf_nan", "loss_spike", "grad_norm_spike")
"""The recorder's detectors, each switched by a boolean of the same name (all on by default)."""

CAPTURE_TASKS: Tuple[str, ...] = ("statistics", "tensor")
"""What the full dump after a trigger may be."""


@dataclass(frozen=True)
class FlightRecorderConfig:
    """How the recorder keeps its ring, what fires it, and what it dumps then."""

    ring_steps: int = 16
    """The ring holds the per-module output statistics of the last this many steps."""
    inf_nan: bool = True
    """Fire on inf/NaN in a recorded statistic (overflow_check's rules and ignore list decide)."""
    loss_spike: bool = True
    """Fire on a loss >= ``spike_factor`` x the largest of the first ``spike_warmup`` finite losses."""
    grad_norm_spike: bool = True
    """The same rule on the gradient norm given to ``step(grad_norm=...)``."""
    spike_factor: float = 10.0
    """Megatron's factor: a value this many times the warm-up maximum is a spike."""
    spike_warmup: int = 100
    """Finite values seen before the spike rules speak (Megatron's 100); silent until then."""
    capture_steps: int = 1
    """Steps fully dumped right after a trigger (0: none)."""
    capture_task: str = "statistics"
    """Task of that full dump: ``statistics`` or ``tensor``."""
    capture_level: str = "mix"
    """Level of that full dump: L0, L1 or mix."""
    max_triggers: int = 3
    """Triggers written at most; later ones are counted, not written."""


KEYS: Tuple[str, ...] = tuple(FlightRecorderConfig.__dataclass_fields__)


def parse_recorder(block: Dict[str, Any], source: str, name: str) -> FlightRecorderConfig:
    """The recorder's options of a task block (the shared keys are read by ``config._parse_task``)."""
    default = FlightRecorderConfig()

    def count(key: str, least: int) -> int:
        value = optional_int(block.get(key, getattr(default, key)), source, f"{name}.{key}")
        if value is None or value < least:
            raise SchemaError(source, f"{name}.{key}", f"expected an integer >= {least}", block.get(key),
                              has_got=True)
        return value

    factor = block.get("spike_factor", default.spike_factor)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 1:
        raise SchemaError(source, f"{name}.spike_factor", "expected a number > 1", factor, has_got=True)
    return FlightRecorderConfig(
        ring_steps=count("ring_steps", 1),
        inf_nan=boolean(block.get("inf_nan", True), source, f"{name}.inf_nan"),
        loss_spike=boolean(block.get("loss_spike", True), source, f"{name}.loss_spike"),
        grad_norm_spike=boolean(block.get("grad_norm_spike", True), source, f"{name}.grad_norm_spike"),
        spike_factor=float(factor),
        spike_warmup=count("spike_warmup", 1),
        capture_steps=count("capture_steps", 0),
        capture_task=choice(block.get("capture_task", "statistics"), CAPTURE_TASKS, source, f"{name}.capture_task"),
        capture_level=choice(block.get("capture_level", "mix"), LEVELS, source, f"{name}.capture_level"),
        max_triggers=count("max_triggers", 1),
    )


def recorder_to_json(recorder: FlightRecorderConfig) -> Dict[str, Any]:
    """The options as config.json spells them (what ``parse_recorder`` reads back)."""
    return {key: getattr(recorder, key) for key in KEYS}
