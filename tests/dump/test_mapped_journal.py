"""The journal written through a shared memory mapping (``_native.MappedJournal``): what a killed process
leaves is read back, the file grows past what was reserved, a forked child cannot corrupt it, and a file
that cannot grow is an OSError."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from msprobe.dump import native
from msprobe.dump.stepfiles import StepWriter
from msprobe.schema import read_journal
from msprobe.schema.journal import JOURNAL_NAME

HEADER = {"task": "statistics", "level": "L1", "framework": "pytorch"}

pytestmark = pytest.mark.skipif(native.helpers() is None, reason="no C compiler or Python headers here")


def _record(i: int) -> dict:
    return {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [i], "Max": i + 0.5}]}


def test_a_killed_writers_journal_keeps_every_complete_record(tmp_path):
    writer = StepWriter(tmp_path / "rank", HEADER, capacity=1 << 16)
    ends = []
    for i in range(3000):  # ~300 KB: the file grows past the 64 KiB reserved, twice and more
        writer.entry(f"Torch.exp.{i}.forward", _record(i))
        ends.append(writer.size())
    path = tmp_path / "rank" / JOURNAL_NAME
    raw = path.read_bytes()  # what a kill now leaves: the records, then zeros up to the reserve
    assert len(raw) > ends[-1] and not raw[ends[-1]:].strip(b"\0")
    for cut in (ends[0], ends[0] + 5, ends[1500] - 2, ends[-1]):  # (a record is whole without its newline)
        path.write_bytes(raw[:cut] + b"\0" * (len(raw) - cut))
        files = read_journal(path)
        kept = [f"Torch.exp.{i}.forward" for i, end in enumerate(ends) if end <= cut]
        assert list(files.dump.data) == kept and files.dump.recovered
        assert all(files.dump.data[name]["output"][0]["Max"] == i + 0.5 for i, name in enumerate(kept))
    path.write_bytes(raw)
    writer.finish()
    data = json.loads((tmp_path / "rank" / "dump.json").read_text())["data"]
    assert len(data) == 3000 and not path.exists()


def test_close_cuts_the_file_to_its_records(tmp_path):
    path = tmp_path / "journal"
    path.write_bytes(b"earlier\n")
    journal = native.helpers().MappedJournal(str(path), 100)
    assert path.stat().st_size == 1 << 17  # what it held and 64 KiB at least, reserved ahead
    journal.append(b"x" * 70000 + b"\n")  # past the reserve: remapped
    journal.append(b"y\n")
    assert journal.used == 8 + 70001 + 2
    journal.close()
    assert path.read_bytes() == b"earlier\n" + b"x" * 70000 + b"\ny\n"
    with pytest.raises(ValueError, match="closed"):
        journal.append(b"z\n")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_leaves_the_parents_journal_alone(tmp_path):
    path = tmp_path / "journal"
    path.touch()
    journal = native.helpers().MappedJournal(str(path), 1 << 16)
    journal.append(b"parent 1\n")
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's exit code says it all)
        try:
            journal.append(b"child\n")  # dropped: the parent's position in the mapping is not the child's
            journal.close()  # and the file is not the child's to cut
        finally:
            os._exit(0)
    assert os.waitpid(child, 0)[1] == 0
    journal.append(b"parent 2\n")
    journal.close()
    assert path.read_bytes() == b"parent 1\nparent 2\n"


def test_a_journal_that_cannot_grow_is_an_oserror(tmp_path):
    """The space is reserved before it is written (a full disk, a file size limit): an OSError where a
    store into an unbacked page would kill the process with SIGBUS; a writer whose journal cannot even be
    reserved writes it with write() instead."""
    script = textwrap.dedent(f"""
        import resource, signal, sys
        sys.path[:0] = {[p for p in sys.path if p]!r}
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 17, 1 << 17))
        from msprobe.dump import native
        from msprobe.dump.stepfiles import StepWriter
        open(sys.argv[1] + "/j", "wb").close()
        journal = native.helpers().MappedJournal(sys.argv[1] + "/j", 1 << 16)
        try:
            for i in range(100):
                journal.append(b"x" * 4095 + b"\\n")
        except OSError as exc:
            print("grow", exc.errno, journal.used)
        writer = StepWriter(sys.argv[1] + "/rank", {{"framework": "pytorch"}}, capacity=1 << 20)
        writer.entry("Torch.exp.0.forward", {{"output": []}})
        print("fallback", writer.size(), open(writer.journal_path).read().count("Torch.exp"))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                          env=dict(os.environ, MSPROBE_CACHE_DIR=str(native.cache_dir())))
    assert done.returncode == 0, done.stderr
    grow, fallback = done.stdout.splitlines()
    assert grow.split()[0] == "grow" and int(grow.split()[2]) == 1 << 17  # all the limit allows, no more
    assert fallback == "fallback 0 1"


def test_a_journal_left_by_a_killed_run_is_continued_after_its_last_whole_record(tmp_path):
    """The same step recorded again by a run started after a kill: the new records follow the old ones,
    without the reserved zeros or a cut record between them."""
    path = tmp_path / "journal"
    path.write_bytes(b'["d", "a", {}]\n["d", "b", {"cut' + b"\0" * 5000)
    journal = native.helpers().MappedJournal(str(path), 1 << 16)
    journal.append(b'["d", "c", {}]\n')
    journal.close()
    assert path.read_bytes() == b'["d", "a", {}]\n["d", "c", {}]\n'
