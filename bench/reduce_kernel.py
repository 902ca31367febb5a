"""The statistics kernel (``msprobe.dump._kernels.stats``: Max, Min, sum, sum of squares of a dense CPU block in one pass)
against torch's own four reductions of the same tensor, per dtype, in one process.

    python bench/reduce_kernel.py [--numel 65536] [--rounds 7]

Each round times both on the same tensor, one after the other, and the best round of each is kept (on
a shared machine the fastest round is the one least disturbed). torch's way, as msprobe computes its
statistics: the tensor widened to float32 (float64 stays), then max, min, sum and norm, four passes.
"""
from __future__ import annotations

import argparse
import sys
import time

from dump_overhead import SOURCES  # (beside this file: its directory is first on the path)

sys.path[:0] = SOURCES


def _best(run, rounds: int, calls: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=65536, help="elements of the tensor reduced (default 65536)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds; the best of each side is kept")
    args = parser.parse_args()
    import torch

    from msprobe.dump import kernels

    torch.set_num_threads(1)
    kernel = kernels.loaded()
    if kernel is None:
        print("msprobe.dump._kernels is not built in this environment: nothing to measure", file=sys.stderr)
        return 1
    print(f"{args.numel} elements, best of {args.rounds} rounds, AVX2 loop: {bool(kernel.has_avx2)}")
    print(f"{'dtype':10s} {'ours G/s':>9s} {'torch G/s':>10s} {'torch/ours time':>16s}")
    kinds = {torch.float32: kernels.F32, torch.bfloat16: kernels.BF16, torch.float16: kernels.F16,
             torch.float64: kernels.F64}
    for dtype, kind in kinds.items():
        tensor = torch.randn(args.numel).to(dtype)
        address = tensor.data_ptr()

        def ours():
            kernel.stats(address, args.numel, kind)

        def theirs():
            wide = tensor if dtype == torch.float64 else tensor.float()
            wide.max(), wide.min(), wide.sum(), wide.norm()

        calls = max(1, 2_000_000 // args.numel)
        ours(), theirs()
        mine = _best(ours, args.rounds, calls)
        other = _best(theirs, args.rounds, calls)
        print(f"{str(dtype).replace('torch.', ''):10s} {args.numel / mine / 1e9:9.2f} {args.numel / other / 1e9:10.2f} "
              f"{other / mine:15.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
