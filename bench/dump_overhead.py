"""Dump overhead on the built-in transformer: median step-time ratio against no dump.

    python bench/dump_overhead.py [--steps 20] [--model tiny|large|llama|llama-small] [--device cpu|cuda] [--repeat 1]
                                  [--upstream 26.2.0 | --upstream-python /tmp/msprobe-upstream/bin/python] [--msadapter]

Models: ``tiny`` embedding + 2 blocks (d=64, 4 heads, MLP 256), batch 8x32 (per-call costs dominate);
``large`` 4 blocks of d=512, 8 heads, MLP 2048, batch 4x128 (~0.5-1 s a step on one CPU thread: reading each
tensor once dominates); ``llama`` a realistic HF ``transformers`` Llama built from its config (random weights,
no download): hidden 512, 4 layers, 8 heads with 4 key/value heads (GQA), MLP 1376, vocabulary 8000, batch
4x128 (model code nobody here wrote: RMSNorm, rotary embeddings, SDPA attention, the HF loss);
``llama-small`` the same at hidden 64, 2 layers, vocabulary 512, batch 2x32 (a check that it all runs, as the
tests make it: its figures mean little); on ``--device cuda`` 8 blocks of d=1024, 16 heads, MLP 4096, batch
8x512. AdamW;
CPU runs use 1 thread. start() before the forward,
stop() + step() after the optimizer. Each mode runs in a fresh worker process that alternates no-dump
and dumped steps, so every ratio compares steps taken under the same machine load. The no-dump steps
train a second copy of the model (same seed): hooks a debugger keeps on its model between dumped steps
(ours, when the next step is dumped too; upstream's, always) never run in them. All modes (and
upstream msprobe's, with --upstream or --upstream-python) are measured in this one run. Ratios printed: wall time
of the step as the training loop sees it (``step()`` returns while the background writer still writes
files; what the targets are compared with), process CPU time of that step (all threads), and
"all-in": the wall time until the step's files are on disk. The background work of a dumped step is
waited for, untimed, before the next step, so no base step runs beside it. Then "b2b" (back to back):
blocks of five dumped steps against blocks of five no-dump steps, the writer's work of each dumped step
running beside the next one, as when every step of a run is dumped (its first step of each block is not
counted; the writer is waited for between blocks). The two copies of the model differ by a few percent
between workers (the "not dumped" row shows it): ``--repeat N`` runs N workers per mode and side, in
rounds over all modes, and prints the median of each figure. With msprobe: "faster" is msprobe's step
ratio over ours, "less add" the time msprobe adds to a step over the time ours adds. A dumped step makes
two directories and a few files (both tools): the last line says the dump directory's file system and what a
file create cost there before and after the workers, which differs by an order of magnitude between file
systems, and on a virtual disk within an hour (``--dump-dir``).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
TINY_MODEL = REPO / "tools" / "dump" / "src" / "msprobe" / "pytorch" / "tiny_model.py"
SOURCES = [str(REPO / part / "src") for part in ("shared", "tools/dump")]
"""What our runs import as ``msprobe``: this checkout, never a copy installed in the venv earlier"""
MODES = {  # label: (task, level, summary_mode, dumped)
    "not dumped": ("statistics", "L1", "statistics", False),
    "statistics L0": ("statistics", "L0", "statistics", True),
    "statistics L1": ("statistics", "L1", "statistics", True),
    "statistics mix": ("statistics", "mix", "statistics", True),
    "statistics L1+md5": ("statistics", "L1", "md5", True),
    "tensor L1": ("tensor", "L1", "statistics", True),
    "statistics L1 async": ("statistics", "L1", "statistics", True),
    "flight_recorder": ("flight_recorder", "L0", "statistics", True),  # the ring: written only when it fires
}
ASYNC = {"statistics L1 async"}
"""Modes run with ``async_dump: true`` (files finished on the background thread); the others as msprobe's
default, ``async_dump: false`` (a step's files are on disk when step() returns)"""
TARGETS = {"tiny": {"not dumped": 1.03}, "large": {"not dumped": 1.03, "statistics L0": 1.10, "statistics L1": 1.6}}
"""Step-time ratios to reach; beyond them every dumped mode is to be at least 3x faster than msprobe's"""
SIZES = {"tiny": dict(layers=2, d=64, heads=4, hidden=256, batch=8, seq=32),
         "large": dict(layers=4, d=512, heads=8, hidden=2048, batch=4, seq=128),
         "cuda": dict(layers=8, d=1024, heads=16, hidden=4096, batch=8, seq=512),
         "llama": dict(batch=4, seq=128), "llama-small": dict(batch=2, seq=32)}
LLAMAS = {"llama": dict(vocab_size=8000, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=256),
          "llama-small": dict(vocab_size=512, hidden_size=64, intermediate_size=172, num_hidden_layers=2,
                              num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64)}
"""(a vocabulary of 8000 keeps the logits, 4 x 128 x 8000, within the one-pass statistics kernels' 4M elements)"""
HBM_BYTES_PER_S = {"NVIDIA H200": 4.8e12, "NVIDIA H100": 3.35e12, "NVIDIA A100": 2.0e12}


def _tiny_model():
    """Loaded by path: upstream's ``msprobe`` package would shadow ours in the upstream worker."""
    spec = importlib.util.spec_from_file_location("msprobe_bench_tiny_model", TINY_MODEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Llama:
    """A ``llama`` model, behind the tiny model's interface (``TinyTransformer``, ``make_batch``, ``train_step``)."""

    def __init__(self, config: dict) -> None:
        self.config = config

    def TinyTransformer(self, **size):
        from transformers import LlamaConfig, LlamaForCausalLM
        return LlamaForCausalLM(LlamaConfig(**self.config))

    def make_batch(self, batch, seq, device="cpu"):
        import torch
        tokens = torch.randint(0, self.config["vocab_size"], (batch, seq), generator=torch.Generator().manual_seed(0))
        return tokens.to(device), tokens.to(device)

    @staticmethod
    def train_step(model, optimizer, tokens, targets):
        loss = model(input_ids=tokens, labels=targets).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()


def worker(label: str, steps: int, work: Path, model_name: str, device: str) -> dict:
    import torch

    torch.set_num_threads(1)
    from msprobe.pytorch import PrecisionDebugger

    tiny = _Llama(LLAMAS[model_name]) if model_name in LLAMAS else _tiny_model()
    size = dict(SIZES["cuda" if device == "cuda" else model_name])
    batch, seq = size.pop("batch"), size.pop("seq")
    task, level, summary, dumped = MODES[label]
    dump_path = work / "dump"
    block = {"scope": [], "list": [], "data_mode": ["all"]}
    if task == "statistics":
        block["summary_mode"] = summary
    config = work / "config.json"
    config.write_text(json.dumps({"task": task, "dump_path": str(dump_path), "rank": [], "level": level,
                                  "step": [] if dumped else [10 ** 6], task: block, "async_dump": label in ASYNC}))
    trained = {}
    for kind in ("base", "dump"):  # the same model twice: the debugger's hooks never touch the base steps'
        torch.manual_seed(0)
        model = tiny.TinyTransformer(**size).to(device)
        trained[kind] = (model, torch.optim.AdamW(model.parameters(), lr=1e-4))
    tokens, targets = tiny.make_batch(batch, seq, device=device)
    debugger = PrecisionDebugger(config_path=str(config))
    reduced = _time_statistics()  # ours: time and bytes of the statistics kernels, per step
    for _ in range(3):
        for model, optimizer in trained.values():
            tiny.train_step(model, optimizer, tokens, targets)
    wall = {"base": [], "dump": [], "all-in": []}
    cpu = {"base": [], "dump": []}
    back = {"base": [], "dump": []}  # dumped steps one after another: the writer works beside the next step
    finish = getattr(debugger, "flush", lambda: None)  # ours completes step files in the background

    def run_step(kind, dump):
        """One step of ``kind``'s model, dumped or not: (start, wall, process CPU) in seconds."""
        model, optimizer = trained[kind]
        sync()
        w, c = time.perf_counter(), time.process_time()
        if dump:
            debugger.start(model=model)
        tiny.train_step(model, optimizer, tokens, targets)
        if dump:
            debugger.stop()
            debugger.step()
        sync()
        return w, time.perf_counter() - w, time.process_time() - c

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    for i in range(steps):  # ABBA order: drift in machine load hits both sides alike
        order = (("base", False), ("dump", True)) if i % 2 == 0 else (("dump", True), ("base", False))
        for kind, dump in order:
            start, elapsed, spent = run_step(kind, dump)
            wall[kind].append(elapsed)
            cpu[kind].append(spent)
            if dump:  # untimed: a base step must not run beside the files this step left to write
                finish()
                wall["all-in"].append(time.perf_counter() - start)
    for block in range(2 * max(1, steps // 4)):  # back to back: blocks of 5 steps, the first of each not counted
        order = (("base", False), ("dump", True)) if block % 2 == 0 else (("dump", True), ("base", False))
        for kind, dump in order:
            back[kind] += [run_step(kind, dump)[1] for _ in range(5)][1:]
            finish()
    syncs = _syncs_added(run_step, finish) if device == "cuda" else None
    if hasattr(debugger, "flush"):
        debugger.flush()  # ours finishes files in the background: count them once written
    entries = size = dumped = 0
    if dump_path.exists():
        for dump_json in dump_path.rglob("dump.json"):
            entries += len(json.loads(dump_json.read_text()).get("data", {}))
            dumped += 1
        size = sum(p.stat().st_size for p in dump_path.rglob("*") if p.is_file() and not _opened_ahead(p))
    median = statistics.median
    dumped_steps = max(1, len(wall["dump"]) + len(back["dump"]) + len(back["dump"]) // 4)
    stats_s, stats_bytes = (reduced[0] / dumped_steps, reduced[1] / dumped_steps) if reduced else (None, None)
    return {"ratio": median(wall["dump"]) / median(wall["base"]),
            "stats_share": stats_s / median(wall["base"]) if stats_s is not None else None,
            "hbm_share": _hbm_share(stats_s, stats_bytes) if device == "cuda" and stats_s else None,
            "all_in_ratio": median(wall["all-in"]) / median(wall["base"]),
            "cpu_ratio": median(cpu["dump"]) / median(cpu["base"]),
            "back_to_back_ratio": median(back["dump"]) / median(back["base"]),
            "syncs_added": syncs,
            "base_ms": median(wall["base"]) * 1e3,
            "entries_per_step": entries / max(dumped, 1), "bytes_per_step": size / max(dumped, 1),
            "ring": _ring_memory(debugger) if task == "flight_recorder" else None}


def _ring_memory(debugger) -> list:
    """[steps held, module records, bytes] of the flight recorder's ring: every object it holds walked once
    (sys.getsizeof; tensors, the RNG states, by their storage)."""
    import torch

    ring = debugger.engine.ring
    seen, total, stack = set(), 0, [list(ring)]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, torch.Tensor):
            total += obj.untyped_storage().nbytes()
        elif isinstance(obj, dict):
            stack += list(obj.keys()) + list(obj.values())
        elif isinstance(obj, (list, tuple, set)):
            stack += list(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
        elif hasattr(obj, "__slots__"):
            stack += [getattr(obj, name) for name in obj.__slots__ if hasattr(obj, name)]
    return [len(ring), sum(len(slot.entries) for slot in ring), total]


def _syncs_added(run_step, finish, steps: int = 3):
    """Device synchronizations a dumped step makes beyond a no-dump step's, over ``steps`` untimed steps of
    each (``cuda_check.counting_syncs``, beside this file)."""
    from cuda_check import counting_syncs

    counts = {}
    for kind, dump in (("base", False), ("dump", True)):
        with counting_syncs("cuda") as counted:
            for _ in range(steps):
                run_step(kind, dump)
                if dump:
                    finish()
        counts[kind] = counted[0] / steps
    return counts["dump"] - counts["base"]


def _time_statistics():
    """[seconds, bytes] the statistics kernels took (``msprobe.pytorch.stats.reduce``: ours only; on a
    device the time to start them, plus the batches' transfers), or None in upstream's worker."""
    try:
        from msprobe.pytorch import stats
    except ImportError:
        return None
    if not hasattr(stats, "reduce_on_device"):
        return None
    totals = [0.0, 0]

    def timed(function):
        def run(tensor, *args):
            start = time.perf_counter()
            try:
                return function(tensor, *args)
            finally:
                totals[0] += time.perf_counter() - start
                totals[1] += tensor.numel() * tensor.element_size()
        return run

    def timed_batch(handles):
        start = time.perf_counter()
        try:
            return to_host(handles)
        finally:
            totals[0] += time.perf_counter() - start

    to_host = stats.to_host
    stats.reduce = timed(stats.reduce)
    stats.to_host = timed_batch
    return totals


def _hbm_share(seconds: float, nbytes: float):
    """The statistics' read rate as a share of the GPU's memory bandwidth (its peak, by name)."""
    import torch

    name = torch.cuda.get_device_name()
    peak = next((value for key, value in HBM_BYTES_PER_S.items() if name.startswith(key)), None)
    return nbytes / seconds / peak if peak else None


def _opened_ahead(path: Path) -> bool:
    """The next step's journal, opened ahead with its space reserved and holding no record (removed at
    exit if its step never comes): not counted in bytes a step."""
    try:
        from msprobe.schema.journal import JOURNAL_NAME, journal_recorded  # (not in upstream msprobe: no journal)
    except ImportError:
        return False
    return path.name == JOURNAL_NAME and not journal_recorded(path)


def run_worker(python: str, label: str, steps: int, timeout: int, model: str = "tiny", device: str = "cpu",
               dump_dir: Optional[str] = None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    if python == sys.executable:  # ours
        env["PYTHONPATH"] = os.pathsep.join(SOURCES)
    try:
        done = subprocess.run([python, __file__, "--worker", label, "--steps", str(steps), "--model", model,
                               "--device", device] + (["--dump-dir", dump_dir] if dump_dir else []),
                              capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc).splitlines()[0]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return None, (done.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(lines[-1]), None


def create_cost(dump_dir: Optional[str], files: int = 200) -> float:
    """The median seconds to create (and close) an empty file in ``dump_dir``, over ``files`` creates: a
    dumped step makes two directories and four files there."""
    folder = Path(tempfile.mkdtemp(prefix="msprobe-bench-creates-", dir=dump_dir))
    try:
        times = []
        for number in range(files):
            start = time.perf_counter()
            os.close(os.open(folder / str(number), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            times.append(time.perf_counter() - start)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return statistics.median(times)


def dump_dir_line(dump_dir: Optional[str], before: float, after: float) -> str:
    """The dump directory, its file system, and ``create_cost`` before and after the workers ran."""
    where = Path(dump_dir or tempfile.gettempdir())
    return (f"dump directory: {where} ({_file_system(where)}); a file create there: {before * 1e6:.0f} us before "
            f"the workers, {after * 1e6:.0f} us after (medians of 200)")


def _file_system(path: Path) -> str:
    """The type of the file system holding ``path`` (the longest mount point above it), from /proc/mounts."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "file system unknown"
    resolved = str(path.resolve())
    above = [(point, kind) for point, kind in mounts
             if resolved == point or resolved.startswith(point.rstrip("/") + "/")]
    return max(above, key=lambda mount: len(mount[0]))[1] if above else "file system unknown"


def _upstream_python(version: str) -> Path:
    sys.path.insert(0, str(REPO))
    from tests.support.upstream_msprobe import upstream_python

    return upstream_python(version)


def upstream_version(python: str):
    code = "import msprobe.pytorch, importlib.metadata as m; print(m.version('mindstudio-probe'))"
    try:
        probe = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot run {python}: {exc}"
    if probe.returncode != 0:
        return None, "upstream msprobe cannot be imported: " + (probe.stderr.strip().splitlines() or ["?"])[-1]
    return probe.stdout.strip().splitlines()[-1], None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="measured steps per mode (more: less noise)")
    parser.add_argument("--model", choices=["tiny", "large", "llama", "llama-small"], default="tiny",
                        help="tiny: per-call costs dominate; large: ~0.5-1 s a CPU step, reading tensors dominates; "
                        "llama: HF transformers' Llama, hidden 512, 4 layers, batch 4x128; llama-small: the same at "
                        "hidden 64, 2 layers, batch 2x32 (a quick check)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: a d=1024, 8-layer model, batch 8x512, on the GPU")
    parser.add_argument("--modes", help="comma-separated modes to run (default: all)")
    parser.add_argument("--upstream-python", help="python of a venv with mindstudio-probe (e.g. 26.2.0) and torch")
    parser.add_argument("--upstream", metavar="VERSION", help="msprobe VERSION (26.2.0) from its throwaway venv "
                        "(tests/support/upstream_msprobe.py, made on first use), in place of --upstream-python")
    parser.add_argument("--repeat", type=int, default=1,
                        help="workers per mode and side, taken in turns; each figure printed is their median")
    parser.add_argument("--dump-dir", help="where the workers write their dumps (default: the system's temporary "
                        "directory, TMPDIR)")
    parser.add_argument("--worker", choices=sorted(MODES), help=argparse.SUPPRESS)
    from dump_overhead_mindspore import add_msadapter_options  # (beside this file, first on the path)

    add_msadapter_options(parser)
    args = parser.parse_args()
    if args.dump_dir and not os.path.isdir(args.dump_dir):
        parser.error(f"--dump-dir: {args.dump_dir} is not a directory")
    if args.worker:
        work = Path(tempfile.mkdtemp(prefix="msprobe-bench-", dir=args.dump_dir))
        try:
            print(json.dumps(worker(args.worker, args.steps, work, args.model, args.device)))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    if args.upstream:
        args.upstream_python = str(_upstream_python(args.upstream))
    version, why = (upstream_version(args.upstream_python) if args.upstream_python
                    else (None, "no --upstream-python given"))
    creates_before = create_cost(args.dump_dir)
    labels = [label for label in MODES if not args.modes or label in args.modes.split(",")]
    if "not dumped" not in labels:
        labels.insert(0, "not dumped")
    runs = {label: ([], []) for label in labels}  # label -> (ours, msprobe's), one result per round
    for _ in range(max(1, args.repeat)):  # rounds: a drift in machine load reaches every mode and both sides
        for label in labels:
            row, error = run_worker(sys.executable, label, args.steps, 1800, args.model, args.device, args.dump_dir)
            if error:
                print(f"{label}: our run failed: {error}", file=sys.stderr)
                return 1
            runs[label][0].append(row)
            if version and label not in ASYNC:
                row, error = run_worker(args.upstream_python, label, args.steps, 3600, args.model, args.device,
                                        args.dump_dir)
                if error:
                    why = f"{label}: {error}"
                else:
                    runs[label][1].append(row)
    ours = {label: median_row(mine) for label, (mine, _) in runs.items()}
    theirs = {label: median_row(up) if up else None for label, (_, up) in runs.items()}
    report(ours, theirs, version, why, args.model, args.device)
    print(dump_dir_line(args.dump_dir, creates_before, create_cost(args.dump_dir)))
    if args.model != "tiny" or args.device != "cpu" or args.modes:
        return 0
    # MindSpore native and MSAdapter rows, same run: bench/dump_overhead_mindspore.py
    sys.path[:0] = [str(Path(__file__).resolve().parent)] + SOURCES
    from dump_overhead_mindspore import main_rows
    main_rows(args.steps, args.msadapter)
    return 0


def median_row(rows: list) -> dict:
    """Each figure of the workers' results, their median (None where a worker had none; a list: the first
    worker's)."""
    keys = rows[0].keys()
    return {key: None if any(row.get(key) is None for row in rows) else rows[0][key]
            if isinstance(rows[0][key], list) else statistics.median(row[key] for row in rows) for key in keys}


def report(ours: dict, theirs: dict, version, why, model: str = "tiny", device: str = "cpu") -> None:
    where = "GPU" if device == "cuda" else "CPU, 1 thread"
    print(f"{model if device == 'cpu' else 'cuda'} transformer, {where}; no-dump step "
          f"{ours['not dumped']['base_ms']:.2f} ms (median)")
    targets = TARGETS.get(model, {})
    header = (f"{'mode':20s} {'ours':>7s} {'target':>7s} {'stats':>6s} {'cpu':>7s} {'all-in':>7s} {'b2b':>7s} "
              f"{'entries/step':>12s} {'bytes/step':>11s}")
    if device == "cuda":
        header += f" {'HBM':>5s} {'syncs':>5s}"
    if version:
        header += (f" {'msprobe ' + version:>15s} {'faster':>6s} {'less add':>8s} {'cpu':>7s} {'b2b':>7s} "
                   f"{'entries/step':>12s} {'bytes/step':>11s}")
    print(header)
    for label, row in ours.items():
        target = f"{targets[label]:6.2f}x" if label in targets else f"{'':7s}"
        share = f"{row['stats_share']:6.2f}" if row.get("stats_share") is not None else f"{'':6s}"
        line = (f"{label:20s} {row['ratio']:6.2f}x {target} {share} {row['cpu_ratio']:6.2f}x "
                f"{row['all_in_ratio']:6.2f}x {row['back_to_back_ratio']:6.2f}x {row['entries_per_step']:12.0f} "
                f"{row['bytes_per_step']:11.0f}")
        if device == "cuda":
            line += f" {row['hbm_share']:5.2f}" if row.get("hbm_share") is not None else f" {'':5s}"
            line += f" {row['syncs_added']:5.1f}" if row.get("syncs_added") is not None else f" {'':5s}"
        up = theirs.get(label)
        if up:
            # faster: msprobe's step ratio over ours (how "3x faster" is counted); less add: the time msprobe adds
            # to a step over the time ours adds, (ratio - 1) over (ratio - 1)
            added = (up["ratio"] - 1) / max(row["ratio"] - 1, 1e-9) if row["ratio"] > 1 else float("inf")
            line += (f" {up['ratio']:14.2f}x {up['ratio'] / row['ratio']:5.2f}x {added:7.1f}x {up['cpu_ratio']:6.2f}x "
                     f"{up['back_to_back_ratio']:6.2f}x {up['entries_per_step']:12.0f} {up['bytes_per_step']:11.0f}")
        print(line)
    print("stats: the statistics kernels' share of a no-dump step; all-in: until the step's files are on disk"
          + ("; HBM: their read rate against the GPU's memory bandwidth; syncs: device synchronizations a "
             "dumped step adds (torch's sync debug mode, 3 untimed steps)" if device == "cuda" else "")
          + ("; faster: msprobe's ratio over ours; less add: the time msprobe adds to a step over the time ours adds"
             if version else ""))
    for label, row in ours.items():
        if row.get("ring"):
            steps, records, size = row["ring"]
            print(f"{label}: the ring holds {steps:.0f} steps, {records:.0f} module records, {size / 2**20:.2f} MiB "
                  f"(every object it holds, walked once)")
    if why and not (version and all(theirs.get(label) for label in ours if label not in ASYNC)):
        print(f"upstream msprobe: not measured ({why})")


if __name__ == "__main__":
    sys.exit(main())
