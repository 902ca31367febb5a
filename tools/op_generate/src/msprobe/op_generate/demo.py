"""``msprobe demo`` part ``op_generate``: the first overflowing API of the overflow part's dump, reproduced alone."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path
from typing import Any

from msprobe.schema import MsprobeError

from .generate import generate
from .overflow import config_from_overflow


def run(ctx: Any) -> str:
    """Generate the script for the overflow part's first overflowing API, run it, and say what it found."""
    dump = ctx.results.get("overflow")
    if not dump:
        ctx.skip("the overflow part found no dump to reproduce from")
    base = Path(ctx.out_dir) / "op_generate"
    try:
        config = config_from_overflow(Path(dump))
    except MsprobeError as exc:
        ctx.skip(str(exc))
    script = generate(config, base, force=True)
    ctx.say(f"first overflowing API {config.api_name}: wrote {script}")
    # its own process, as a user runs it: the script writes ./op_result_output where it runs
    done = subprocess.run([sys.executable, str(script)], cwd=base, capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 1):
        raise MsprobeError(f"demo: {script} failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    for path in sorted((base / "op_result_output").glob("accuracy_checking_details_*.csv"))[-1:]:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                ctx.say(f"{row['API Name']}: {row['Status']} ({row['Tested Dtype']} under test, {row['Bench Dtype']} "
                        f"bench, max abs err {row['MaxAbsErr']}, further from the float64 golden: "
                        f"{row['Further From Golden']})")
        ctx.say(f"report: {path}")
    return str(script)


run.order = 35
