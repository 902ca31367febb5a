"""overflow_check reads the statistics index where one matches dump.json (a finite rank is answered from it)
and runs one Dask task per rank (local workers, or a real ``dask scheduler`` with two ``dask worker``
processes): what it prints and writes is the same every way, and a worker killed mid-run loses nothing."""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from msprobe.schema import find_rank_dirs
from msprobe.schema.index import find_index
from tests.overflow.overflow_builders import api, write_rank
from tests.support.ci import imported
from tests.support.cli import assert_one_line_error, msprobe
from tests.support.dask_cluster import dask_cluster

imported("pyarrow")
imported("distributed")


def _tree(root: Path, ranks: int = 6) -> Path:
    """step0 of ``ranks`` ranks: rank 1 overflows before the all_reduce, rank 0 receives inf through it, the
    others stay finite."""
    ok, inf = torch.ones(2), torch.full((2,), float("inf"))
    for rank in range(ranks):
        first = ("Torch.exp.0.forward", api([ok], [inf if rank == 1 else ok]))
        reduce_out = inf if rank in (0, 1) else ok
        write_rank(root / "step0" / f"rank{rank}", [first, ("Distributed.all_reduce.0.forward",
                                                            api([inf if rank == 1 else ok], [reduce_out]))])
    return root


def _check(root: Path, cwd: Path, cache: Path, *options: str) -> dict:
    """What the user sees: exit status, the --json summary and the reports written (contents)."""
    out = cwd / f"out{len(list(cwd.glob('out*')))}"
    done = msprobe("overflow_check", "-i", root, "-o", out, "--json", "-q", *options, cwd=cwd,
                   env=dict(os.environ, MSPROBE_CACHE=str(cache), OMP_NUM_THREADS="1"))
    reports = sorted(json.loads(p.read_text()) for p in out.glob("*.json")) if out.is_dir() else []
    return {"rc": done.returncode, "stdout": json.loads(done.stdout), "reports": reports, "err": done.stderr}


def test_from_the_index_and_on_dask_as_from_json(tmp_path):
    root = _tree(tmp_path / "dump")
    cache = tmp_path / "cache"
    from_json = _check(root, tmp_path, cache)
    assert from_json["rc"] == 0 and from_json["stdout"][0]["origin"]["rank"] == "rank1", from_json
    done = msprobe("index", root, "-j", "1", "-q", env=dict(os.environ, MSPROBE_CACHE=str(cache)))
    assert done.returncode == 0, done.stderr
    assert all(find_index(r.path, cache / "index") is not None for r in find_rank_dirs(root))
    assert _check(root, tmp_path, cache)["stdout"] == from_json["stdout"]
    for got in (_check(root, tmp_path, cache), _check(root, tmp_path, cache, "-j", "2"),
                _check(root, tmp_path, tmp_path / "none", "-j", "2")):
        assert {k: got[k] for k in ("rc", "stdout", "reports")} == \
            {k: from_json[k] for k in ("rc", "stdout", "reports")}
    with dask_cluster({"a": None, "b": None}) as (address, _):
        got = _check(root, tmp_path, cache, "--scheduler", address)
    assert {k: got[k] for k in ("rc", "stdout", "reports")} == {k: from_json[k] for k in ("rc", "stdout", "reports")}


def test_a_rank_no_worker_reads_is_an_error_naming_it(tmp_path):
    root = _tree(tmp_path / "dump", ranks=2)
    with dask_cluster({"a": tmp_path / "elsewhere"}) as (address, _):
        done = msprobe("overflow_check", "-i", root, "-o", tmp_path / "o", "-q", "--scheduler", address,
                       cwd=tmp_path)
    assert_one_line_error(done, f"{root / 'step0' / 'rank0'}: not analysed: no Dask worker can read it "
                                "(and 1 more rank(s) not analysed)")
    assert not (tmp_path / "o").exists()
