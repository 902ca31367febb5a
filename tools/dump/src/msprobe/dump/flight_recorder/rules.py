"""The detectors: inf/NaN in a step's module statistics (overflow_check's own decision, imported, not
copied), and Megatron's spike rule on the loss and the gradient norm."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

from msprobe.schema import MsprobeError
from msprobe.schema.flight_recorder import FlightRecorderConfig

from .ring import Entry, RingStep


@dataclass(frozen=True)
class Trigger:
    """Why the recorder fired: written as ``trigger.json``."""

    detector: str
    """``inf_nan``, ``loss_spike`` or ``grad_norm_spike``."""
    step: int
    """The step whose statistics fired."""
    module: Optional[str]
    """inf_nan: the first entry in execution order whose statistic fired (``loss``/``grad_norm`` when only
    those are non-finite); spikes: None."""
    value: Optional[float] = None
    """The loss or gradient norm that fired (spikes, and a non-finite loss or norm)."""
    threshold: Optional[float] = None
    """Spikes: factor x the largest of the warm-up values."""


class SpikeRule:
    """Megatron's rule (``RerunStateMachine.is_unexpectedly_large``): a value >= ``factor`` x the largest of
    the first ``warmup`` finite values is a spike; silent until ``warmup`` values were seen."""

    def __init__(self, factor: float, warmup: int) -> None:
        self.factor = factor
        self.warmup = warmup
        self.seen = 0
        self.largest = -math.inf

    def check(self, value: Optional[float]) -> Optional[float]:
        """Feed one step's value (None: the step had none); returns the threshold it reached, else None."""
        if value is None or not math.isfinite(value):
            return None  # (non-finite values are the inf/NaN detector's, and never part of the warm-up)
        if self.seen < self.warmup:
            self.seen += 1
            self.largest = max(self.largest, value)
            return None
        threshold = self.factor * self.largest
        return threshold if value >= threshold else None


class OverflowDecision:
    """overflow_check's online decision over one step's entries in order (its ``StepScan``, with the user's
    ignore list parsed by its ``parse_ignore``): the one implementation."""

    def __init__(self, ignore: Sequence[str], source: str, field: str) -> None:
        try:
            from msprobe.overflow.rules import parse_ignore
            from msprobe.overflow.task import StepScan
        except ImportError as exc:
            raise MsprobeError(f"{source}: field 'task': flight_recorder's detector 'inf_nan' uses overflow_check's "
                               "rules, which come with ./tools/overflow (msprobe-overflow): install it, or set "
                               "\"inf_nan\": false") from exc
        self.ignores = parse_ignore(ignore, source, field)
        self._scan = StepScan

    def first(self, entries: List[Entry]) -> Optional[str]:
        """The first entry whose inf/nan is an overflow, as the overflow_check task decides it in a step."""
        scan = self._scan(self.ignores)
        return next((name for name, entry, _, _ in entries if scan.overflow(name, entry) is not None), None)


class Detectors:
    """The configured detectors, fed every resolved step in order; at most one trigger per step."""

    def __init__(self, options: FlightRecorderConfig, ignore: Sequence[str], source: str) -> None:
        self.overflow = OverflowDecision(ignore, source, "flight_recorder.ignore") if options.inf_nan else None
        self.loss = SpikeRule(options.spike_factor, options.spike_warmup) if options.loss_spike else None
        self.grad_norm = SpikeRule(options.spike_factor, options.spike_warmup) if options.grad_norm_spike else None

    def check(self, slot: RingStep) -> Optional[Trigger]:
        found: List[Trigger] = []
        if self.overflow is not None:
            module = self.overflow.first(slot.entries)
            if module is None:
                module = next((what for what, value in (("loss", slot.loss), ("grad_norm", slot.grad_norm))
                               if value is not None and not math.isfinite(value)), None)
            if module is not None:
                value = {"loss": slot.loss, "grad_norm": slot.grad_norm}.get(module)
                found.append(Trigger("inf_nan", slot.step, module, value))
        # both rules see every step, fired or not: their warm-up follows the run, not the triggers
        for detector, rule, value in (("loss_spike", self.loss, slot.loss),
                                      ("grad_norm_spike", self.grad_norm, slot.grad_norm)):
            threshold = rule.check(value) if rule is not None else None
            if threshold is not None:
                found.append(Trigger(detector, slot.step, None, value, threshold))
        return found[0] if found else None
