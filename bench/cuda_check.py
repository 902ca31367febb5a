"""The dump on a GPU against the same run on the CPU, and the device synchronizations a dumped step adds.

Statistics must agree within float32 tolerance; synchronizations are counted by torch's sync debug mode,
which warns at each.

    python bench/cuda_check.py [--device cuda] [--level mix] [--steps 2]

Run by ``bench/gpu_check.sh`` on a lent GPU machine. ``--device cpu`` runs both sides on the CPU (what CI
can do: the comparison and the files, not the synchronizations). Exit 1 when a statistic differs by more
than the tolerance, an entry is missing on one side, or a dumped step adds more synchronizations than one
per ``stats_batch`` entries plus the two flushes of a step (stop() and step()).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import tempfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = [str(REPO / "shared" / "src"), str(REPO / "tools" / "dump" / "src")]
"""Put first on the path by ``main`` (not at import: dump_overhead.py's msprobe worker imports this module
for ``counting_syncs`` and must keep importing upstream's msprobe)"""

STATS = ("Max", "Min", "Mean", "Norm")
TOLERANCE = 1e-3
"""Difference allowed between a GPU and a CPU statistic, relative to the record's largest magnitude (the
Norm: to its own): float32 reductions in another order, and cuBLAS's matrix products against the CPU's"""


def dump(device: str, level: str, steps: int, root: Path) -> float:
    """Dump ``steps`` steps of the tiny transformer on ``device``, each after a step not dumped; the
    synchronizations a dumped step makes beyond the step before it."""
    import torch

    from msprobe.pytorch import PrecisionDebugger, tiny_model

    torch.manual_seed(0)
    model = tiny_model.TinyTransformer().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)  # no fused kernels: the same update on both sides
    tokens, targets = tiny_model.make_batch(device=device)
    debugger = PrecisionDebugger(task="statistics", level=level, dump_path=str(root), step=list(range(steps)))
    added = 0
    for _ in range(steps):
        with counting_syncs(device) as undumped:
            tiny_model.train_step(model, optimizer, tokens, targets)
        with counting_syncs(device) as dumped:
            debugger.start(model=model)
            tiny_model.train_step(model, optimizer, tokens, targets)
            debugger.stop()
            debugger.step()
        added += dumped[0] - undumped[0]
    debugger.flush()
    return added / steps


@contextlib.contextmanager
def counting_syncs(device: str):
    """Yields a list that holds, after the block, the number of synchronizing calls made in it (torch's
    sync debug mode warns at each; none are counted on the CPU)."""
    import torch

    counted: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if device == "cuda":
            torch.cuda.set_sync_debug_mode("warn")
        try:
            yield counted
        finally:
            if device == "cuda":
                torch.cuda.set_sync_debug_mode("default")
    counted.append(sum("synchroniz" in str(warning.message) for warning in caught))


def differences(reference, other, path: str = "") -> list:
    """Lines naming each tensor record of ``other`` whose statistics are off from ``reference``'s by more
    than TOLERANCE of the record's largest magnitude, and each entry or record found on one side only."""
    if isinstance(reference, dict) and isinstance(other, dict):
        if "Max" in reference and "Max" in other:
            return _record_differences(reference, other, path)
        out = []
        for key in sorted(reference.keys() | other.keys(), key=str):
            if key not in reference or key not in other:
                out.append(f"{path}/{key}: on one side only")
            else:
                out.extend(differences(reference[key], other[key], f"{path}/{key}"))
        return out
    if isinstance(reference, list) and isinstance(other, list):
        if len(reference) != len(other):
            return [f"{path}: {len(reference)} items on the CPU, {len(other)} here"]
        return [line for index, (a, b) in enumerate(zip(reference, other))
                for line in differences(a, b, f"{path}/{index}")]
    return []


def _record_differences(reference: dict, other: dict, path: str) -> list:
    values = [abs(v) for record in (reference, other) for v in (record.get("Max"), record.get("Min"))
              if isinstance(v, float) and math.isfinite(v)]
    scale = max(values + [1e-6])
    out = []
    for key in STATS:
        a, b = reference.get(key), other.get(key)
        if not (isinstance(a, float) and isinstance(b, float)):
            if a != b:
                out.append(f"{path}/{key}: {a!r} on the CPU, {b!r} here")
            continue
        own = max(abs(a), abs(b)) if key == "Norm" else scale
        if abs(a - b) > TOLERANCE * own or math.isfinite(a) != math.isfinite(b):
            out.append(f"{path}/{key}: {a!r} on the CPU, {b!r} here")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="the side checked against the CPU")
    parser.add_argument("--level", choices=["L0", "L1", "mix"], default="mix", help="dump level (default mix)")
    parser.add_argument("--steps", type=int, default=2, help="dumped steps compared (default 2)")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps: at least 1")
    sys.path[:0] = SOURCES
    from msprobe.pytorch.adapter import TorchAdapter

    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        dump("cpu", args.level, args.steps, root / "cpu")
        added = dump(args.device, args.level, args.steps, root / args.device)
        found, entries = [], 0
        for step in range(args.steps):
            files = [json.loads((root / side / f"step{step}" / "rank" / "dump.json").read_text())
                     for side in ("cpu", args.device)]
            entries = max(entries, len(files[0]["data"]))
            found += differences(files[0]["data"], files[1]["data"], f"step{step}")
    allowed = math.ceil(entries / TorchAdapter.stats_batch) + 2
    print(f"{args.device} against cpu, {args.level}, {args.steps} steps, {entries} entries a step: "
          f"{len(found)} statistics off by more than {TOLERANCE:g} (relative)")
    for line in found[:20]:
        print("  " + line)
    if args.device == "cuda":
        print(f"device synchronizations a dumped step adds: {added:.1f} (allowed: {allowed})")
    return 1 if found or (args.device == "cuda" and added > allowed) else 0


if __name__ == "__main__":
    sys.exit(main())
