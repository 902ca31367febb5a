"""``msprobe inspect`` reads the statistics index where one matches dump.json (beside it, or in the cache
``msprobe index`` fills) and prints exactly what it prints from dump.json: our dumps, msprobe's, and a dump
with inf/nan."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from msprobe.schema import find_rank_dirs
from msprobe.schema.index import INDEX_NAME, build_index, find_index
from tests.support.ci import imported
from tests.support.cli import msprobe

imported("pyarrow")
GOLDEN = Path(__file__).parents[1] / "dump" / "golden" / "data"


def _with_inf(tmp: Path) -> Path:
    """statistics-mix with one output's Max inf and one input's Mean nan (rank 0 only)."""
    dump = tmp / "inf"
    shutil.copytree(GOLDEN / "statistics-mix", dump)
    path = dump / "step0" / "rank" / "dump.json"
    doc = json.loads(path.read_text())
    entries = list(doc["data"].values())
    entries[3]["output"][0]["Max"] = "inf" if isinstance(entries[3]["output"], list) else None
    first = entries[5].get("input_args") or []
    if first and isinstance(first[0], dict):
        first[0]["Mean"] = float("nan")
    path.write_text(json.dumps(doc))
    return dump


def _inspect(dump: Path, cache: Path, *options: str) -> str:
    """What the user sees: exit status, output and error (tensor-L1's golden copy keeps no tensor files: exit 2)."""
    done = msprobe("inspect", dump, "-q", *options, env=dict(os.environ, MSPROBE_CACHE=str(cache)))
    return f"{done.returncode}\n{done.stdout}\n{done.stderr}"


def _check(dump: Path, tmp: Path) -> None:
    cache = tmp / "cache"
    as_json = [_inspect(dump, cache, "--json"), _inspect(dump, cache, "--show", "50")]
    ranks = find_rank_dirs(dump)
    assert all(find_index(r.path, cache / "index") is None for r in ranks)
    done = msprobe("index", dump, "-j", "1", "-q", env=dict(os.environ, MSPROBE_CACHE=str(cache)))
    assert done.returncode == 0, done.stderr
    assert all(find_index(r.path, cache / "index") is not None for r in ranks)  # now read from the index
    assert [_inspect(dump, cache, "--json"), _inspect(dump, cache, "--show", "50")] == as_json
    for rank in ranks:  # an index beside dump.json, as the dump writes it
        build_index(rank.path, rank.path / INDEX_NAME)
    assert [_inspect(dump, tmp / "none", "--json"), _inspect(dump, tmp / "none", "--show", "50")] == as_json


@pytest.mark.parametrize("name", ["statistics-mix", "md5-mix", "tensor-L1"])
def test_inspect_from_the_index_prints_what_it_prints_from_json(name, tmp_path):
    dump = tmp_path / name
    shutil.copytree(GOLDEN / name, dump)
    _check(dump, tmp_path)


def test_inspect_of_inf_nan_from_the_index(tmp_path):
    dump = _with_inf(tmp_path)
    _check(dump, tmp_path)
    summary = json.loads(_inspect(dump, tmp_path / "cache", "--json").split("\n", 1)[1])
    assert summary[0]["non_finite"] == [  # the two made here, then the mask golden's run holds in each step
        "Module.blocks.0.ln1.LayerNorm.forward.0: output.0", "Module.blocks.0.attn.qkv.Linear.forward.0: input_args.0",
        "Tensor.masked_fill.0.forward: output.0", "Functional.softmax.0.forward: input_args.0"]
    assert summary[1]["non_finite"] == summary[0]["non_finite"][2:]


@pytest.mark.parametrize("version", ["26.2.0", "8.3.3"])
def test_inspect_of_msprobe_dumps_from_the_index(version, upstream_dump, tmp_path):
    dump = tmp_path / "up"
    shutil.copytree(upstream_dump(version), dump)
    _check(dump, tmp_path)
