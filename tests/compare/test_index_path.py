"""compare reads each side from its statistics index when one matches its dump.json, and writes what the JSON
path writes: the tables, the summary (less the ``read`` field saying which path each side took) and the report.
Our dumps in every mode, msprobe 8.3.3 / 26.2.0 dumps made live, and msprobe's own test files, indexed by
``msprobe index`` into the cache compare looks in. (On a Dask cluster: test_dask_and_columnar.)"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from msprobe.compare.config import CompareConfig
from msprobe.compare.run import run_compare
from msprobe.schema import MsprobeError, find_rank_dirs, load_dump
from msprobe.schema.index import INDEX_NAME
from tests.compare.compare_helpers import PLANTED_API
from tests.support.ci import imported
from tests.support.cli import assert_one_line_error, msprobe

pyarrow = imported("pyarrow")
parquet = imported("pyarrow.parquet")
GOLDEN = Path(__file__).parents[1] / "dump" / "golden" / "data"
OURS = ["statistics-mix", "md5-mix", "statistics-L0", "statistics-L1"]
_STAMP = re.compile(r"_\d{14}\.")


def _compare(target: Path, golden: Path, out: Path) -> tuple:
    """(which path each side took, what the user gets: summary and tables, run-specific names made alike)."""
    run = run_compare(target, golden, CompareConfig(output_dir=out, xlsx=False, quiet=True, workers=1))
    reads = [rank.pop("read") for rank in run.summary["ranks"]]
    files = [Path(f) for rank in run.summary["ranks"] for f in rank["files"].values()]
    seen = _STAMP.sub(".", json.dumps(run.summary).replace(str(out), "OUT"))
    return reads, (run.exit_code, seen, [f.read_text() for f in files])


def _both_ways(target: Path, golden: Path, tmp_path: Path, monkeypatch) -> tuple:
    """The comparison from dump.json, then from the indexes: those the dump wrote beside dump.json (set aside
    for the first run) or, where it wrote none, those ``msprobe index`` builds; asserts both said the same."""
    monkeypatch.setenv("MSPROBE_CACHE", str(tmp_path / "cache"))
    beside = {p: tmp_path / f"aside{n}" for n, p in enumerate(sorted({*target.rglob(INDEX_NAME),
                                                                       *golden.rglob(INDEX_NAME)}))}
    for index, aside in beside.items():
        index.rename(aside)
    reads, from_json = _compare(target, golden, tmp_path / "json")
    assert reads == [{"target": "dump.json", "golden": "dump.json"}] * len(reads)
    for index, aside in beside.items():
        aside.rename(index)
    for side in ({target, golden} if not beside else ()):  # (the environment as monkeypatched: the same cache)
        done = msprobe("index", side, "-j", "1", "-q", env=dict(os.environ))
        assert done.returncode == 0, done.stderr
    reads, from_index = _compare(target, golden, tmp_path / "index")
    assert reads == [{"target": "index", "golden": "index"}] * len(reads)
    assert from_index == from_json
    return from_json


def _copy(source: Path, dest: Path, indexes: bool = False) -> Path:
    shutil.copytree(source, dest, ignore=None if indexes else shutil.ignore_patterns("*.parquet"))
    return dest


@pytest.mark.parametrize("name", OURS)
def test_our_dumps_compare_alike_from_the_index(name, tmp_path, monkeypatch):
    dump = _copy(GOLDEN / name, tmp_path / "dump")
    step0, step1 = (r.path for r in find_rank_dirs(dump))
    code, seen, tables = _both_ways(step1, step0, tmp_path, monkeypatch)
    assert code == 1 and tables and all(len(t.splitlines()) > 20 for t in tables)  # the two steps differ


@pytest.mark.parametrize("task", ["tensor", "statistics"])
def test_the_index_the_dump_writes_beside_gives_the_same_comparison(task, tiny_dumps, tmp_path, monkeypatch):
    """The tiny model's dumps, with the index our dump writes beside dump.json; tensor mode reads the files."""
    target, golden = (_copy(tiny_dumps[name], tmp_path / name, indexes=True) for name in (task + "_planted", task))
    assert list(target.rglob(INDEX_NAME)) and list(golden.rglob(INDEX_NAME))
    code, seen, tables = _both_ways(target, golden, tmp_path, monkeypatch)
    assert code == 1 and PLANTED_API in seen and (task != "tensor" or "Cosine" in tables[0])


