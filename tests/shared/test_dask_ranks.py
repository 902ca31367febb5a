"""Ranks as tasks on a real Dask cluster: a ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1,
each serving only its own folder of ranks (two "nodes"); a worker killed mid-run is reported, never claimed."""
from __future__ import annotations

import functools
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from msprobe.cli.dask_ranks import run_ranks
from msprobe.cli.index_cmd import index_rank
from msprobe.schema.index import rank_rows, read_rows_json
from tests.support.ci import imported
from tests.support.cli import msprobe
from tests.support.dask_cluster import dask_cluster

imported("distributed")
imported("pyarrow")
GOLDEN = Path(__file__).parents[1] / "dump" / "golden" / "data" / "statistics-mix" / "step0" / "rank"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(address, {node: worker process}, {node: folder}): two workers, one folder of two ranks each."""
    base = tmp_path_factory.mktemp("nodes")
    folders = {}
    for node, ranks in (("a", (0, 1)), ("b", (2, 3))):
        for rank in ranks:
            shutil.copytree(GOLDEN, base / node / "step0" / f"rank{rank}")
        folders[node] = base / node
    with dask_cluster(folders) as (address, workers):
        yield address, workers, folders


def _ranks(folders):
    return [str(p) for f in folders.values() for p in sorted((f / "step0").iterdir())]


def test_each_rank_indexed_on_the_worker_of_its_node(cluster, tmp_path, monkeypatch):
    address, workers, folders = cluster
    outside = tmp_path / "c" / "step0" / "rank9"
    shutil.copytree(GOLDEN, outside)  # a node with no worker
    paths = _ranks(folders) + [str(outside)]
    cache = tmp_path / "cache"
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", address)
    outcomes = run_ranks(functools.partial(index_rank, cache=str(cache)), paths, "indexing", quiet=True)
    for outcome in outcomes[:4]:
        node = "a" if outcome.path.startswith(str(folders["a"])) else "b"
        assert outcome.ok and outcome.worker.endswith(f":{workers[node].pid}"), outcome
        _same = rank_rows(outcome.path, cache) == read_rows_json(Path(outcome.path) / "dump.json")
        assert _same
    assert not outcomes[4].ok and outcomes[4].why == "no Dask worker can read it"
    # the command (as shared/README.md shows it), and the rank no worker reads reported, exit 1
    done = msprobe("index", tmp_path / "c", "--cache", tmp_path / "cache2", "--scheduler", address)
    assert done.returncode == 1, done.stderr
    assert f"{outside}: not indexed: no Dask worker can read it" in done.stdout
    assert "indexed 0 of 1 rank(s)" in done.stdout


def test_worker_killed_mid_run_its_ranks_reported_not_done(cluster):
    address, workers, folders = cluster
    started = threading.Event()

    def slow(path: str) -> str:
        time.sleep(3)
        return path

    paths = _ranks(folders)
    timer = threading.Timer(1.5, lambda: (workers["b"].kill(), started.set()))
    timer.start()
    outcomes = run_ranks(slow, paths, "indexing", scheduler=address, quiet=True)
    timer.join()
    assert started.is_set()
    done = {o.path for o in outcomes if o.ok}
    assert done == {p for p in paths if p.startswith(str(folders["a"]))}
    for outcome in outcomes:
        if not outcome.ok:
            assert "died" in outcome.why and outcome.value is None, outcome


def test_one_job_runs_in_process(tmp_path):
    shutil.copytree(GOLDEN, tmp_path / "rank0")
    outcomes = run_ranks(lambda p: os.getpid(), [str(tmp_path / "rank0")], "x", jobs=1, quiet=True)
    assert outcomes[0].ok and outcomes[0].value == os.getpid()


def test_worker_killed_mid_run_its_ranks_retried_on_another(tmp_path):
    """Workers that read every rank (a shared file system): a dead worker's ranks are run again by Dask on
    the other one, and every rank comes back done, once."""
    paths = []
    for rank in range(6):
        shutil.copytree(GOLDEN, tmp_path / "step0" / f"rank{rank}")
        paths.append(str(tmp_path / "step0" / f"rank{rank}"))

    def slow(path: str) -> str:
        time.sleep(2)
        return path

    with dask_cluster({"a": None, "b": None}) as (address, workers):
        timer = threading.Timer(1.0, workers["b"].kill)
        timer.start()
        outcomes = run_ranks(slow, paths, "indexing", scheduler=address, quiet=True)
        timer.join()
        assert workers["b"].wait(timeout=30) == -signal.SIGKILL  # it did die mid-run, killed
    assert [(o.path, o.ok, o.value) for o in outcomes] == [(p, True, p) for p in paths]
    assert {o.worker.rsplit(":", 1)[1] for o in outcomes} == {str(workers["a"].pid)}
