"""Where a step's entries go: the rank directory's journal (``RankWriter``), tensor files and the
construct/stack metadata, written through one background writer thread (small host tensor files without
``async_dump``: by the hook).

The engine decides what is recorded; this writes it. An entry's journal record is on the kernel's side when
``entry`` returns (a killed process keeps it); metadata is gathered and written in bulk at ``step()``
(what ``stop()`` gathered goes with it); the three JSON files of a step are written from memory when the
step ends: before ``step()`` returns, tensor files included (msprobe's ``async_dump: false``), or on the
writer thread (``async_dump: true``)."""
from __future__ import annotations

import functools
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from msprobe.schema.names import tensor_file
from msprobe.schema.rank_writer import RankWriter, StacksJson
from msprobe.schema.tree import TENSOR_DIR

from .adapter import Adapter
from .ahead import OpenedAhead
from .entry import PendingTensor
from .writer import TensorFileWriter


WRITTEN_HERE_BYTES = 1 << 20
"""Tensor files of at most this many bytes are written by the hook thread when ``async_dump`` is off; a larger
one's copy and write go to the writer thread, beside the training."""


class StepOutput:
    """The files of one engine: one rank directory at a time, one writer thread for all of them."""

    def __init__(self, header: Dict[str, Any], adapter: Adapter, save_tensors: bool, asynchronous: bool,
                 on_error: Callable[[BaseException, str], None]) -> None:
        """``on_error(exc, what)``: an error of the writer thread (the engine stops dumping)."""
        self._header = header
        self._asynchronous = asynchronous
        self._adapter = adapter
        self._suffix = adapter.tensor_suffix
        self._save_tensors = save_tensors
        self._on_error = on_error
        self._writer: Optional[RankWriter] = None
        self._rank_dir: Optional[str] = None
        self._files: Optional[TensorFileWriter] = None
        self._metadata: List[Tuple[str, str, Any]] = []
        self._ahead: Optional[OpenedAhead] = None
        self._stacks_json = StacksJson()

    def entry(self, rank_dir: Callable[[], str], name: str, entry: Dict[str, Any], tensors: List[PendingTensor],
              frames: Optional[List[str]]) -> None:
        """Write one entry (its tensor files queued first: they add ``data_name`` to the records);
        ``rank_dir()`` is asked only when the step's directory is opened."""
        writer = self.open_writer(rank_dir)
        if self._save_tensors:
            self._queue_files(name, tensors)
        writer.entry(name, entry)
        if frames:
            self._metadata.append(("s", name, frames))

    def open_writer(self, rank_dir: Callable[[], str]) -> RankWriter:
        """The open step's writer; opened now when there is none (the step/rank directory appears with its
        first entry)."""
        writer = self._writer
        return self._open(rank_dir) if writer is None or writer.closed else writer

    def construct(self, node: str, parent: Optional[str]) -> None:
        self._metadata.append(("c", node, parent))

    def drop_metadata(self) -> None:
        """A step ended without writing an entry: its construct nodes go with it."""
        self._metadata = []

    def flush(self, final: bool) -> None:
        """Write the gathered metadata; ``final`` also completes the step's files (dump.json ...)."""
        writer = self._writer
        if writer is None or writer.closed:
            return
        items, self._metadata = self._metadata, []
        if not self._asynchronous:
            if items:
                _write_metadata(writer, items)
            if final:
                self._writer = None
                self.wait()  # the step's tensor files
                writer.finish()
            return
        if items:  # (stop(): deferred to step()'s call, which wakes the writer thread once for both)
            self._file_writer().defer(functools.partial(_write_metadata, writer, items), "metadata")
        if final:
            self._file_writer().call(writer.finish, str(writer.rank_dir))
            self._writer = None
        else:
            writer.flush()

    def abandon(self, final: bool) -> None:
        """After a failure: nothing more is written until the step's end (``final``), which writes its
        dump.json / stack.json / construct.json as usual from what was recorded (errors then are the
        caller's; where they happen, the journal stays)."""
        writer = self._writer
        if not final or writer is None or writer.closed or writer.broken:
            self._metadata = []  # (a journal cut by a failed write takes no more records)
        if final:
            self.flush(final=True)

    def drop(self, garbage: List[Any]) -> None:
        """Free ``garbage`` on the writer thread (after the work queued before it, when it next wakes), off
        the hook thread; at once where no writer thread works for this dump (statistics, async_dump off):
        waking one only for this cost a thread handover at every step()."""
        if not self._asynchronous and not self._save_tensors:
            garbage.clear()
            return
        self._file_writer().release(garbage)

    def wait(self) -> None:
        """Block until every file queued so far (tensor files, finished steps' JSON files) is written."""
        if self._files is not None:
            self._files.drain()

    def writing(self) -> bool:
        """Whether this step has written an entry (its directory is open)."""
        return self._writer is not None and not self._writer.closed

    def open_ahead(self, rank_dir: str) -> None:
        """Open ``rank_dir``'s writer on the background thread, for a step that will record (``ahead.py``)."""
        self.drop_ahead()
        self._ahead = ahead = OpenedAhead(rank_dir, self._new_writer)
        self._file_writer().defer(ahead.run, "open " + rank_dir)  # (step() then calls the finish: one wake)

    def drop_ahead(self) -> None:
        """Remove a writer opened ahead and not used (on the background thread, after it was opened)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            self._remove_ahead(ahead)

    def _remove_ahead(self, ahead: OpenedAhead) -> None:
        self._file_writer().call(ahead.remove, "remove " + ahead.rank_dir)

    def _open(self, rank_dir: Callable[[], str]) -> RankWriter:
        """A new step's writer (``entry`` calls this when there is no open one): the one opened ahead
        when it is ready, else a new one."""
        self._rank_dir = path = rank_dir()
        ahead, self._ahead = self._ahead, None
        writer = ahead.take(path) if ahead is not None else None
        if ahead is not None and writer is None:
            self._remove_ahead(ahead)
        self._writer = writer if writer is not None else self._new_writer(path)
        return self._writer

    def _new_writer(self, path: str, dir_made: bool = False) -> RankWriter:
        """``dir_made``: ``path`` exists (``OpenedAhead`` made it)."""
        tensor_dir = os.path.abspath(os.path.join(path, TENSOR_DIR)) if self._save_tensors else None
        if tensor_dir:
            os.makedirs(tensor_dir, exist_ok=True)
        # index: the statistics index beside dump.json, where the dump's "index" extra (pyarrow) is installed,
        # written by the writer thread (wait() waits for it, as for the tensor files)
        return RankWriter(path, dict(self._header, dump_data_dir=tensor_dir), autoflush=False,
                          make_dir=not dir_made and not tensor_dir, stacks_json=self._stacks_json, index=True,
                          index_later=self._index_later)

    def _index_later(self, work: Callable[[], Any], what: str) -> None:
        files = self._file_writer()
        if files.on_writer_thread():  # async_dump: finish() runs there, and a drain queued meanwhile waits for it
            work()
        else:
            files.call(work, what)

    def _file_writer(self) -> TensorFileWriter:
        if self._files is None:
            adapter = self._adapter
            self._files = TensorFileWriter(adapter.save_tensor, self._on_error, adapter.snapshot_nbytes,
                                           None if self._asynchronous else self._written_here)
        return self._files

    def _written_here(self, snapshot: Any, nbytes: int) -> bool:
        """Without ``async_dump`` a step's files are waited for at its end anyway: one small enough that
        the hand-over to the writer thread costs more than the write is written by the hook (``writer.py``)."""
        return nbytes <= WRITTEN_HERE_BYTES and self._adapter.snapshot_on_host(snapshot)

    def _queue_files(self, name: str, tensors: List[PendingTensor]) -> None:
        files = self._file_writer()
        tensor_dir = os.path.join(self._rank_dir, TENSOR_DIR)
        for tensor in tensors:
            if tensor.snapshot is None:
                continue
            file_name = tensor_file(name, tensor.role, tensor.position, self._suffix)
            tensor.record["data_name"] = file_name
            files.put(tensor.snapshot, os.path.join(tensor_dir, file_name))
            tensor.snapshot = None


def _write_metadata(writer: RankWriter, items: List[Tuple[str, str, Any]]) -> None:
    # stack.capture hands out one list object per distinct stack: one journal record per distinct stack,
    # and one for all construct nodes
    stacks: Dict[int, Tuple[List[str], List[str]]] = {}
    nodes: Dict[str, Any] = {}
    for kind, key, value in items:
        if kind == "s":
            group = stacks.get(id(value))
            if group is None:
                stacks[id(value)] = ([key], value)
            else:
                group[0].append(key)
        else:
            nodes[key] = value
    if nodes:
        writer.constructs(nodes)
    for entries, frames in stacks.values():
        writer.shared_stack(entries, frames)
    writer.flush()
