"""The background file writer: order, a bounded backlog, drain."""
from __future__ import annotations

import threading
import time

from msprobe.dump import writer as writer_module
from msprobe.dump.writer import TensorFileWriter


def test_backlog_is_bounded_and_drain_waits_for_everything(monkeypatch, tmp_path):
    monkeypatch.setattr(writer_module, "_BACKLOG", 4)
    release = threading.Event()
    saved = []

    def slow_save(snapshot, path):
        release.wait()
        saved.append(path)

    files = TensorFileWriter(slow_save)
    producer = threading.Thread(target=lambda: [files.put(object(), str(tmp_path / f"{i}.pt")) for i in range(20)])
    producer.start()
    time.sleep(0.3)
    assert producer.is_alive() and files._queued <= 6  # waiting for room, not piling up copies
    release.set()
    producer.join(10)
    files.drain()
    assert saved == [str(tmp_path / f"{i}.pt") for i in range(20)]


def test_queued_work_runs_in_order_and_the_first_failing_file_stops_the_files_after_it(tmp_path):
    done, errors = [], []

    def save(snapshot, path):
        if snapshot == "bad":
            raise OSError("disk full")
        done.append(path)

    files = TensorFileWriter(save, lambda exc, what: errors.append(f"{what}: {exc}"))
    files.put("a", "a.pt")
    files.put("bad", "bad.pt")
    files.call(lambda: done.append("work"), "work")  # (a step's JSON files: still written)
    files.put("b", "b.pt")
    files.drain()
    assert done == ["a.pt", "work"]
    assert errors == ["writing bad.pt: disk full"]


def test_deferred_work_waits_for_the_next_call_and_keeps_its_place(tmp_path):
    done = []
    files = TensorFileWriter(lambda snapshot, path: done.append(path))
    files.defer(lambda: done.append("metadata"), "metadata")
    time.sleep(0.1)
    assert done == [] and files._thread is None  # nothing woken, nothing started
    files.call(lambda: done.append("finish"), "finish")
    files.defer(lambda: done.append("release"), "release")
    files.put("a", "a.pt")
    files.defer(lambda: done.append("last"), "last")
    files.drain()  # runs what was deferred too
    assert done == ["metadata", "finish", "release", "a.pt", "last"]
    files.defer(lambda: done.append("after"), "after")
    files.drain()
    assert done[-1] == "after" and files._queued == files._done  # (the two drain markers counted too)


def test_deferred_work_stays_ahead_of_the_next_call_while_other_threads_queue_files():
    done = []
    files = TensorFileWriter(lambda snapshot, path: done.append(path))
    stop = threading.Event()

    def spam(name):
        while not stop.is_set():
            files.put(None, name)
            time.sleep(0)
    threads = [threading.Thread(target=spam, args=(f"t{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for i in range(300):
        files.defer(lambda i=i: done.append(("metadata", i)), "metadata")
        files.call(lambda i=i: done.append(("finish", i)), "finish")
    stop.set()
    for thread in threads:
        thread.join()
    files.drain()
    ours = [item for item in done if isinstance(item, tuple)]
    assert ours == [(kind, i) for i in range(300) for kind in ("metadata", "finish")]


def test_a_snapshot_here_accepts_is_written_by_the_caller_and_a_failure_stops_the_files_after_it():
    """``here``: small host files without async_dump (``StepOutput._written_here``); the rest go to the thread."""
    done, errors = [], []

    def save(snapshot, path):
        if snapshot == b"bad":
            raise OSError("disk full")
        done.append((path, threading.current_thread() is threading.main_thread()))

    files = TensorFileWriter(save, lambda exc, what: errors.append(f"{what}: {exc}"), size=len,
                             here=lambda snapshot, nbytes: nbytes <= 4)
    files.put(b"abc", "small.pt")
    assert done == [("small.pt", True)] and files._thread is None  # written before put returned, no thread
    files.put(b"0123456789", "large.pt")
    files.drain()
    assert done[-1] == ("large.pt", False)
    files.put(b"bad", "bad.pt")
    files.put(b"ab", "after.pt")
    files.put(b"0123456789", "large after.pt")
    files.drain()
    assert [path for path, _ in done] == ["small.pt", "large.pt"] and errors == ["writing bad.pt: disk full"]


def test_step_output_writes_small_host_files_in_the_hook_only_without_async_dump():
    from msprobe.dump.adapter import Adapter
    from msprobe.dump.output import WRITTEN_HERE_BYTES, StepOutput

    class HostAdapter(Adapter):
        def snapshot_nbytes(self, snapshot):
            return len(snapshot)

        def snapshot_on_host(self, snapshot):
            return snapshot != b"on device"

    def writer(asynchronous):
        return StepOutput({}, HostAdapter(), True, asynchronous, lambda exc, what: None)._file_writer()

    here = writer(False)._here
    assert here(b"x", 1) and here(b"x", WRITTEN_HERE_BYTES) and not here(b"x", WRITTEN_HERE_BYTES + 1)
    assert not here(b"on device", 9)
    assert writer(True)._here is None
