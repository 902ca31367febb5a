"""The numerics flight recorder (``task: "flight_recorder"``): every step's per-module output statistics kept
in a ring of the last K steps, detectors that fire on inf/NaN and on loss or gradient-norm spikes, and the
ring written as a statistics dump (with ``trigger.json``) when one fires, followed by a full dump of the
next steps. Framework-free; ``msprobe.pytorch.flight_recorder`` supplies the PyTorch side (``RecorderHost``).
"""
from __future__ import annotations

from .host import RecorderHost, Transfer
from .recorder import FlightRecorder
from .ring import RingStep
from .rules import SpikeRule, Trigger

__all__ = ["FlightRecorder", "RecorderHost", "RingStep", "SpikeRule", "Transfer", "Trigger"]
