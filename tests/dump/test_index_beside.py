"""The dump writes the statistics index beside each rank's dump.json where pyarrow (its ``index`` extra) is
installed; dump.json is byte-identical with and without it, and the one reader takes the index for it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from golden.files import collected
from msprobe.schema import find_rank_dirs
from msprobe.schema.index import INDEX_NAME, index_key, rank_table, read_json_table, source_key
from tests.support.ci import imported

imported("pyarrow")
GOLDEN = Path(__file__).parent / "golden"
NO_PYARROW = "import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None; "


def _dump(out: Path, mode: str, pyarrow: bool) -> Path:
    code = ("" if pyarrow else NO_PYARROW) + f"sys.path.insert(0, {str(GOLDEN.parent)!r}); " \
        f"from golden.run import run; run({str(out)!r}, {mode!r})"
    subprocess.run([sys.executable, "-c", "import sys; " + code], check=True, timeout=300)
    return out / mode


@pytest.mark.parametrize("mode", ["statistics-mix", "md5-mix"])
def test_dump_json_is_the_same_with_and_without_the_index(tmp_path, mode):
    with_index = _dump(tmp_path / "with", mode, True)
    without = _dump(tmp_path / "without", mode, False)
    assert not list(without.rglob(INDEX_NAME))
    ranks = find_rank_dirs(with_index)
    assert len(ranks) == 2 and all((r.path / INDEX_NAME).is_file() for r in ranks)
    same = {name: data for name, data in collected(with_index).items() if not name.endswith("stack.json")}
    assert same == {name: data for name, data in collected(without).items() if not name.endswith("stack.json")}
    for rank in ranks:
        dump_json = rank.path / "dump.json"
        assert index_key(rank.path / INDEX_NAME) == source_key(dump_json)
        from_index, from_json = rank_table(rank.path), read_json_table(dump_json)
        assert from_index.indexed and not from_json.indexed
        assert json.dumps([from_index.header, from_index.rows, from_index.entries]) == \
            json.dumps([from_json.header, from_json.rows, from_json.entries])
        assert len(from_index.entries) == len(json.loads(dump_json.read_text())["data"])
