"""config_check compare speed: two packs of 8 ranks x 100 micro-steps x 200 parameters.

    .venv/bin/python bench/config_check_compare.py [--ranks 8 --steps 100 --params 200]
        [--msprobe-python /path/to/venv-with-mindstudio-probe/bin/python]

Prints the time of each phase of our compare (read + validate, compare, report, total) and, when
--msprobe-python points at an interpreter with mindstudio-probe installed, msprobe's own compare
of the same packs and the ratio between the two, measured in this one run.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from msprobe.core.config_check import formats
from msprobe.core.config_check.compare import compare_items, compare_packs
from msprobe.core.config_check.report import write_report

UPSTREAM = """
import sys, unittest.mock as mock
sys.path = [p for p in sys.path if "/shared/src" not in p and "/tools/" not in p]
for name in ("matplotlib", "matplotlib.pyplot", "twisted", "twisted.internet"):
    sys.modules.setdefault(name, mock.MagicMock())
from msprobe.core.config_check.config_checker import ConfigChecker
import msprobe.core.config_check.checkers
ConfigChecker.compare(sys.argv[1], sys.argv[2], sys.argv[3], "pytorch")
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
                weights[f"decoder.layers.{index // 10}.mlp.weight{index % 10}"] = stats
            entries[formats.weights_entry(step, rank)] = json.dumps(weights).encode()
            dataset = {"args": {"0": {"max": 5.0, "min": 0.0, "mean": 2.5 + step, "norm": 40.0}}, "kwargs": {}}
            entries[formats.dataset_entry(step, rank)] = json.dumps(dataset).encode()
    for rank in range(ranks):
        entries[formats.random_entry(rank)] = formats.dumps(
            {"torch.manual_seed": [{"count": 1, "stack": ["File /x/train.py, line 3, in <module>, seed()"],
                                    "seeds": [1234]}]})
    formats.write_zip(path, entries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--params", type=int, default=200)
    parser.add_argument("--msprobe-python", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cc_bench_"))
    try:
        started = time.perf_counter()
        make_pack(work / "bench.zip", args.ranks, args.steps, args.params, changed=0, seed=0)
        make_pack(work / "cmp.zip", args.ranks, args.steps, args.params, changed=3, seed=1)
        tensors = args.ranks * args.steps * args.params
        print(f"packs: {args.ranks} ranks x {args.steps} micro-steps x {args.params} parameters = {tensors} "
              f"weight statistics each ({(work / 'bench.zip').stat().st_size / 1e6:.1f} MB zip), "
              f"made in {time.perf_counter() - started:.1f}s")
        t0 = time.perf_counter()
        bench, cmp = formats.load_pack(work / "bench.zip"), formats.load_pack(work / "cmp.zip")
        t1 = time.perf_counter()
        results = compare_items(bench, cmp)
        t2 = time.perf_counter()
        write_report(work / "result_only.xlsx", results)
        t3 = time.perf_counter()
        compare_packs(work / "bench.zip", work / "cmp.zip", work / "out")
        t4 = time.perf_counter()
        print(f"read+validate {t1 - t0:.2f}s, compare {t2 - t1:.2f}s, report {t3 - t2:.2f}s; "
              f"whole compare (with extraction and printing) {t4 - t3:.2f}s "
              f"= {tensors * 2 / (t4 - t3):,.0f} tensor statistics/s")
        print(f"weights sheet rows: {len(results[3].rows)} ({results[3].detail})")
        if args.msprobe_python:
            t5 = time.perf_counter()
            done = subprocess.run([args.msprobe_python, "-c", UPSTREAM, str(work / "bench.zip"), str(work / "cmp.zip"),
                                   str(work / "upstream")], capture_output=True, text=True)
            t6 = time.perf_counter()
            if done.returncode:
                print(f"msprobe compare failed: {done.stderr.strip().splitlines()[-1:]}")
            else:
                print(f"msprobe compare of the same packs {t6 - t5:.2f}s; ours is {(t6 - t5) / (t4 - t3):.1f}x faster")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