@pytest.mark.parametrize("version", ["8.3.3", "26.2.0"])
def test_msprobe_dumps_compare_alike_from_the_index(version, upstream_dump, tmp_path, monkeypatch):
    dump = _copy(upstream_dump(version), tmp_path / "dump")
    step0, step1 = (r.path for r in find_rank_dirs(dump))
    code, seen, tables = _both_ways(step1, step0, tmp_path, monkeypatch)
    assert tables and all(len(t.splitlines()) > 20 for t in tables)


def test_msprobe_test_files_compare_alike_from_the_index(peer_fixtures, tmp_path, monkeypatch):
    """msprobe's own files, each against itself: every cell as dump.json spells it (integers, "inf", numbers
    in the checksum column) comes back from the index."""
    compared = 0
    for number, path in enumerate(sorted(peer_fixtures.rglob("dump.json"))):
        try:
            load_dump(path)
        except MsprobeError:
            continue  # files msprobe's tests feed as broken
        rank = _copy(path.parent, tmp_path / f"f{number}" / "rank")
        code, _, tables = _both_ways(rank, rank, tmp_path / f"f{number}", monkeypatch)
        compared += bool(tables)
    assert compared >= 8


def test_an_index_of_other_bytes_is_not_read(tmp_path, monkeypatch):
    """The dump.json changed after it was indexed: compare reads dump.json, never the stale index."""
    dump = _copy(GOLDEN / "statistics-L0", tmp_path / "dump")
    step0, step1 = (r.path for r in find_rank_dirs(dump))
    monkeypatch.setenv("MSPROBE_CACHE", str(tmp_path / "cache"))
    assert msprobe("index", dump, "-j", "1", "-q", env=dict(os.environ)).returncode == 0
    doc = json.loads((step1 / "dump.json").read_text())
    doc["data"].popitem()
    (step1 / "dump.json").write_text(json.dumps(doc))
    reads, _ = _compare(step1, step0, tmp_path / "out")
    assert reads == [{"target": "dump.json", "golden": "index"}]


def _forge(index: Path, column: str, values: list, type_=None) -> None:
    """Rewrite one column of an index, its metadata (the source key too) kept: what a stranger can send."""
    table = parquet.read_table(index)
    at = table.column_names.index(column)
    array = pyarrow.array(values, type=type_ or table.schema.field(column).type)
    parquet.write_table(table.set_column(at, column, array).replace_schema_metadata(table.schema.metadata), index)


def test_an_index_from_a_stranger_is_checked(tiny_dumps, tmp_path, monkeypatch):
    """A forged index under the right key: a column of another type is no index (dump.json is read); text
    that is not what its column holds is refused in one line naming the file, exit 2, never a traceback."""
    monkeypatch.setenv("MSPROBE_CACHE", str(tmp_path / "cache"))
    target, golden = (_copy(tiny_dumps[name], tmp_path / name, indexes=True)
                      for name in ("statistics_planted", "statistics"))
    [index] = target.rglob(INDEX_NAME)
    rows = parquet.read_table(index).num_rows
    _forge(index, "Max", [str(i) for i in range(rows)], type_=pyarrow.string())
    reads, _ = _compare(target, golden, tmp_path / "typed")
    assert reads == [{"target": "dump.json", "golden": "index"}]
    [index] = _copy(tiny_dumps["statistics_planted"], tmp_path / "again", indexes=True).rglob(INDEX_NAME)
    plain = parquet.read_table(index).column("value").to_pylist()
    _forge(index, "value", [None if v is None else "[" * 100_000 for v in plain])
    done = msprobe("compare", "-tp", tmp_path / "again", "-gp", golden, "-o", tmp_path / "out", env=dict(os.environ))
    assert_one_line_error(done, f"msprobe: error: {index}: field 'value (row ", "expected the JSON text of an object")
    exact = parquet.read_table(index).column("exact").to_pylist()
    _forge(index, "value", plain)
    _forge(index, "exact", ['{"Max": [1]}' if e is None else e for e in exact])  # a statistic no number
    done = msprobe("compare", "-tp", tmp_path / "again", "-gp", golden, "-o", tmp_path / "out", env=dict(os.environ))
    assert_one_line_error(done, f"msprobe: error: {index}: field 'exact (row ", "numbers or strings")
