"""Benchmark of ``msprobe config_check -c`` on two ~1 GB Megatron checkpoints (TP2 x PP2 vs TP1).

Prints, measured in this one run (``--repeat`` times, alternating, because a shared machine is noisy):
  read ratio   = time to ``cat`` both checkpoints to /dev/null / time to compare them (target >= 0.7),
                 cold (the page cache of these files dropped: ``posix_fadvise(DONTNEED)`` evicts exactly
                 them, as ``echo 3 > /proc/sys/vm/drop_caches`` would, without emptying other processes'
                 cache) and warm (files cached);
  CPU          = user + system seconds of the comparing process (what the machine's load does not change);
  peak RSS     = the comparing process's maximum resident set / bytes of the largest parameter (target <= 2).
Usage: .venv/bin/python bench/ckpt_compare.py [--layers 3] [--repeat 3] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGINE = ("import sys, resource; from pathlib import Path; from msprobe.ckpt_compare.compare import run;"
          "from msprobe.ckpt_compare.options import CompareOptions;"
          "r = run(Path(sys.argv[1]), Path(sys.argv[2]), CompareOptions(progress=False));"
          "print(len(r.entries))")


def make(root: Path, layers: int) -> None:
    """Write the two checkpoints (fp32, like a Megatron run without --bf16)."""
    import argparse as ap

    import torch

    from msprobe.ckpt_compare.writer import write_megatron
    hidden, ffn, heads, groups, vocab = 2048, 5632, 16, 4, 32000
    head = hidden // heads
    gen = torch.Generator().manual_seed(0)
    state = {"embedding.word_embeddings.weight": torch.randn(vocab, hidden, generator=gen)}
    for i in range(layers):
        p = f"decoder.layers.{i}."
        state[p + "input_layernorm.weight"] = torch.ones(hidden)
        state[p + "self_attention.linear_qkv.weight"] = torch.randn((heads + 2 * groups) * head, hidden, generator=gen)
        state[p + "self_attention.linear_proj.weight"] = torch.randn(hidden, hidden, generator=gen)
        state[p + "pre_mlp_layernorm.weight"] = torch.ones(hidden)
        state[p + "mlp.linear_fc1.weight"] = torch.randn(2 * ffn, hidden, generator=gen)
        state[p + "mlp.linear_fc2.weight"] = torch.randn(hidden, ffn, generator=gen)
    state["decoder.final_layernorm.weight"] = torch.ones(hidden)
    state["output_layer.weight"] = torch.randn(vocab, hidden, generator=gen)
    args = ap.Namespace(num_layers=layers, swiglu=True, untie_embeddings_and_output_weights=True)
    write_megatron(root / "tp2pp2", state, args, tp=2, pp=2, gated=True, style="legacy",
                   stage_layers=[layers // 2, layers - layers // 2])
    state["decoder.layers.0.mlp.linear_fc2.weight"] += 1e-3
    write_megatron(root / "tp1", state, args)


def files(root: Path):
    return sorted(p for p in root.rglob("*.pt"))


def drop_cache(paths) -> None:
    """Evict these files (only) from the page cache, so reads come from the disk."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def timed(cmd, **kw) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)
    return time.perf_counter() - start


def child_usage(cmd) -> tuple:
    """(seconds, CPU seconds, peak RSS bytes) of one child, measured in a fresh grandparent so only it counts."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter();"
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
             "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
             "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss * 1024)")
    out = subprocess.run([sys.executable, "-c", probe] + cmd, check=True, capture_output=True, text=True).stdout
    seconds, cpu, rss = out.split()
    return float(seconds), float(cpu), int(rss)


def measure(label: str, paths, cmd, warm: bool, largest: int, total: int, before=None) -> float:
    """One cat-then-compare pair; prints it and returns the read ratio."""
    if not warm:
        drop_cache(paths)
    read = timed(["cat"] + [str(p) for p in paths], stdout=subprocess.DEVNULL)
    if not warm:
        drop_cache(paths)
    if before:
        before()
    seconds, cpu, rss = child_usage(cmd)
    print(f"{label}: cat {read:.2f}s ({total / read / 2**20:,.0f} MiB/s), compare {seconds:.2f}s "
          f"({total / seconds / 2**20:,.0f} MiB/s, CPU {cpu:.2f}s) -> read ratio {read / seconds:.2f}; "
          f"peak RSS {rss / 2**20:.0f} MiB = {rss / largest:.2f}x largest parameter", flush=True)
    return read / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=3, help="transformer layers of the model (3: ~1 GB per checkpoint)")
    parser.add_argument("--repeat", type=int, default=3, help="cold and warm measurements, alternating")
    parser.add_argument("--keep", type=Path, default=None, help="reuse/keep checkpoints in this folder")
    opts = parser.parse_args()
    root = opts.keep or Path(tempfile.mkdtemp(prefix="msprobe-ckpt-bench-"))
    try:
        if not (root / "tp1").exists():
            make(root, opts.layers)
        from msprobe.ckpt_compare.compare import open_checkpoint
        largest = max(p.nbytes for p in open_checkpoint(root / "tp1").params.values())
        paths = files(root)
        total = sum(p.stat().st_size for p in paths)
        msprobe = str(Path(sys.executable).with_name("msprobe"))
        engine = [sys.executable, "-c", ENGINE, str(root / "tp2pp2"), str(root / "tp1")]
        out = root / "out.json"
        cli = [msprobe, "-f", "pytorch", "config_check", "-c", str(root / "tp2pp2"), str(root / "tp1"), "-o", str(out)]
        print(f"checkpoints: {total / 2**30:.2f} GiB in {len(paths)} files; largest parameter {largest / 2**20:.0f} MiB; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
        ratios = {"cold": [], "warm": []}
        for _ in range(opts.repeat):
            for label in ratios:
                ratios[label].append(measure(label, paths, engine, label == "warm", largest, total))
        measure("cold, through the msprobe CLI", paths, cli, False, largest, total,
                before=lambda: out.unlink() if out.exists() else None)
        for label, values in ratios.items():
            print(f"{label} read ratio: median {statistics.median(values):.2f} "
                  f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)")
        print(f"load average after the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    finally:
        if opts.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
