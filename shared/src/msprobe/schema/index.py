"""The statistics index: one rank's dump.json as a columnar table (Parquet), beside dump.json or in a cache.

The format is ``index_table``'s (its docstring lists the columns), the file ``index_parquet``'s. Where an
index comes from: the dump writes it beside dump.json (``RankWriter(index=True)``, :func:`write_beside`);
``msprobe index`` builds it for dumps without one into a cache folder, keyed by dump.json's bytes. Readers
take it through :func:`rank_table` / :func:`find_index` (``msprobe compare``, ``inspect``,
``overflow_check``), which use an index only while it matches dump.json.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .errors import PathLike, SchemaError
from .index_parquet import (INSTALL_HINT, have_pyarrow, index_key, open_index, pyarrow_modules, read_index,
                            read_index_table, write_index)
from .index_table import (COLUMNS, FORMAT, INDEX_NAME, LEAF_COLUMNS, TEXT_COLUMNS, RankTable, header_of,
                          read_json_table, read_rows_json, row_is_finite, rows_of_dump, table_of_data, table_of_dump)
from .journal import DUMP_NAME, JOURNAL_NAME, journal_recorded

__all__ = ["COLUMNS", "FORMAT", "INDEX_NAME", "INSTALL_HINT", "LEAF_COLUMNS", "TEXT_COLUMNS", "RankTable",
           "build_index", "bytes_key", "cache_dir", "cached_path", "find_index", "have_pyarrow", "index_key",
           "pyarrow_modules", "rank_rows", "rank_table", "read_index", "read_index_table", "read_json_table",
           "read_rows_json", "reader_cache", "row_is_finite", "rows_of_dump", "source_file", "source_key",
           "table_of_data", "table_of_dump", "write_beside", "write_index"]


_HASH_CHUNK = 4 << 20


def source_file(rank_path: Path) -> Path:
    """The file an index of this rank directory is built from: dump.json, or the journal of a killed run."""
    journal = rank_path / JOURNAL_NAME
    return journal if journal_recorded(journal) else rank_path / DUMP_NAME


def source_key(path: PathLike) -> str:
    """``<size>-<sha256 of the bytes>``: what an index was built from (mtimes survive copies and lie; SHA-256 runs
    in the CPU's own instructions on x86 and ARM: 2.5x blake2b's speed here, 1.8 GB/s)."""
    digest = _digest()
    size = 0
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
                digest.update(chunk)
                size += len(chunk)
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read: {exc.strerror}") from None
    return f"{size}-{digest.hexdigest()}"


def bytes_key(blob: bytes) -> str:
    """:func:`source_key` of a file holding ``blob`` (the writer keys the dump.json it has just written)."""
    digest = _digest()
    digest.update(blob)
    return f"{len(blob)}-{digest.hexdigest()}"


def _digest():
    return hashlib.sha256()


def build_index(rank_path: PathLike, out: PathLike) -> Tuple[Path, int]:
    """Build the index of one rank directory into ``out``; (path, rows)."""
    source = source_file(Path(rank_path))
    key = source_key(source)
    table = read_json_table(source)
    return write_index(table, key, out), table.row_count


def write_beside(rank_dir: PathLike, dump_json: bytes) -> Optional[Path]:
    """The dump's index of the dump.json it has just written (``dump_json``: its bytes), beside it; None,
    writing nothing, where pyarrow is not installed (the index is an optional extra of the dump)."""
    if not have_pyarrow():
        return None
    doc = json.loads(dump_json)
    out = Path(rank_dir) / INDEX_NAME
    source = out.with_name(DUMP_NAME)
    return write_index(table_of_data(header_of(doc, source), doc["data"], source), bytes_key(dump_json), out)


def cache_dir(cache: Optional[PathLike] = None) -> Path:
    """``--cache``, else ``${MSPROBE_CACHE:-~/.cache/msprobe}/index``."""
    if cache is not None:
        return Path(cache)
    return Path(os.environ.get("MSPROBE_CACHE") or Path.home() / ".cache" / "msprobe") / "index"


def cached_path(cache: PathLike, key: str) -> Path:
    """Where the index of a source with this key lives in a cache folder (content-addressed: equal ranks share).
    The format's version is in the name: clones of other versions share the cache folder without replacing each
    other's tables (each would find the other's of the wrong format and rebuild it, turn by turn)."""
    return Path(cache) / f"{key}.{FORMAT.rsplit('/', 1)[-1]}.parquet"


def rank_rows(rank_path: PathLike, cache: Optional[PathLike] = None) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(header, rows) of :func:`rank_table`."""
    table = rank_table(rank_path, cache)
    return table.header, table.rows


def rank_table(rank_path: PathLike, cache: Optional[PathLike] = None) -> RankTable:
    """The one reader: a rank directory's table, from a matching index when there is one (beside dump.json,
    or in the ``cache`` folder), else from dump.json. An index of other bytes is never used."""
    found = find_index(rank_path, cache)
    return found if found is not None else read_json_table(source_file(Path(rank_path)))


def find_index(rank_path: PathLike, cache: Optional[PathLike] = None,
               columns: Optional[Sequence[str]] = None) -> Optional[RankTable]:
    """A rank directory's table from a matching index (beside dump.json, or in ``cache``); None when there is
    none, or pyarrow is not installed (``columns``: only these are read)."""
    rank_path = Path(rank_path)
    beside = rank_path / INDEX_NAME
    if not have_pyarrow() or (cache is None and not beside.is_file()):
        return None
    key = source_key(source_file(rank_path))
    for index in (beside, cached_path(cache, key) if cache is not None else None):
        opened = open_index(index) if index is not None and index.is_file() else None
        if opened is not None and opened[1] == key:
            try:
                return read_index_table(index, opened[0], columns)
            except SchemaError:
                continue  # an index that fails its check is none: dump.json is read (msprobe index rebuilds it)
    return None


def reader_cache() -> Optional[Path]:
    """The cache folder ``msprobe index`` fills by default, for readers that look there (None: there is none)."""
    folder = cache_dir()
    return folder if folder.is_dir() else None
