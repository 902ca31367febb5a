"""Where a dumped step's time goes: parts of the dump switched off on alternate steps, in one process.

    python bench/dump_breakdown.py [--level L1] [--summary-mode statistics] [--steps 25]

Same model and loop as ``dump_overhead.py`` (tiny transformer, CPU, 1 thread, start() before the
forward, stop() + step() after the optimizer). Every round takes one step of each variant in turn (no
dump, the full dump, the dump with one part switched off, the dump with all of them off), so all ratios
compare steps taken under the same machine load; the machine's drift between runs cancels out (the
no-dump steps train a second copy of the model, as there). A part
is switched off by replacing the engine's function for it (statistics: every tensor gets constant
statistics; no stacks, no journal record, no gradient observers and so no backward entries): files written
that way are wrong on purpose, so this is a tool for engineers, not an option of the dump.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence

PARTS = ("statistics", "stacks", "journal", "gates")


def _switches(encoder) -> Dict[str, Callable[[bool], None]]:
    """part -> switch(off): replaces (or restores) the function that does that part."""
    import msprobe.dump.engine as engine
    from msprobe.schema.rank_writer import RankWriter
    import msprobe.pytorch.gates as gates
    import msprobe.pytorch.stats as stats

    zeros = {"Max": 0.0, "Min": 0.0, "Mean": 0.0, "Norm": 0.0}
    original = {"reduce": stats.reduce, "capture": engine.stack.capture, "entry": RankWriter.entry,
                "observe": gates._observe}

    def statistics_(off: bool) -> None:
        stats.reduce = (lambda t, precision, md5: stats.Handle("host", (), 1, None, ready=zeros)) if off \
            else original["reduce"]

    def stacks(off: bool) -> None:
        engine.stack.capture = (lambda *args: []) if off else original["capture"]

    def journal(off: bool) -> None:
        RankWriter.entry = (lambda self, name, value: None) if off else original["entry"]

    def gates_(off: bool) -> None:  # the gradient observers: hooks on outputs and on the nodes into arguments
        gates._observe = (lambda *args: None) if off else original["observe"]

    return {"statistics": statistics_, "stacks": stacks, "journal": journal, "gates": gates_}


def measure(level: str, summary_mode: str, steps: int, work: Path) -> Dict[str, List[float]]:
    """Step times (s) of each variant, one per round: "no dump", "full", "no <part>", "all off"."""
    import torch

    torch.set_num_threads(1)
    from msprobe.pytorch import PrecisionDebugger, tiny_model

    config = work / "config.json"
    config.write_text(json.dumps({"task": "statistics", "dump_path": str(work / "dump"), "level": level,
                                  "statistics": {"summary_mode": summary_mode}}))
    trained = []  # [no-dump steps' copy, dumped steps' copy]: hooks kept between dumped steps never run undumped
    for _ in range(2):
        torch.manual_seed(0)
        model = tiny_model.TinyTransformer()
        trained.append((model, torch.optim.AdamW(model.parameters(), lr=1e-4)))
    tokens, targets = tiny_model.make_batch()
    debugger = PrecisionDebugger(config_path=str(config))
    switches = _switches(debugger.engine.encoder)
    variants: Dict[str, Sequence[str]] = {"full": (), **{f"no {part}": (part,) for part in PARTS}, "all off": PARTS}

    def step(off: Sequence[str], dumped: bool) -> float:
        for part, switch in switches.items():
            switch(part in off)
        model, optimizer = trained[dumped]
        start = time.perf_counter()
        if dumped:
            debugger.start(model=model)
        tiny_model.train_step(model, optimizer, tokens, targets)
        if dumped:
            debugger.stop()
            debugger.step()
        elapsed = time.perf_counter() - start
        if dumped:
            debugger.flush()  # the background work of this step, untimed, before the next one
        return elapsed

    times: Dict[str, List[float]] = {"no dump": [], **{name: [] for name in variants}}
    try:
        for round_ in range(steps + 2):
            for name in times:
                elapsed = step(variants.get(name, ()), name != "no dump")
                if round_ >= 2:  # two warm-up rounds
                    times[name].append(elapsed)
    finally:
        for switch in switches.values():
            switch(False)
    return times


def saving(full: List[float], variant: List[float]) -> str:
    """What switching the part off saves: the median of the per-round differences from the full dump (steps of
    one round ran under the same load), or "within noise" when that median is below the differences' spread
    (their median absolute deviation), as a cheaper part measured on a busy machine can come out negative."""
    differences = [f - v for f, v in zip(full, variant)]
    middle = statistics.median(differences)
    spread = statistics.median(abs(d - middle) for d in differences)
    if middle <= spread:
        return f"within noise (+-{spread * 1e3:.2f} ms)"
    return f"{middle * 1e3:6.2f} ms +-{spread * 1e3:.2f}"


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=["L0", "L1", "mix"], default="L1", help="dump level (default L1)")
    parser.add_argument("--summary-mode", choices=["statistics", "md5"], default="statistics",
                        help="statistics of each tensor, or its md5 as well (default statistics)")
    parser.add_argument("--steps", type=int, default=25,
                        help="measured rounds, one step of each variant per round (more: less noise)")
    args = parser.parse_args(argv or None)
    with tempfile.TemporaryDirectory() as work:
        times = measure(args.level, args.summary_mode, max(1, args.steps), Path(work))
    base = statistics.median(times["no dump"])
    print(f"tiny transformer, CPU, 1 thread, {args.level} {args.summary_mode}; no-dump step {base * 1e3:.2f} ms "
          "(median)")
    print(f"{'variant':16s} {'ratio':>7s}  saves (against full, per round)")
    for name, values in times.items():
        if name != "no dump":
            saves = "" if name == "full" else saving(times["full"], values)
            print(f"{name:16s} {statistics.median(values) / base:6.2f}x  {saves}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
