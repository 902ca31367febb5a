"""Dump overhead for MindSpore (PyNative CPU, host venv) and MSAdapter (Python 3.9 rootfs): median step-time
ratio against no dump, both measured in the same process, interleaved step by step.

    python bench/dump_overhead_mindspore.py [--steps 10] [--msadapter | --no-msadapter]

bench/dump_overhead.py prints these rows too (after the PyTorch table) when mindspore is installed.
The MSAdapter rows run this same file inside the rootfs of tests/support/msadapter_env.py, when that rootfs
is built (`just services`); otherwise one line says they were skipped, and `--msadapter` builds it first
(about 3 GB from the network).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
MODES = [  # (label, task, level, summary_mode, dumped)
    ("not dumped", "statistics", "L1", "statistics", False),
    ("statistics L0", "statistics", "L0", "statistics", True),
    ("statistics L1", "statistics", "L1", "statistics", True),
    ("statistics mix", "statistics", "mix", "statistics", True),
    ("statistics L1+md5", "statistics", "L1", "md5", True),
    ("tensor L1", "tensor", "L1", "statistics", True),
]


def _config(path: Path, dump_path: Path, task: str, level: str, summary: str, dumped: bool) -> None:
    block = {"scope": [], "list": [], "data_mode": ["all"]}
    if task == "statistics":
        block["summary_mode"] = summary
    path.write_text(json.dumps({"task": task, "dump_path": str(dump_path), "rank": [], "level": level,
                                "step": [] if dumped else [10 ** 6], task: block}))


def _workload(flavour: str):
    """(model, one training step) of a small MLP block: native Cells or MSAdapter Modules."""
    import mindspore as ms
    import numpy as np

    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.RandomState(0)
    if flavour == "msadapter":
        import msadapter.pytorch as torch
        nn, F = torch.nn, torch.nn.functional

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.up, self.down, self.norm = nn.Linear(64, 256), nn.Linear(256, 64), nn.LayerNorm(64)

            def forward(self, x):
                return self.norm(x + self.down(F.relu(self.up(x))))

        model = nn.Sequential(Block(), Block(), nn.Linear(64, 8))
        x = torch.tensor(rng.randn(32, 64).astype(np.float32))
        loss_fn = lambda x: model(x).pow(2).mean()  # noqa: E731
        params = [p for p in model.parameters()]
    else:
        from mindspore import mint, nn, ops

        class Block(nn.Cell):
            def __init__(self):
                super().__init__()
                self.up, self.down, self.norm = nn.Dense(64, 256), nn.Dense(256, 64), nn.LayerNorm((64,))

            def construct(self, x):
                return self.norm(x + self.down(mint.nn.functional.relu(self.up(x))))

        model = nn.SequentialCell([Block(), Block(), nn.Dense(64, 8)])
        x = ms.Tensor(rng.randn(32, 64).astype(np.float32))
        loss_fn = lambda x: ops.square(model(x)).mean()  # noqa: E731
        params = model.trainable_params()
    grad_fn = ms.value_and_grad(loss_fn, None, params)
    optimizer = ms.nn.SGD(params, learning_rate=0.01)  # MindSpore's own (MSAdapter 0.1.0's SGD(lr=) is broken)

    def step():
        loss, grads = grad_fn(x)
        optimizer(grads)
        return loss
    return model, step


def run_modes(flavour: str, steps: int) -> dict:
    from msprobe.mindspore import PrecisionDebugger

    model, train_step = _workload(flavour)
    work = Path(tempfile.mkdtemp(prefix="msprobe-bench-ms-"))
    results = {}
    try:
        for label, task, level, summary, dumped in MODES:
            dump_path = work / label.replace(" ", "_").replace("+", "_")
            config = work / (dump_path.name + ".json")
            _config(config, dump_path, task, level, summary, dumped)
            debugger = PrecisionDebugger(config_path=str(config))
            for _ in range(2):
                train_step()
            base, dump = [], []
            for _ in range(steps):
                start = time.perf_counter()
                train_step()
                base.append(time.perf_counter() - start)
                start = time.perf_counter()
                debugger.start(model=model) if level != "L1" else debugger.start()
                train_step()
                debugger.stop()
                debugger.step()
                dump.append(time.perf_counter() - start)
            debugger.flush()
            entries = sum(len(json.loads(p.read_text()).get("data", {})) for p in dump_path.rglob("dump.json"))
            results[label] = {"ratio": statistics.median(dump) / statistics.median(base),
                              "base_ms": statistics.median(base) * 1e3,
                              "entries_per_step": entries / steps if dumped else 0}
            shutil.rmtree(dump_path, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def run_msadapter(steps: int, build: bool = False):
    """The MSAdapter rows from the Python 3.9 rootfs; (None, why) when it cannot or need not run here."""
    sys.path.insert(0, str(REPO))
    try:
        from tests.support import msadapter_env as mae
    except ImportError as exc:
        return None, f"tests/support/msadapter_env.py unavailable: {exc}"
    reason = mae.unavailable_reason()
    if reason:
        return None, reason
    if not build and not mae.is_built():
        return None, f"no MSAdapter rootfs at {mae.rootfs_path()}: --msadapter builds it, about 3 GB from the network"
    done = mae.run_py39([str(Path(__file__).resolve()), "--worker", "msadapter", "--steps", str(steps)],
                        cwd=REPO, env={"PYTHONPATH": mae.repo_pythonpath(["shared", "tools/dump"])}, timeout=1800)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return None, "run failed: " + ((done.stderr or "").strip().splitlines() or ["no output"])[-1]
    return json.loads(lines[-1]), None


def report(title: str, rows, why=None) -> None:
    if rows is None:
        print(f"{title}: not measured ({why})")
        return
    print(f"{title}; no-dump step {rows['not dumped']['base_ms']:.2f} ms (median)")
    print(f"{'mode':20s} {'ratio':>7s} {'entries/step':>13s}")
    for label, row in rows.items():
        print(f"{label:20s} {row['ratio']:6.2f}x {row['entries_per_step']:13.0f}")


def main_rows(steps: int, msadapter: Optional[bool] = None) -> None:
    """Print the MindSpore and MSAdapter tables (called by bench/dump_overhead.py too). ``msadapter``: None
    measures MSAdapter when its rootfs is built, True builds it first when absent, False skips it."""
    try:
        import mindspore
    except ImportError:
        print("MindSpore: not measured (mindspore is not installed)")
    else:
        report(f"MindSpore {mindspore.__version__} PyNative CPU, 2-block MLP", run_modes("mindspore", steps))
    if msadapter is not False:
        rows, why = run_msadapter(steps, build=bool(msadapter))
        report("MSAdapter 0.1.0 on MindSpore 2.0.0 (Python 3.9 rootfs), same MLP", rows, why)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="measured steps per mode (more: less noise)")
    add_msadapter_options(parser)
    parser.add_argument("--worker", choices=["mindspore", "msadapter"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    from dump_overhead import SOURCES  # (beside this file: its directory is first on the path)

    sys.path[:0] = SOURCES
    if args.worker:
        print(json.dumps(run_modes(args.worker, args.steps)))
        return 0
    main_rows(args.steps, args.msadapter)
    return 0


def add_msadapter_options(parser: argparse.ArgumentParser) -> None:
    """--msadapter / --no-msadapter (default: the MSAdapter rows only when the rootfs is already built)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--msadapter", action="store_true", default=None,
                       help="measure MSAdapter, building its Python 3.9 rootfs first if absent (about 3 GB)")
    group.add_argument("--no-msadapter", dest="msadapter", action="store_false",
                       help="skip the MSAdapter rows")


if __name__ == "__main__":
    sys.exit(main())
