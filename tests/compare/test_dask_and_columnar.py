"""compare runs one Dask task per rank pair: in this process (-j 1), on local workers (-j 2), and on a real
``dask scheduler`` with two ``dask worker`` processes, also with each worker seeing only its own "node"'s
ranks; the summary, the report and every table are the same each way. Above ``table_max_rows`` a rank's full
table is written as Parquet instead of CSV (``--csv`` forces the CSV), holding the same cells."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from msprobe.compare.config import CompareConfig
from msprobe.compare.run import run_compare
from msprobe.schema.index import INDEX_NAME
from tests.compare.compare_helpers import PLANTED_API, msprobe
from tests.support.ci import imported
from tests.support.cli import assert_one_line_error
from tests.support.dask_cluster import dask_cluster

parquet = imported("pyarrow.parquet")
imported("distributed")
RANKS = 4


def _tree(source: Path, root: Path) -> Path:
    """``RANKS`` ranks of one step, each a copy of the tiny model's single-rank dump."""
    [rank] = [p.parent for p in source.rglob("dump.json")]
    for number in range(RANKS):
        shutil.copytree(rank, root / "step0" / f"rank{number}")
    return root


def _seen(out: Path, done) -> dict:
    """What a user sees: exit status, the report (folder named alike), the summary and every table."""
    tables = {p.name.split("_2")[0]: p.read_text() for p in sorted(out.glob("compare_result_*.csv"))}
    stamp = re.compile(r"_\d{14}\.csv")  # the run's time in the file names

    def same(text: str) -> str:
        return stamp.sub(".csv", text.replace(str(out), "OUT"))
    summary = (out / "compare_summary.json").read_text()
    return {"rc": done.returncode, "stdout": same(done.stdout), "summary": same(summary), "tables": tables}


@pytest.fixture(scope="module")
def trees(tiny_dumps, tmp_path_factory):
    base = tmp_path_factory.mktemp("trees")
    return _tree(tiny_dumps["statistics_planted"], base / "t"), _tree(tiny_dumps["statistics"], base / "g")


def _compare(target: Path, golden: Path, out: Path, *options) -> dict:
    done = msprobe("compare", "-tp", target, "-gp", golden, "-o", out, "--no-xlsx", "-q", *options)
    assert done.returncode == 1, done.stderr
    return _seen(out, done)


def _read(seen: dict) -> list:
    return [rank["read"] for rank in json.loads(seen["summary"])["ranks"]]


def test_in_process_local_workers_and_a_cluster_give_the_same_results(trees, tmp_path):
    """Each side read from the index the dump wrote beside dump.json; the same results from dump.json alone."""
    target, golden = trees
    alone = _compare(target, golden, tmp_path / "one", "-j", "1")
    assert len(alone["tables"]) == RANKS and PLANTED_API in alone["stdout"]
    assert _read(alone) == [{"target": "index", "golden": "index"}] * RANKS
    assert _compare(target, golden, tmp_path / "two", "-j", "2") == alone
    with dask_cluster({"a": None, "b": None}) as (address, _):
        assert _compare(target, golden, tmp_path / "cluster", "--scheduler", address) == alone
        os.environ["DASK_SCHEDULER_ADDRESS"] = address
        try:
            assert _compare(target, golden, tmp_path / "env") == alone
        finally:
            del os.environ["DASK_SCHEDULER_ADDRESS"]
        plain = tmp_path / "plain"  # the trees without their indexes: read from dump.json, on the cluster
        for side in (target, golden):
            shutil.copytree(side, plain / side.name, ignore=shutil.ignore_patterns(INDEX_NAME))
        from_json = _compare(plain / target.name, plain / golden.name, tmp_path / "json", "--scheduler", address)
    assert _read(from_json) == [{"target": "dump.json", "golden": "dump.json"}] * RANKS
    assert from_json["tables"] == alone["tables"]
    same = {key: from_json[key].replace(str(plain), str(target.parent)).replace('"dump.json"', '"index"')
            for key in ("stdout", "summary")}
    assert same == {key: alone[key] for key in same}


def test_each_worker_compares_the_ranks_of_its_node(trees, tmp_path):
    """Worker a reads ranks 0-1 of both dumps, worker b ranks 2-3: every pair compared where it lies."""
    target, golden = trees
    alone = _compare(target, golden, tmp_path / "one", "-j", "1")
    roots = {node: os.pathsep.join(str(side / "step0" / f"rank{n}") for side in (target, golden) for n in ranks)
             for node, ranks in (("a", (0, 1)), ("b", (2, 3)))}
    with dask_cluster(roots) as (address, _):
        assert _compare(target, golden, tmp_path / "nodes", "--scheduler", address) == alone
    lonely = {"a": os.pathsep.join(str(target / "step0" / f"rank{n}") for n in range(RANKS))}
    with dask_cluster(lonely) as (address, _):  # no worker reads the golden side: refused, naming the pair
        done = msprobe("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "none", "--scheduler", address)
    assert_one_line_error(done, f"msprobe: error: {target / 'step0' / 'rank0'} vs {golden / 'step0' / 'rank0'}: "
                                "not compared: no Dask worker can read it (and 3 more rank pair(s) not compared)")
    assert not (tmp_path / "none" / "compare_summary.json").exists()


def _cells(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_above_the_row_limit_the_full_table_is_parquet_with_the_csv_cells(trees, tmp_path):
    target, golden = trees
    rank = (target / "step0" / "rank0", golden / "step0" / "rank0")
    small = CompareConfig(output_dir=tmp_path / "table", xlsx=False, quiet=True, table_max_rows=10)
    as_table = run_compare(*rank, small)
    as_csv = run_compare(*rank, CompareConfig(output_dir=tmp_path / "csv", xlsx=False, quiet=True,
                                              table_max_rows=10, force_csv=True))
    [report], [reference] = as_table.summary["ranks"], as_csv.summary["ranks"]
    assert list(report["files"]) == ["table"] and report["files"]["table"].endswith(".parquet")
    assert report["first_divergence"] == reference["first_divergence"] and report["rows"] == reference["rows"] > 10
    table = parquet.read_table(report["files"]["table"])
    header, *rows = _cells(Path(reference["files"]["csv"]))
    assert table.column_names == header and table.num_rows == len(rows)
    got = [["" if v is None else repr(v) if isinstance(v, float) else v for v in row.values()]
           for row in table.to_pylist()]
    assert got == rows
    # at the default limit the tiny dump's table stays CSV; --csv is accepted as the README says
    done = msprobe("compare", "-tp", rank[0], "-gp", rank[1], "-o", tmp_path / "cli", "--no-xlsx", "--csv", "-q")
    assert done.returncode == 1 and len(list((tmp_path / "cli").glob("compare_result_*.csv"))) == 1, done.stderr
