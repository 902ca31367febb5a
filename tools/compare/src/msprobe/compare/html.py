"""``--html``: one self-contained page (inline SVG drawn by inline script; no server, no network)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from msprobe.schema import MsprobeError

from .config import CompareConfig
from .output import open_new

TEMPLATE = Path(__file__).with_name("page.html")


def write_html(path: Path, summary: Dict[str, Any], views: List[Dict[str, Any]], config: CompareConfig) -> Path:
    found = summary.get("first_divergence")
    verdict = ("All compared outputs agree within tolerance." if found is None else
               f"First divergence: {found['entry']} on {found['rank']} ({found['kind']}).")
    data = {"target": summary["target"], "golden": summary["golden"], "verdict": verdict,
            "tolerance": config.tolerances.get("float32", 1e-5), "ranks": views}
    # "</" inside the JSON would end the script element early
    text = TEMPLATE.read_text(encoding="utf-8").replace(
        "__DATA__", json.dumps(data, allow_nan=False).replace("</", "<\\/"))
    path = Path(path)
    if path.exists() and path.is_dir():
        raise MsprobeError(f"{path}: --html must name a file, found a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot create its directory ({exc.strerror})") from None
    written, handle = open_new(path.parent, path.name, "x", encoding="utf-8")
    with handle:
        handle.write(text)
    return written
