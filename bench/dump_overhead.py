"""Dump overhead on the built-in tiny transformer (CPU, 1 thread): median step-time ratio against no dump.

    python bench/dump_overhead.py [--steps 20] [--upstream-python /tmp/msprobe-upstream/bin/python]

Model: embedding + 2 blocks (d=64, 4 heads, MLP 256), AdamW, batch 8x32; start() before the forward,
stop() + step() after the optimizer. Each mode runs in a fresh worker process that alternates no-dump
and dumped steps, so every ratio compares steps taken under the same machine load. The no-dump steps
train a second copy of the model (same seed): hooks a debugger keeps on its model between dumped steps
(ours, when the next step is dumped too; upstream's, always) never run in them. All modes (and
upstream msprobe's, with --upstream-python) are measured in this one run. Ratios printed: wall time
of the step as the training loop sees it (``step()`` returns while the background writer still writes
files; what the targets are compared with), process CPU time of that step (all threads), and
"all-in": the wall time until the step's files are on disk. The background work of a dumped step is
waited for, untimed, before the next step, so no base step runs beside it. Then "b2b" (back to back):
blocks of five dumped steps against blocks of five no-dump steps, the writer's work of each dumped step
running beside the next one, as when every step of a run is dumped (its first step of each block is not
counted; the writer is waited for between blocks).
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
}
TARGETS = {"not dumped": 1.03, "statistics L0": 1.3, "statistics L1": 3.0, "statistics mix": 3.5,
           "statistics L1+md5": 4.0, "tensor L1": 10.0}


def _tiny_model():
    """Loaded by path: upstream's ``msprobe`` package would shadow ours in the upstream worker."""
    spec = importlib.util.spec_from_file_location("msprobe_bench_tiny_model", TINY_MODEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worker(label: str, steps: int, work: Path) -> dict:
    import torch

    torch.set_num_threads(1)
    from msprobe.pytorch import PrecisionDebugger

    tiny = _tiny_model()
    task, level, summary, dumped = MODES[label]
    dump_path = work / "dump"
    block = {"scope": [], "list": [], "data_mode": ["all"]}
    if task == "statistics":
        block["summary_mode"] = summary
    config = work / "config.json"
    config.write_text(json.dumps({"task": task, "dump_path": str(dump_path), "rank": [], "level": level,
                                  "step": [] if dumped else [10 ** 6], task: block}))
    trained = {}
    for kind in ("base", "dump"):  # the same model twice: the debugger's hooks never touch the base steps'
        torch.manual_seed(0)
        model = tiny.TinyTransformer()
        trained[kind] = (model, torch.optim.AdamW(model.parameters(), lr=1e-4))
    tokens, targets = tiny.make_batch()
    debugger = PrecisionDebugger(config_path=str(config))
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
        w, c = time.perf_counter(), time.process_time()
        if dump:
            debugger.start(model=model)
        tiny.train_step(model, optimizer, tokens, targets)
        if dump:
            debugger.stop()
            debugger.step()
        return w, time.perf_counter() - w, time.process_time() - c

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
    if hasattr(debugger, "flush"):
        debugger.flush()  # ours finishes files in the background: count them once written
    entries = size = dumped = 0
    if dump_path.exists():
        for dump_json in dump_path.rglob("dump.json"):
            entries += len(json.loads(dump_json.read_text()).get("data", {}))
            dumped += 1
        size = sum(p.stat().st_size for p in dump_path.rglob("*") if p.is_file() and not _opened_ahead(p))
    median = statistics.median
    return {"ratio": median(wall["dump"]) / median(wall["base"]),
            "all_in_ratio": median(wall["all-in"]) / median(wall["base"]),
            "cpu_ratio": median(cpu["dump"]) / median(cpu["base"]),
            "back_to_back_ratio": median(back["dump"]) / median(back["base"]),
            "base_ms": median(wall["base"]) * 1e3,
            "entries_per_step": entries / max(dumped, 1), "bytes_per_step": size / max(dumped, 1)}


def _opened_ahead(path: Path) -> bool:
    """The next step's journal, opened ahead with its space reserved and holding no record (removed at
    exit if its step never comes): not counted in bytes a step."""
    try:
        from msprobe.schema.journal import JOURNAL_NAME, journal_recorded  # (not in upstream msprobe: no journal)
    except ImportError:
        return False
    return path.name == JOURNAL_NAME and not journal_recorded(path)


def run_worker(python: str, label: str, steps: int, timeout: int):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    if python == sys.executable:  # ours
        env["PYTHONPATH"] = os.pathsep.join(SOURCES)
    try:
        done = subprocess.run([python, __file__, "--worker", label, "--steps", str(steps)], capture_output=True,
                              text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc).splitlines()[0]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return None, (done.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(lines[-1]), None


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
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--upstream-python", help="python of a venv with mindstudio-probe (e.g. 26.2.0) and torch")
    parser.add_argument("--worker", choices=sorted(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        work = Path(tempfile.mkdtemp(prefix="msprobe-bench-"))
        try:
            print(json.dumps(worker(args.worker, args.steps, work)))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    version, why = (upstream_version(args.upstream_python) if args.upstream_python
                    else (None, "no --upstream-python given"))
    ours, theirs = {}, {}
    for label in MODES:
        ours[label], error = run_worker(sys.executable, label, args.steps, 1800)
        if error:
            print(f"{label}: our run failed: {error}", file=sys.stderr)
            return 1
        if version:
            theirs[label], error = run_worker(args.upstream_python, label, args.steps, 3600)
            if error:
                theirs[label] = None
                why = f"{label}: {error}"
    report(ours, theirs, version, why)
    # MindSpore native and MSAdapter rows (issue #4), same run: bench/dump_overhead_mindspore.py
    sys.path[:0] = [str(Path(__file__).resolve().parent)] + SOURCES
    from dump_overhead_mindspore import main_rows
    main_rows(args.steps)
    return 0


def report(ours: dict, theirs: dict, version, why) -> None:
    print(f"tiny transformer, CPU, 1 thread; no-dump step {ours['not dumped']['base_ms']:.2f} ms (median)")
    header = (f"{'mode':18s} {'ours':>7s} {'target':>7s} {'cpu':>7s} {'all-in':>7s} {'b2b':>7s} {'entries/step':>12s} "
              f"{'bytes/step':>11s}")
    if version:
        header += f" {'msprobe ' + version:>15s} {'cpu':>7s} {'b2b':>7s} {'entries/step':>12s} {'bytes/step':>11s}"
    print(header)
    for label, row in ours.items():
        line = (f"{label:18s} {row['ratio']:6.2f}x {TARGETS[label]:6.2f}x {row['cpu_ratio']:6.2f}x "
                f"{row['all_in_ratio']:6.2f}x {row['back_to_back_ratio']:6.2f}x {row['entries_per_step']:12.0f} "
                f"{row['bytes_per_step']:11.0f}")
        up = theirs.get(label)
        if up:
            line += (f" {up['ratio']:14.2f}x {up['cpu_ratio']:6.2f}x {up['back_to_back_ratio']:6.2f}x "
                     f"{up['entries_per_step']:12.0f} {up['bytes_per_step']:11.0f}")
        print(line)
    if why and not (version and all(theirs.get(label) for label in MODES)):
        print(f"upstream msprobe: not measured ({why})")


if __name__ == "__main__":
    sys.exit(main())
