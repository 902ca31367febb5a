"""The flight recorder: a dump engine at L0 whose module entries go into a ring of the last K steps instead of
files, detectors fed each step as its statistics reach the host, and, when one fires, the ring written with
``trigger.json`` and a full dump of the next steps by a second engine.

The statistics are the dump's own (the adapter's hooks, ``Encoder``, the content cache): only where the
entries go differs (``_add``). A step's device statistics travel in one non-blocking transfer started at
``step()`` and read at the next ``step()`` (detection may lag one step; the ring still holds the step that
fired); on the CPU they are host numbers at once and the detectors see the step when it ends.
"""
from __future__ import annotations

import os
import sys
from collections import deque
from dataclasses import replace
from typing import Any, ContextManager, Deque, Dict, List, Optional, Tuple

from msprobe.schema import DebuggerConfig, MsprobeError, TaskConfig
from msprobe.schema.flight_recorder import FlightRecorderConfig
from msprobe.schema.ranges import IntRanges

from ..adapter import Adapter
from ..engine import DumpEngine
from ..entry import PendingTensor
from ..faults import describe
from .files import CAPTURE_DIR, TRIGGER_DIR, check_no_triggers, write_ring, write_trigger
from .host import RecorderHost
from .ring import RingStep
from .rules import Detectors, Trigger

BEYOND_KEPT = 16
"""Triggers kept beyond ``max_triggers`` (the latest ones)."""


class Capture:
    """The full dump of the steps after a trigger: its own engine and adapter, under the trigger's folder."""

    def __init__(self, engine: DumpEngine, adapter: Adapter, steps: List[int]) -> None:
        self.engine = engine
        self.adapter = adapter
        self.steps = steps


