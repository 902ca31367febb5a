"""msprobe.dump: the framework-free dump engine. Adapters (msprobe.pytorch, msprobe.mindspore) plug in here.

Stable boundary (later changes stay backward compatible)
========================================================

Construction (what a framework's ``PrecisionDebugger`` does)::

    config  = msprobe.schema.load_config(path).overriding(task=..., dump_path=..., level=..., step=...)
    adapter = MyAdapter(...)                       # subclass of msprobe.dump.Adapter
    engine  = msprobe.dump.DumpEngine(config, adapter, tasks=None)
    start():  if engine.begin(): adapter.install(engine, models)      # begin() False = step/rank not selected
    stop():   adapter.uninstall_forward(); engine.end()                # backward of recorded calls still arrives
    step():   stop(); engine.next_step(); adapter.uninstall_all(keep=engine.wants_this_step())  # files final

The adapter (``msprobe/dump/adapter.py``) provides, per tensor:
``framework`` ("pytorch" | "mindspore" | "mindtorch"), ``tensor_suffix`` (".pt" | ".npy"), ``module_prefix``
("Module" | "Cell"), ``stats_batch`` (entries per device→host batch of device statistics), ``is_tensor(v)``,
``tensor_meta(t) -> (type, dtype name as the format spells it, shape, requires_grad)``,
``tensor_stats(t, precision, md5) -> handle`` (reduction started on the tensor's device, no sync),
``stats_to_host(handles) -> [{"Max","Min","Mean","Norm"[,"md5"]}]`` (one transfer per batch),
``snapshot(t)`` (copy safe from in-place changes) and ``save_tensor(snapshot, path)`` (background thread,
or the hook's for a small snapshot that ``snapshot_on_host``),
``describe_value(v)`` for framework scalars (dtype, device...), ``rank()``,
``install(engine, models)`` / ``uninstall_forward()`` for its hooks. Optional: ``summary_modes`` with
``tensor_xor(t) -> handle`` (``summary_mode: xor``), ``unsaved_note(t)`` (why a tensor gets no file: meta,
sparse), ``snapshot_nbytes(snapshot)`` (bounds the writer's backlog), ``snapshot_on_host(snapshot)`` (no device
copy in flight).

Failures: the dump's own work in a hook runs inside ``with engine.guard(doing, name):`` (the engine's own
methods do this): an error there stops dumping for the run, one line on stderr, the training is untouched.
Hooks let errors of the user's code pass unchanged.

The adapter's hooks report to the engine (all names are built by the engine with msprobe.schema.names):

* APIs: ``call = engine.api_begin(prefix, api_name)`` (None = not recorded: call the original and return);
  ``engine.api_inputs(call, args, kwargs)`` before running it (in-place APIs change inputs);
  ``engine.api_outputs(call, output)`` after.  Prefixes: Tensor, Torch, Functional, Distributed, Mint, ...
* Modules / Cells: ``call = engine.module_begin(path, class_name, args, kwargs)`` in the pre-hook (path already
  carries ``"{i}."`` when the user passed a list), ``engine.module_end(call, output, parameters_dict)`` after.
* Backward, aligned with the forward call: the adapter hooks the gradient w.r.t. each forward output and
  each tensor argument (PyTorch: identity views with tensor hooks; MindSpore: the Cell/op bprop or
  value_and_grad's hooks), declares them with ``engine.backward_expect(call, n_outputs, n_args,
  hooked_outputs, hooked_args)`` and reports each with ``engine.backward_grad(call, "input", (i,), g)``
  (w.r.t. output i) or ``engine.backward_grad(call, "output", (j,), g)`` (w.r.t. argument j).
  The entry is written when all hooked gradients arrived, or at step() with nulls for those that never came.
* Parameter gradients: ``engine.param_grad((prefix, path, class_name), param_name, grad)``.
* ``PrecisionDebugger.save``: ``index = engine.save_variable(name, value)``; its gradient with
  ``engine.save_variable(name, grad, "backward", index)``.
* ``engine.busy`` is True inside ``engine.guard`` (the dump runs framework ops of its own): hooks must pass
  calls through then. Only the guard sets it.
* ``engine.api_level`` / ``engine.module_level`` say which hooks the level needs.

Tasks (overflow_check and others): a factory ``factory(config) -> msprobe.dump.TaskPolicy`` registered in
the entry point group ``msprobe.dump.tasks`` under the task's name (or passed as
``DumpEngine(..., tasks={"name": factory})`` / ``PrecisionDebugger(..., tasks=...)``). The engine calls
``policy.keep(entry_name, entry)`` once per entry after its statistics reached the host (records hold final
Max/Min/Mean/Norm; ``msprobe.schema.record_is_finite`` helps); False drops the entry (and its tensor
files). ``policy.finished()`` True stops all recording (e.g. after ``overflow_nums`` overflows);
``policy.save_tensors`` True writes tensor files of kept entries; ``policy.on_step_end(step)`` after each step.

Files: one ``msprobe.schema.RankWriter`` journal of JSON lines per step and rank (``dump_path/step{N}/rank{R}``,
created with the first entry written for that step); every entry whose statistics are on the host is appended
with one write as it is recorded, so a killed process keeps it (device statistics come back in batches of
``stats_batch`` entries, or at stop/step). Stacks and construct records are written in bulk at stop() and
step(). step() writes dump.json/stack.json/construct.json from the entries' journal lines kept in memory
(``RankWriter.finish``; a killed run's journal reads back as the same files) and removes the journal: before it
returns (``async_dump: false``, msprobe's default), or on the background thread (``async_dump: true``);
``engine.wait()`` (``PrecisionDebugger.flush()``) blocks until that and every queued tensor file is done,
and runs at process exit.
"""
from .adapter import Adapter
from .engine import Call, DumpEngine
from .tasks import TASK_GROUP, StatisticsTask, TaskPolicy, TensorTask, resolve_task

__all__ = ["Adapter", "Call", "DumpEngine", "TASK_GROUP", "StatisticsTask", "TaskPolicy", "TensorTask",
           "resolve_task"]
