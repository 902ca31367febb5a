"""config_check compare at real size: two packs of 8 ranks x 100 micro-steps x 200 parameters.

    .venv/bin/python bench/config_check_compare.py [--ranks 8 --steps 100 --params 200 --changed 200]
        [--upstream-python ~/.cache/msprobe/upstream/mindstudio-probe-26.2.0/bin/python]

In the cmp pack every weight differs from the bench pack from micro-step 1 on (``--changed`` sets
how many parameters differ). Prints the time of each phase of our compare (read + validate,
compare, report), the whole compare, the size of what it wrote and, with --upstream-python (an
interpreter with mindstudio-probe installed: ``python -m tests.support.upstream_msprobe 26.2.0``
makes one), msprobe's own compare of the same packs and the ratio of the two times, measured in
this one run.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from msprobe.core.config_check import formats
from msprobe.core.config_check.compare import compare_items, compare_packs, prepare_output
from msprobe.core.config_check.report import write_report

UPSTREAM = """
import sys, unittest.mock as mock
sys.path = [p for p in sys.path if "/shared/src" not in p and "/tools/" not in p]
for name in ("matplotlib", "matplotlib.pyplot", "twisted", "twisted.internet"):
    sys.modules.setdefault(name, mock.MagicMock())
from msprobe.core.config_check.config_checker import ConfigChecker
import msprobe.core.config_check.checkers
ConfigChecker.compare(sys.argv[1], sys.argv[2], sys.argv[3])
"""


def make_pack(path: Path, ranks: int, steps: int, params: int, changed: int, seed: int) -> None:
    rng = random.Random(seed)
    entries = {"env": formats.dumps({"PATH": "/usr/bin", "NCCL_ALGO": "Ring"}),
               "pip": formats.pip_text({"torch": "2.1.0", "numpy": "1.26.4"})}
    for step in range(steps):
        for rank in range(ranks):
            weights = {}
            for index in range(params):
                stats = {"max": 1.0 + index, "min": -1.0 - index, "mean": 0.001 * index + step, "norm": 10.0 + rank}
                if index < changed and step > 0:
                    stats["mean"] += rng.uniform(-1e-3, 1e-3)
                    stats["norm"] *= 1 + rng.uniform(-1e-4, 1e-4)
                weights[f"decoder.layers.{index // 10}.mlp.weight{index % 10}"] = stats
            entries[formats.weights_entry(step, rank)] = json.dumps(weights).encode()
            dataset = {"args": {"0": {"max": 5.0, "min": 0.0, "mean": 2.5 + step, "norm": 40.0}}, "kwargs": {}}
            entries[formats.dataset_entry(step, rank)] = json.dumps(dataset).encode()
    for rank in range(ranks):
        entries[formats.random_entry(rank)] = formats.dumps(
            {"torch.manual_seed": [{"count": 1, "stack": ["File /x/train.py, line 3, in <module>, seed()"],
                                    "seeds": [1234]}]})
    formats.write_zip(path, entries)


def _size(folder: Path) -> str:
    files = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}
    return ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in sorted(files.items()))


def ours(work: Path, tensors: int) -> float:
    t0 = time.perf_counter()
    bench, cmp = formats.load_pack(work / "bench.zip"), formats.load_pack(work / "cmp.zip")
    t1 = time.perf_counter()
    results = compare_items(bench, cmp)
    t2 = time.perf_counter()
    prepare_output(work / "report_only", [])
    write_report(work / "report_only", results, "bench.zip", "cmp.zip")
    t3 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        compare_packs(work / "bench.zip", work / "cmp.zip", work / "out", quiet=True)
    whole = time.perf_counter() - t3
    weights = results[3]
    print(f"ours: read+validate {t1 - t0:.2f}s, compare {t2 - t1:.2f}s, report {t3 - t2:.2f}s; whole compare "
          f"(with unpacking both packs) {whole:.2f}s = {tensors * 2 / whole:,.0f} tensor statistics/s")
    print(f"  weights sheet: {len(weights.rows)} rows, one per parameter ({weights.detail[:100]}...)")
    print(f"  weights.csv: {len(weights.details)} rows; files written: {_size(work / 'out')}")
    return whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8, help="ranks in each pack (default 8)")
    parser.add_argument("--steps", type=int, default=100, help="micro-steps in each pack (default 100)")
    parser.add_argument("--params", type=int, default=200, help="parameters of the model (default 200)")
    parser.add_argument("--changed", type=int, default=None,
                        help="parameters whose weights differ in the cmp pack (default: all of them)")
    parser.add_argument("--upstream-python", "--msprobe-python", dest="upstream_python", default=None,
                        help="python of a venv with mindstudio-probe (e.g. 26.2.0): its compare is timed too")
    args = parser.parse_args()
    changed = args.params if args.changed is None else args.changed
    work = Path(tempfile.mkdtemp(prefix="cc_bench_"))
    try:
        started = time.perf_counter()
        make_pack(work / "bench.zip", args.ranks, args.steps, args.params, changed=0, seed=0)
        make_pack(work / "cmp.zip", args.ranks, args.steps, args.params, changed=changed, seed=1)
        tensors = args.ranks * args.steps * args.params
        print(f"packs: {args.ranks} ranks x {args.steps} micro-steps x {args.params} parameters = {tensors} weight "
              f"statistics each, {changed} parameters differ ({(work / 'bench.zip').stat().st_size / 1e6:.1f} MB "
              f"zip), made in {time.perf_counter() - started:.1f}s")
        whole = ours(work, tensors)
        if args.upstream_python:
            t5 = time.perf_counter()
            done = subprocess.run([args.upstream_python, "-c", UPSTREAM, str(work / "bench.zip"),
                                   str(work / "cmp.zip"), str(work / "upstream")], capture_output=True, text=True)
            theirs = time.perf_counter() - t5
            if done.returncode or not (work / "upstream" / "result.xlsx").is_file():
                print(f"msprobe compare failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            else:
                print(f"msprobe compare of the same packs {theirs:.2f}s ({_size(work / 'upstream')}); "
                      f"ours/msprobe = {whole / theirs:.3f}x of its time ({theirs / whole:.1f}x faster)")
        else:
            print("msprobe: not measured (no --upstream-python given)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
