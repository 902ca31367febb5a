"""The dump engine: step/rank lifecycle, call counters, entry assembly, statistics batches; what it
records is written by ``output.StepOutput``.

Framework-free: an :class:`~msprobe.dump.adapter.Adapter` brings tensors and hooks, and reports calls
through ``api_begin``/``api_inputs``/``api_outputs``, ``module_begin``/``module_end``,
``backward_grad``/``backward_done``, ``param_grad`` and ``save_variable``.
"""
from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

from msprobe.schema import DebuggerConfig, MsprobeError
from msprobe.schema.kinds import API_LEVELS, MODULE_LEVELS
from msprobe.schema.names import api_entry, module_entry, params_grad_entry
from msprobe.schema.tree import rank_dir_name, step_dir_name

from . import stack
from .adapter import Adapter
from .calls import Call
from .dump_path import dump_path_field
from .entry import Encoder, PendingTensor, fill_statistics, pending_handles, place
from .faults import Faults, Guarded
from .filters import EntryFilter
from .output import StepOutput
from .rank_lock import claim
from .tasks import TaskPolicy, resolve_task


class DumpEngine:
    """Records one configuration's dump; one engine per PrecisionDebugger."""

    records_parameters = True
    """Whether a module's forward entry holds its own parameters: where not, the hooks do not gather them
    (a pass over the module's parameters at every call, for nothing)."""

    def __init__(self, config: DebuggerConfig, adapter: Adapter, tasks: Optional[Dict] = None) -> None:
        if config.summary_mode not in adapter.summary_modes:
            raise MsprobeError(f"{config.source or 'PrecisionDebugger'}: field 'summary_mode': '{config.summary_mode}'"
                               f" is not supported for {adapter.framework} (supported: {', '.join(adapter.summary_modes)})")
        self.config = config
        self.adapter = adapter
        self.task: TaskPolicy = resolve_task(config, tasks)
        self.filter = EntryFilter(config.task_config)
        self.encoder = Encoder(adapter, config.precision, config.summary_mode, self.task.save_tensors)
        self.step = 0
        self.generation = 0
        self.recording = False
        self.opened = False
        """A window of this step was opened (start() to step()): parameter gradients belong to it"""
        self.module_level = config.level in MODULE_LEVELS
        self.api_level = config.level in API_LEVELS
        self.busy = False
        """The engine runs framework ops of its own (inside ``guard``): hooks must pass calls through"""
        self._counters: Dict[str, int] = {}
        header = {"task": config.task, "level": config.level, "framework": adapter.framework}
        self.faults = Faults()
        self.output = StepOutput(header, adapter, self.task.save_tensors, config.async_dump, self._fail_writing)
        self._pending: List[Tuple[str, Dict[str, Any], List[PendingTensor], Optional[List[str]]]] = []
        self._open_backward: Dict[int, Call] = {}
        self._modules: List[Call] = []
        self._rank_dir_known: Optional[Tuple[int, Optional[int], str]] = None
        self._lock = threading.RLock()
        # a task that keeps every entry and never finishes early (statistics, tensor) needs no asking per entry
        self._keeps_all = type(self.task).keep is TaskPolicy.keep and type(self.task).finished is TaskPolicy.finished
        self.finished = False
        engine_ref = weakref.ref(self)
        atexit.register(lambda: engine_ref() and engine_ref().close())

    # ----- lifecycle -------------------------------------------------------------------------
    def wants_this_step(self) -> bool:
        return self._records(self.step)

    def _records(self, step: int) -> bool:
        """Whether step ``step`` is recorded here (the step and rank filters, and the task not finished). The
        rank is asked only when there is a rank filter (it is asked several times a step, on the hot path)."""
        config = self.config
        if self.finished or not config.wants_step(step):
            return False
        return not config.rank or config.wants_rank(self.adapter.rank())

    def begin(self) -> bool:
        """start(): True when this step is recorded (hooks must then be installed)."""
        self.recording = self.wants_this_step()
        self.opened = self.opened or self.recording
        return self.recording

    def end(self) -> None:
        """stop(): no new calls recorded; backward of recorded calls still arrives until ``next_step``."""
        self.recording = False
        self._modules.clear()
        stack.forget()
        with self.guard("ending the dump window (stop)"):
            self.flush(final=False)

    def next_step(self) -> None:
        """step(): complete this step's files and move on."""
        self.recording = self.opened = False
        with self.guard("completing the files of step", str(self.step)):
            self._complete_step()
        self.step += 1
        self.generation += 1
        self._counters.clear()
        self._open_backward.clear()
        self._modules.clear()
        self.output.drop_metadata()
        self.filter.new_step()

    def _complete_step(self) -> None:
        upcoming = self.step + 1
        if self.config.async_dump and self._keeps_all and self.output.writing() and self._records(upcoming):
            # it will write, as this one did: its directory is opened on the background thread, before
            # this step's files are finished there (ahead.py)
            self.output.open_ahead(self._rank_dir_of(upcoming))
        else:
            self.output.drop_ahead()
        self.flush(final=True)
        self.task.on_step_end(self.step)

    def fail(self, exc: BaseException, where: str, in_step: bool = True) -> None:
        """An error of ours (``where``: what the dump was doing) must not reach the training: the dump stops
        for the rest of the run, one line says so, and what was recorded stays readable (the journal, or
        the step's files written at its end from what reached the journal). ``in_step`` False: met on the
        writer thread, which may be behind the current step (``where`` names the file)."""
        self.finished = True
        self.recording = False
        self.faults.report(exc, where, self.step if in_step else None)

    def guard(self, doing: str, name: str = "") -> Guarded:
        """``with engine.guard("recording", call.forward):`` around the dump's own work, in the engine and in
        the adapters' hooks: busy meanwhile, and an error of ours goes to ``fail`` (faults.Guarded)."""
        return Guarded(self, doing, name)

    def _fail_writing(self, exc: BaseException, what: str) -> None:
        self.fail(exc, what, in_step=False)

    def close(self) -> None:
        """Process exit: make whatever was recorded final."""
        try:
            self.flush(final=True)
            self.output.drop_ahead()
            self.wait()
        except Exception:  # interpreter shutdown: the journal already holds everything
            pass

    # ----- the rank directory ---------------------------------------------------------------
    def rank_dir(self) -> str:
        return self._rank_dir_of(self.step)

    def _rank_dir_of(self, step: int) -> str:
        """``step()`` asks for the next step's directory (opened ahead) and that step's first entry for it
        again: the path is made once."""
        rank = self.adapter.rank()
        known = self._rank_dir_known
        if known is None or known[0] != step or known[1] != rank:
            # one live process per rank folder (rank_lock.py): refused here, the dump stops (engine.fail) with
            # one line and the training goes on; the debugger claims it earlier when the rank is known then
            claim(self.config.dump_path, rank_dir_name(rank), dump_path_field(self.config))
            path = os.path.join(self.config.dump_path, step_dir_name(step), rank_dir_name(rank))
            self._rank_dir_known = known = (step, rank, path)
        return known[2]

    # ----- counters and names ---------------------------------------------------------------
    def _next_index(self, key: str) -> int:
        index = self._counters.get(key, 0)
        self._counters[key] = index + 1
        return index

    # ----- APIs -----------------------------------------------------------------------------
    def api_begin(self, prefix: str, api: str) -> Optional[Call]:
        """A wrapped API is called: its Call, or None when nothing of it is recorded."""
        if not self.recording or self.busy:
            return None
        index = self._next_index(prefix + "." + api)
        forward, backward = api_entry(prefix, api, index, "forward"), api_entry(prefix, api, index, "backward")
        entry_filter = self.filter
        if entry_filter.trivial:
            want_f, want_b = entry_filter.forward, entry_filter.backward
        else:
            want_f, want_b = entry_filter.wants(forward, "forward"), entry_filter.wants(backward, "backward")
            if not (want_f or want_b):
                return None
        modules = self._modules
        return Call(forward, backward, want_f, want_b, modules[-1] if modules else None, self.generation)

    def api_inputs(self, call: Call, args: Sequence[Any], kwargs: Optional[Dict[str, Any]]) -> None:
        """Before the API runs (in-place APIs change their inputs): encode the inputs."""
        if call.want_forward:
            with self.guard("recording the inputs of", call.forward):
                if self.filter.inputs:
                    call.inputs = self.encoder.args(tuple(args), kwargs, call.tensors)
                else:
                    call.inputs = {"input_args": [], "input_kwargs": {}}

    def api_outputs(self, call: Call, output: Any, frames: Optional[List[str]] = None, raised: bool = False) -> None:
        """After the API ran: record its forward entry. ``raised``: it raised instead (torch's checkpoint stops
        a recomputation inside an API that way): the entry has its inputs only, as msprobe writes it."""
        if not call.want_forward or self.finished:
            return
        with self.guard("recording", call.forward):
            entry = self._forward_entry(call, output)
            if raised:
                del entry["output"]
            if self.api_level and self.module_level:
                self._construct(call.forward, call.parent.forward if call.parent else None)
            self._add(call.forward, entry, call.tensors, frames if frames is not None else stack.capture())
            call.tensors = []

    def _forward_entry(self, call: Call, output: Any) -> Dict[str, Any]:
        """The forward entry of an API or module call: its recorded inputs (the call's own dict, taken
        over: nothing else reads it), then its outputs."""
        entry = call.inputs if call.inputs is not None else {"input_args": [], "input_kwargs": {}}
        call.inputs = None
        entry["output"] = self.encoder.outputs(output, call.tensors) if self.filter.outputs else []
        return entry

    # ----- modules ----------------------------------------------------------------------------
    def module_begin(self, path: str, class_name: str, args: Sequence[Any], kwargs: Optional[Dict[str, Any]],
                     prefix: Optional[str] = None) -> Optional[Call]:
        if not self.recording:
            return None
        prefix = prefix or self.adapter.module_prefix
        index = self._next_index(f"{prefix}.{path}.{class_name}")
        forward = module_entry(prefix, path, class_name, "forward", index)
        backward = module_entry(prefix, path, class_name, "backward", index)
        parent = self._modules[-1] if self._modules else None
        call = Call(forward, backward, self.filter.wants(forward, "forward"), self.filter.wants(backward, "backward"),
                    parent, self.generation)
        self._modules.append(call)
        self._construct(forward, parent.forward if parent else None)
        self.api_inputs(call, args, kwargs)
        return call

    def module_end(self, call: Call, output: Any, parameters: Optional[Dict[str, Any]] = None) -> None:
        if self._modules and self._modules[-1] is call:
            self._modules.pop()
        elif call in self._modules:
            self._modules.remove(call)
        if not call.want_forward or self.finished:
            return
        with self.guard("recording", call.forward):
            entry = self._forward_entry(call, output)
            if parameters and self.records_parameters:
                entry["parameters"] = {k: self.encoder.encode(v, "parameters", (k,), call.tensors)
                                       for k, v in parameters.items()}
            self._add(call.forward, entry, call.tensors, stack.capture())
            call.tensors = []

    def param_grad(self, prefix_path_class: Tuple[str, str, str], param: str, grad: Any) -> None:
        """A parameter's gradient of this step (``Module.{path}.{Class}.parameters_grad``)."""
        if not self.opened or self.finished:  # (opened: a hook kept for the next step's window, before it)
            return
        prefix, path, class_name = prefix_path_class
        name = params_grad_entry(prefix, path, class_name)
        if not self.filter.wants(name, "backward"):
            return
        with self.guard("recording", name):
            tensors: List[PendingTensor] = []
            record = self.encoder.encode(grad, param, (), tensors)
            self._add(name, {param: [record]}, tensors, None)

    # ----- backward ----------------------------------------------------------------------------
    def backward_expect(self, call: Call, n_outputs: int, n_args: int, expect_out: int, expect_in: int) -> None:
        """The adapter hooked ``expect_out`` output gradients and ``expect_in`` argument gradients."""
        call.n_outputs, call.n_args = n_outputs, n_args
        call.expect_out, call.expect_in = expect_out, expect_in
        call.grad_in = [None] * n_outputs
        call.grad_out = [None] * n_args
        self._open_backward[id(call)] = call
        if self.module_level and call.want_backward:
            parent = call.parent.backward if call.parent else None
            if self.api_level or call.forward.startswith(self.adapter.module_prefix + "."):
                self._construct(call.backward, parent)

    def backward_grad(self, call: Call, side: str, path: Tuple[int, ...], grad: Any) -> None:
        """A gradient arrived: ``side`` "input" = w.r.t. forward output ``path``, "output" = w.r.t. argument."""
        if call.generation != self.generation or call.emitted or self.finished:
            return
        with self.guard("recording", call.backward):
            if side == "input":
                place(call.grad_in, path, self.encoder.encode(grad, "input", path, call.tensors))
                call.got_out += 1
            else:
                place(call.grad_out, path, self.encoder.encode(grad, "output", path, call.tensors))
                call.got_in += 1
            if call.got_out >= call.expect_out and call.got_in >= call.expect_in:
                self._emit_backward(call)

    def _emit_backward(self, call: Call) -> None:
        call.emitted = True
        self._open_backward.pop(id(call), None)
        entry = {"input": call.grad_in if self.filter.inputs else [],
                 "output": call.grad_out if self.filter.outputs else []}
        self._add(call.backward, entry, call.tensors, None)
        call.tensors = []

    # ----- PrecisionDebugger.save ------------------------------------------------------------------
    def save_variable(self, name: str, value: Any, direction: str = "forward", index: Optional[int] = None) -> int:
        """Record ``Debug.{name}.{index}.{direction}``; returns the index (backward reuses the forward's)."""
        if index is None:
            index = self._next_index("Debug." + name)
        entry_name = api_entry("Debug", name, index, direction)
        if self.finished:
            return index
        with self.guard("recording", entry_name):
            tensors: List[PendingTensor] = []
            data = self.encoder.encode(value, "data", (), tensors)
            self._add(entry_name, {"data": data}, tensors, stack.capture() if direction == "forward" else None)
        return index

    # ----- construct, pending entries and the statistics batch ----------------------------------
    def _construct(self, node: str, parent: Optional[str]) -> None:
        if self.module_level:  # metadata, like stacks: written in bulk by the background thread
            self.output.construct(node, parent)

    def _add(self, name: str, entry: Dict[str, Any], tensors: List[PendingTensor],
             frames: Optional[List[str]]) -> None:
        with self._lock:
            if self.finished:  # (a call recorded while the task finished, or the dump failed)
                return
            if self._keeps_all and not self._pending and (not tensors or all(t.handle is None for t in tensors)):
                # host statistics (the CPU), nothing pending before it: written now, as _flush_pending would
                # (a kill keeps it); device statistics wait for a batch, or for the step's end (async_dump)
                self.output.entry(self.rank_dir, name, entry, tensors, frames)
                return
            self._pending.append((name, entry, tensors, frames))
            if not self.config.async_dump and len(self._pending) >= self.adapter.stats_batch:
                self._flush_pending()

    def _flush_pending(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        handles = pending_handles(pending)
        if handles:
            fill_statistics(pending, self.adapter.stats_to_host(handles))
        for name, entry, tensors, frames in pending:
            if self.finished or not self.task.keep(name, entry):
                continue
            self.output.entry(self.rank_dir, name, entry, tensors, frames)
            self.task.kept(name, self.rank_dir())
            if self.task.finished():
                self.finished = True
                self.recording = False

    def flush(self, final: bool) -> None:
        """Resolve pending statistics and write; ``final`` also emits incomplete backward entries and
        turns the journal into dump.json / stack.json / construct.json."""
        with self._lock:
            if self.faults.failed:
                self._pending = []
                self.output.abandon(final)
                return
            if final:
                for call in list(self._open_backward.values()):
                    if call.got_in or call.got_out:
                        self._emit_backward(call)
                self._open_backward.clear()
            self._flush_pending()
            self.output.flush(final)

    def drop(self, garbage: List[Any]) -> None:
        """Free ``garbage`` (what the adapter's caches held in a window) on the background thread."""
        self.output.drop(garbage)

    def wait(self) -> None:
        """Block until every file queued so far (tensor files, finished steps' JSON files) is written."""
        self.output.wait()
