"""``kill -9`` while compare writes a file: every result file is whole under its name or not there at all.

The dump is bench/compare.py's (10,000 linear-like API entries, 30,000 rows per side): a table big enough that
writing it takes long enough to be caught in the middle. The kill lands while the file's hidden temporary
``.NAME.<pid>.partial`` exists, and the test checks it is still there after the kill, so the kill did land
mid-write; a writer that wrote the final name directly would leave a cut table under it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from openpyxl import load_workbook

from bench.compare import make_dump_json
from msprobe.schema.jsonio import write_json_atomic
from tests.compare.compare_helpers import msprobe
from tests.support.cli import MSPROBE

ENTRIES = 10_000
# the files in the order compare writes them, each with what its temporary name holds
KINDS = {"csv": ".csv.", "xlsx": ".xlsx.", "summary": ".compare_summary", "html": ".report.html."}
TRIES = 8
_KIND_OF_SUFFIX = {".csv": "csv", ".xlsx": "xlsx", ".json": "summary", ".html": "html"}


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> Dict[str, Path]:
    root = tmp_path_factory.mktemp("big")
    for side, diverge_from in (("golden", ENTRIES), ("target", ENTRIES // 2)):
        folder = root / side / "step0" / "rank0"
        folder.mkdir(parents=True)
        write_json_atomic(folder / "dump.json", make_dump_json(ENTRIES, diverge_from))
    return {"target": root / "target", "golden": root / "golden"}


def _args(dumps: Dict[str, Path], out: Path) -> List[str]:
    return ["compare", "-tp", str(dumps["target"]), "-gp", str(dumps["golden"]), "-o", str(out),
            "--html", str(out / "report.html"), "-q"]


@pytest.fixture(scope="module")
def complete(dumps, tmp_path_factory) -> Dict[str, Path]:
    """The files of a run left alone, to hold the killed runs' files against."""
    out = tmp_path_factory.mktemp("complete") / "out"
    done = msprobe(*_args(dumps, out))
    assert done.returncode == 1, done.stdout + done.stderr
    return _finals(out)


def _finals(out: Path) -> Dict[str, Path]:
    found = {}
    for path in out.iterdir():
        if path.name.startswith("."):
            continue
        kind = _KIND_OF_SUFFIX[path.suffix]
        assert kind not in found, (path, found)  # one of each: nothing renamed aside
        found[kind] = path
    return found


def _kill_while_writing(dumps: Dict[str, Path], out: Path, kind: str) -> Optional[Path]:
    """Start compare, SIGKILL it as soon as the temporary file of ``kind`` shows; that file, or None when the
    process finished first."""
    process = subprocess.Popen([str(MSPROBE), *_args(dumps, out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marker, partial = KINDS[kind], None
    try:
        while partial is None and process.poll() is None:
            if out.is_dir():
                partial = next((out / e.name for e in os.scandir(out)
                                if e.name.endswith(".partial") and marker in e.name), None)
            if partial is None:
                time.sleep(0.0005)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    return partial if partial is not None and process.returncode == -signal.SIGKILL else None


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_run_killed_mid_write_leaves_whole_files_or_none(dumps, complete, tmp_path, kind):
    for attempt in range(TRIES):
        out = tmp_path / f"out{attempt}"
        partial = _kill_while_writing(dumps, out, kind)
        if partial is not None and partial.exists():
            break
    else:
        pytest.fail(f"no kill landed while the {kind} file was being written in {TRIES} tries")
    finals = _finals(out)
    written = list(KINDS)[:list(KINDS).index(kind)]
    # the files written before the one the kill cut are whole; that one and those after it are absent
    assert sorted(finals) == sorted(written), (kind, sorted(finals))
    for name, path in finals.items():
        if name in ("csv", "html"):
            assert path.read_bytes() == complete[name].read_bytes(), path
        elif name == "xlsx":
            assert zipfile.ZipFile(path).testzip() is None
            assert _sheet_rows(path) == 3 * ENTRIES + 1
        else:
            assert json.loads(path.read_text())["result"] == "diverged"
    # a rerun into the same folder is not misled by what the killed one left: its table is whole (the
    # workbook and page left out: 9 of the run's 11 s, and the table is what the rerun could get wrong)
    done = msprobe("compare", "-tp", str(dumps["target"]), "-gp", str(dumps["golden"]), "-o", str(out), "-q",
                   "--no-xlsx")
    assert done.returncode == 1, done.stderr
    reran = _finals_after(out, finals)
    assert reran["csv"].read_bytes() == complete["csv"].read_bytes()


def _sheet_rows(path: Path) -> int:
    return sum(1 for _ in load_workbook(path, read_only=True)["compare_result"].iter_rows(values_only=True))


def _finals_after(out: Path, before: Dict[str, Path]) -> Dict[str, Path]:
    """The files a second run into ``out`` wrote (the killed run's keep their names)."""
    new = [p for p in out.iterdir() if not p.name.startswith(".") and p not in before.values()]
    return {_KIND_OF_SUFFIX[p.suffix]: p for p in new}