class FlightRecorder(DumpEngine):
    """``task: "flight_recorder"``: one per PrecisionDebugger, in place of its DumpEngine."""

    records_parameters = False
    """The ring holds module outputs only: parameter statistics would be a pass over every weight at every
    step, so the hooks do not even gather the parameters (the capture's engine records them)."""

    def __init__(self, config: DebuggerConfig, adapter: Adapter, host: RecorderHost) -> None:
        where = config.source or "PrecisionDebugger"
        check_no_triggers(config.dump_path, where, adapter.rank())
        task = config.task_config
        # the ring: module outputs only (L0 granularity; the user's scope and list kept), plain statistics
        ring_task = replace(task, data_mode=("forward", "output"), summary_mode="statistics", recorder=None)
        super().__init__(replace(config, task="statistics", level="L0", task_config=ring_task), adapter)
        self.user_config = config
        self.options: FlightRecorderConfig = task.recorder or FlightRecorderConfig()
        self.host = host
        options = self.options
        self.detectors = Detectors(options, task.ignore, where)
        self.ring: Deque[RingStep] = deque(maxlen=options.ring_steps)
        self.current = RingStep(self.step)
        self.triggers: List[Trigger] = []
        """The triggers written (at most ``max_triggers``)."""
        self.beyond: Deque[Trigger] = deque(maxlen=BEYOND_KEPT)
        """The latest of the triggers met beyond ``max_triggers``: a NaN left in the weights fires at every
        later step, so they are bounded; ``beyond_count`` counts them all."""
        self.beyond_count = 0
        self.trigger_rng: Dict[int, Any] = {}
        """RNG states of the triggering steps, for ``replay`` after the ring moved on."""
        self.capture: Optional[Capture] = None
        self._ring_header = {"task": "statistics", "level": "L0", "framework": adapter.framework}

    # ----- the window (the debugger's start/stop/step) ------------------------------------------
    def begin(self) -> bool:
        capturing = self.capture is not None and self.capture.engine.begin()
        ring = super().begin()
        if ring and self.current.rng is None:  # the step's first start(): the states its random numbers come from
            self.current.rng = self.host.rng_state()
        return ring or capturing

    def end(self) -> None:
        super().end()
        if self.capture is not None:
            self.capture.engine.end()

    def observe_step(self, loss: Any, grad_norm: Any) -> None:
        """``step(loss=..., grad_norm=...)``: host numbers or 0-d tensors (read with the step's transfer)."""
        if loss is not None:
            self.current.loss, self.current.loss_given = loss, True
        if grad_norm is not None:
            self.current.grad_norm = grad_norm

    def root_loss(self, loss: Any) -> None:
        """The root module's 0-d loss output (the adapter's hook): the loss unless ``step(loss=...)`` gives one."""
        if self.recording and not self.current.loss_given:
            self.current.loss = loss

    def next_step(self) -> None:
        slot = self.current
        self._end_capture_step()
        super().next_step()
        self.current = RingStep(self.step)
        if self.finished or not slot.recorded():
            return
        with self.guard("checking step", f"{slot.step} (flight recorder)"):  # failing: the recorder stops
            self._resolve_older()  # (started a step ago: done by now)
            slot.transfer = self.host.transfer(slot.handles(), (slot.loss, slot.grad_norm))
            self.ring.append(slot)
            if slot.transfer.done():
                self._detect(slot)

    def wait(self) -> None:
        super().wait()
        if self.capture is not None:
            self.capture.engine.wait()

    def close(self) -> None:
        """Process exit: a step still in flight is read (it may fire), and a capture's files are made final."""
        try:
            self._resolve_older()
        except Exception:  # interpreter shutdown
            pass
        super().close()
        if self.capture is not None:
            self.capture.engine.close()

    # ----- where the engine's entries go ----------------------------------------------------------
    def _add(self, name: str, entry: Dict[str, Any], tensors: List[PendingTensor],
             frames: Optional[List[str]]) -> None:
        if not self.finished:
            self.current.entries.append((name, entry, tensors, frames))

    def _construct(self, node: str, parent: Optional[str]) -> None:
        self.current.construct[node] = parent

    # ----- detection --------------------------------------------------------------------------
    def _resolve_older(self) -> None:
        """Read every ring step not yet read (in order: the spike rules follow the run)."""
        for slot in list(self.ring):
            if not slot.resolved:
                self._detect(slot)

    def _detect(self, slot: RingStep) -> None:
        slot.resolve()
        trigger = self.detectors.check(slot)
        if trigger is not None:
            self._fire(trigger, slot)

    def met_triggers(self) -> List[Trigger]:
        """Every trigger written, then the latest ``BEYOND_KEPT`` of those beyond ``max_triggers``."""
        return self.triggers + list(self.beyond)

    def _fire(self, trigger: Trigger, slot: RingStep) -> None:
        if len(self.triggers) >= self.options.max_triggers:
            if not self.beyond_count:
                self._say(f"{trigger.detector} fired at step {trigger.step}; max_triggers "
                          f"({self.options.max_triggers}) reached: this and later triggers are not written")
            self.beyond.append(trigger)
            self.beyond_count += 1
            return
        self.triggers.append(trigger)
        number = len(self.triggers)
        self.trigger_rng[trigger.step] = slot.rng
        trigger_dir = os.path.join(self.config.dump_path, TRIGGER_DIR.format(number - 1))
        rank = self.adapter.rank()
        steps = [s for s in self.ring if s.step <= trigger.step]
        written = write_ring(trigger_dir, steps, self._ring_header, rank)
        capture, failed = self._try_capture(trigger_dir)
        path = write_trigger(trigger_dir, trigger, written, capture, rank, failed)
        where = f" in {trigger.module}" if trigger.module else f" (value {trigger.value:g} >= {trigger.threshold:g})"
        ring = _steps(written) if written else "no module step"
        self._say(f"{trigger.detector} fired at step {trigger.step}{where}: ring of {ring} written to "
                  f"{trigger_dir} ({os.path.basename(path)}){_capture_said(trigger_dir, capture, failed)}")

    @staticmethod
    def _say(line: str) -> None:
        print(f"msprobe: flight recorder: {line}", file=sys.stderr, flush=True)

    # ----- the full dump after a trigger ------------------------------------------------------------
    def _try_capture(self, trigger_dir: str) -> Tuple[List[int], Optional[str]]:
        """``_start_capture``, and why it failed (None: it did not). A failure is the trigger's to tell, in its
        trigger.json: raised, it would stop the recorder before that file is written, and the user would never
        learn that the trigger fired; the ring goes on (the capture's own engine is all that failed)."""
        try:
            return self._start_capture(trigger_dir), None
        except Exception as exc:  # (not KeyboardInterrupt and the like: those are the user's)
            return [], describe(exc)

    def _start_capture(self, trigger_dir: str) -> List[int]:
        """The next ``capture_steps`` steps (from the current one) go to a full dump; none while one runs."""
        count = self.options.capture_steps
        if count == 0 or self.capture is not None:
            return []
        user = self.user_config
        config = replace(user, task=self.options.capture_task, level=self.options.capture_level,
                         dump_path=os.path.join(trigger_dir, CAPTURE_DIR), step=IntRanges(),
                         task_config=TaskConfig(summary_mode=user.task_config.summary_mode))
        adapter = self.host.capture_adapter(config)
        engine = DumpEngine(config, adapter)
        engine.step = engine.generation = self.step
        self.capture = Capture(engine, adapter, list(range(self.step, self.step + count)))
        return self.capture.steps

    def _end_capture_step(self) -> None:
        capture = self.capture
        if capture is None:
            return
        capture.engine.next_step()
        if capture.engine.step > capture.steps[-1]:  # its last step: its hooks go, its files are made final
            capture.adapter.uninstall_all()
            capture.engine.wait()
            self.capture = None

    # ----- replay ----------------------------------------------------------------------------------
    def replay(self, step: Optional[int] = None) -> ContextManager[None]:
        """A context in which the RNGs are as they were at ``start()`` of ``step`` (default: the last written
        trigger's step), set back on leaving it: rerunning that step with its batch reproduces it."""
        if step is None:
            if not self.trigger_rng:
                raise MsprobeError("PrecisionDebugger.replay(): the flight recorder has not fired; "
                                   "pass step=N for a step the ring still holds")
            step = max(self.trigger_rng)
        state = self.trigger_rng.get(step)
        if state is None:
            state = next((s.rng for s in self.ring if s.step == step and s.rng is not None), None)
        if state is None:
            held = [s.step for s in self.ring]
            raise MsprobeError(f"PrecisionDebugger.replay(): argument 'step': step {step} is neither a trigger's "
                               f"nor in the ring (steps {held[0]}-{held[-1]})" if held else
                               f"PrecisionDebugger.replay(): argument 'step': no step {step} recorded")
        return self.host.replay(state)


def _capture_said(trigger_dir: str, capture: List[int], failed: Optional[str]) -> str:
    """The end of the line that says a trigger fired: where the full dump after it goes, or why it did not start."""
    if failed:
        return f"; the full dump after it did not start: {failed}"
    return f"; {_steps(capture)} will be dumped under {os.path.join(trigger_dir, CAPTURE_DIR)}" if capture else ""


def _steps(steps: List[int]) -> str:
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
