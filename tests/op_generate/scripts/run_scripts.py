"""Run generated scripts in this one process (frameworks imported once) and print one JSON line per script:
its exit status and the rows of the two CSVs it wrote. Usage: run_scripts.py OUT_JSON SCRIPT..."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import runpy
import sys
from pathlib import Path


def run(script: Path, out_dir: Path) -> dict:
    before = set(out_dir.glob("*.csv")) if out_dir.is_dir() else set()
    printed = io.StringIO()
    code = 0
    argv, sys.argv = sys.argv, [str(script)]  # as `python SCRIPT` runs it: the script reads its own arguments
    with contextlib.redirect_stdout(printed):
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exc:
            code = exc.code
        finally:
            sys.argv = argv
    written = sorted(set(out_dir.glob("*.csv")) - before)
    tables = {}
    for path in written:
        with open(path, newline="", encoding="utf-8") as handle:
            tables["details" if "_details_" in path.name else "result"] = list(csv.DictReader(handle))
    return {"script": script.name, "code": code, "printed": printed.getvalue(), **tables}


if __name__ == "__main__":
    results = [run(Path(p), Path("op_result_output")) for p in sys.argv[2:]]
    Path(sys.argv[1]).write_text(json.dumps(results))
