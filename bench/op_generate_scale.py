"""op_generate on a large dump: generation time and peak memory for a dump.json of 10,000 entries.

The API to reproduce is the last one in the file, with no backward entry: the streaming search reads the whole
file, its worst case. Both figures are set against ``json.load`` of the same file (what a reader that loads the
dump whole pays at least), measured in this run: ``python bench/op_generate_scale.py [--entries N]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from msprobe.op_generate import generate, parse_op_config
from msprobe.schema.jsonio import write_json_atomic


def _record(shape, low, high):
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": shape, "Max": high, "Min": low,
            "Mean": (low + high) / 2, "Norm": abs(high) * 10.0, "requires_grad": True}


def write_dump(path: Path, entries: int) -> str:
    """A dump.json in the dump tool's layout (indent 1); returns the API name of its last entry."""
    data = {}
    for index in range(entries):
        low = -1.0 - index * 1e-4
        data[f"Functional.linear.{index}.forward"] = {
            "input_args": [_record([64, 1024], low, 1.0), _record([1024, 1024], low, 0.5), _record([1024], low, 0.1)],
            "input_kwargs": {}, "output": [_record([64, 1024], low * 3, 3.0)]}
    write_json_atomic(path, {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None,
                             "data": data})
    return f"Functional.linear.{entries - 1}"


def _timed(fn, repeats: int):
    """Median time of ``repeats`` runs, then the peak of one more run under tracemalloc (which slows it)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(times), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000, help="API entries in the dump.json (default 10,000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each; the median is printed")
    options = parser.parse_args()
    import torch  # noqa: F401  (the generator checks torch names; its import is not generation time)

    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump.json"
        api = write_dump(dump, options.entries)
        config = parse_op_config({"dump_json_path": str(dump), "api_name": api})
        ours, our_peak = _timed(lambda: generate(config, Path(tmp) / "out", force=True), options.repeats)
        whole, whole_peak = _timed(lambda: json.loads(dump.read_text()), options.repeats)
        size = dump.stat().st_size / 2 ** 20
    print(f"dump.json: {options.entries} entries, {size:.1f} MiB; target {api} (last entry, no backward)")
    print(f"generation: {ours * 1e3:.0f} ms, peak Python memory {our_peak / 2 ** 20:.1f} MiB")
    print(f"json.load of the same file: {whole * 1e3:.0f} ms, peak {whole_peak / 2 ** 20:.1f} MiB")
    print(f"time ratio generation/json.load: {ours / whole:.2f}; memory ratio: {our_peak / whole_peak:.3f}")


if __name__ == "__main__":
    main()
