"""The statistics index and ranks as Dask tasks, measured in one run on this machine.

    python bench/index.py                              # 100,000 entries; 16 ranks x 5,000; 64 ranks x 2,000
    python bench/index.py --entries 20000 --scale-ranks 4 --scale-entries 2000 --ranks64-entries 500

Three lines, each a ratio of two times taken here, one after the other:

* index build: ``msprobe index``'s work on one rank (dump.json read and checked, rows made, Parquet written)
  against the JSON-parse floor (``json.loads`` of the same bytes, nothing else). Target: floor / build >= 0.9.
* scaling: ``msprobe compare`` of ``--scale-ranks`` ranks, ``-j 2`` (two local Dask worker processes, their
  start included) against ``-j 1`` (Dask's synchronous scheduler, in the command's process), as a user runs
  them. Target: >= 1.8x throughput.
* 64 ranks: ``msprobe compare`` of 64 ranks (``--ranks64-entries`` each) with ``-j 2``, per-rank time, and the
  same floor per rank (both sides parsed, the CSV written).

The dumps are bench/compare.py's (one file per side, hard-linked into every rank, with the index our dump
writes beside it: compare reads it).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.compare import floor_per_rank, make_tree, measure  # noqa: E402
from msprobe.schema.index import read_json_table, source_key, write_index  # noqa: E402
from msprobe.schema.jsonio import without_cyclic_gc  # noqa: E402

MSPROBE = str(Path(sys.executable).with_name("msprobe"))


def index_vs_floor(rank: Path, out: Path) -> tuple:
    """(build seconds, floor seconds) for one rank, each the best of two."""
    source = rank / "dump.json"
    builds, floors = [], []
    for _ in range(2):
        gc.collect()
        with without_cyclic_gc():  # both as `msprobe index` builds: no cyclic collector walking the parse
            started = time.perf_counter()
            json.loads(source.read_bytes())
            floors.append(time.perf_counter() - started)
            started = time.perf_counter()
            table = read_json_table(source)
            write_index(table, source_key(source), out)
            builds.append(time.perf_counter() - started)
            del table
    return min(builds), min(floors)


def compare(target: Path, golden: Path, out: Path, jobs: int) -> float:
    seconds, _, code = measure([MSPROBE, "compare", "-tp", str(target), "-gp", str(golden), "-o", str(out),
                                "--no-xlsx", "-q", "-j", str(jobs)], out.parent)
    assert code in (0, 1), f"compare exited {code}"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000, help="entries of the indexed rank")
    parser.add_argument("--scale-ranks", type=int, default=16, help="ranks of the 2-workers-against-1 row")
    parser.add_argument("--scale-entries", type=int, default=5_000, help="entries a rank in that row")
    parser.add_argument("--ranks64-entries", type=int, default=2_000, help="entries a rank of the 64-rank row")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="index-bench-"))
    for part in ("one", "scale", "r64"):
        (work / part).mkdir()
    try:
        target, _ = make_tree(work / "one", 1, args.entries)
        build, floor = index_vs_floor(target / "step0" / "rank0", work / "one.parquet")
        mib = (target / "step0" / "rank0" / "dump.json").stat().st_size / 2**20
        print(f"index build, {args.entries} entries ({mib:.0f} MiB): {build:.2f} s ({mib / build:.0f} MiB/s), "
              f"json parse floor {floor:.2f} s: floor/build = {floor / build:.2f} (target >= 0.9)")
        target, golden = make_tree(work / "scale", args.scale_ranks, args.scale_entries)
        one = compare(target, golden, work / "scale" / "j1", 1)
        two = compare(target, golden, work / "scale" / "j2", 2)
        print(f"scaling, {args.scale_ranks} ranks x {args.scale_entries} entries: -j 1 {one:.1f} s, "
              f"-j 2 {two:.1f} s: 2 vs 1 workers = {one / two:.2f}x (target >= 1.8x; "
              f"{os.cpu_count()} CPUs, shared)")
        target, golden = make_tree(work / "r64", 64, args.ranks64_entries)
        seconds = compare(target, golden, work / "r64" / "out", 2)
        floor = floor_per_rank(target, golden, work / "r64" / "out")
        print(f"64 ranks x {args.ranks64_entries} entries, -j 2: {seconds:.1f} s ({seconds / 64:.3f} s/rank); "
              f"floor {floor * 64 / 2:.1f} s ({floor:.3f} s/rank): ours/floor = {seconds / (floor * 64 / 2):.1f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
