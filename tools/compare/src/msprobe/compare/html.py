"""``--html``: one self-contained page (inline SVG drawn by inline script; no server, no network)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from msprobe.schema import MsprobeError

from .config import CompareConfig
from .output import write_new

TEMPLATE = Path(__file__).with_name("page.html")


def write_html(path: Path, summary: Dict[str, Any], views: List[Dict[str, Any]], config: CompareConfig) -> Path:
    found = summary.get("first_divergence")
    verdict = ("No divergence: every compared output agrees within tolerance." if found is None else
               f"First divergence: {found['entry']} on {found['rank']} ({found['kind']}).")
    data = {"target": summary["target"], "golden": summary["golden"], "verdict": verdict,
            "tolerance": config.tolerances.get("float32", 1e-5), "ranks": views}
    text = TEMPLATE.read_text(encoding="utf-8").replace("__DATA__", script_json(data))
    path = Path(path)
    if path.exists() and path.is_dir():
        raise MsprobeError(f"{path}: --html must name a file, found a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot create its directory ({exc.strerror})") from None
    return write_new(path.parent, path.name, lambda handle: handle.write(text), encoding="utf-8")


def script_json(data: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` as ``\\u`` escapes, so that no name can end the
    element (``</script>``) or switch the parser into its escaped states (``<!--<script>``), and U+2028/9."""
    text = json.dumps(data, allow_nan=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text
